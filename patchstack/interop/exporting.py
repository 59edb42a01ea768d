"""Exporting: ``export quilt`` writes the series file and the patch files after proving that
each applies exactly on the base plus the patches before it; ``export mbox`` one mail per patch
from the canonical chain, with the ``Patchstack-*`` trailers."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

from ..checkout import Checkout as Workspace
from ..commands.state import make_engine, read_stack
from ..errors import PatchstackError, RefusedError
from ..files import write_atomic
from ..model.ids import Oid
from ..model.series import Series


@dataclass(frozen=True)
class ExportResult:
    path: str
    names: tuple[str, ...]


def _chain(ws: Workspace) -> tuple[Series, list[tuple[str, Oid]], Oid]:
    """The series and its canonical chain as commits [(name, commit)], from the base."""
    git = ws.git
    series = ws.load_series()
    if not series.entries:
        raise PatchstackError("the series has no patches", "nothing to export")
    stack = read_stack(git)
    engine = make_engine(ws, series, stack)
    try:
        base = engine.canonical_base
        parent = base
        chain = []
        ws.progress.step("applying each patch where it was made", len(series.entries))
        for k, entry in enumerate(series.entries, start=1):
            parent = engine.commit(parent, engine.canonical(k), entry.name)
            chain.append((entry.name, parent))
            ws.progress(k, len(series.entries))
    finally:
        engine.close()
    return series, chain, base


def _refuse_existing(ws: Workspace, path: str, what: str) -> None:
    if os.path.isdir(path) and os.listdir(path) or os.path.isfile(path):
        state = "" if os.path.isfile(path) else " and is not empty"
        raise RefusedError(
            f"{ws.display(path)} already exists{state}",
            f"remove it or choose another {what}; nothing was changed",
        )


def export_quilt(ws: Workspace, directory: str) -> ExportResult:
    """The folder is made beside its place and renamed into it once complete, so a failure
    (a full disk) leaves nothing half written."""
    full = os.path.abspath(os.path.join(ws.cwd, directory))
    _refuse_existing(ws, full, "folder")
    series, _chain_commits, _base = _chain(ws)  # proves every patch applies exactly
    parent = os.path.dirname(full)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="." + os.path.basename(full) + ".", dir=parent)
    try:
        for entry in series.entries:
            target = os.path.join(work, entry.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(ws.patch_path(entry.name), target)
        data = series.format().encode("utf-8", "surrogateescape")
        write_atomic(os.path.join(work, "series"), data)
        os.chmod(work, 0o755)
        if os.path.isdir(full):
            os.rmdir(full)  # empty (refused otherwise)
        os.rename(work, full)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return ExportResult(full, series.names)


def export_mbox(ws: Workspace, path: str) -> tuple[ExportResult, bytes]:
    """The mbox bytes; written to ``path`` unless it is '-'."""
    full = path if path == "-" else os.path.abspath(os.path.join(ws.cwd, path))
    if path != "-":
        _refuse_existing(ws, full, "file")
    series, chain, base = _chain(ws)
    data = b"".join(ws.git.format_patches(base, chain[-1][1]))
    if path != "-":
        write_atomic(full, data)
    return ExportResult(full, series.names), data
