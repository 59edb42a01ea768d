"""Comparing a copy of the package (an install in site-packages, a build folder) with the work
tree, file by file.

A copy does not follow the work tree: a push, pop or pull changes the tree and not the copy,
and an edit made in the copy is in no patch and survives every checkout. Each file of the copy
is compared with the work tree's by content. One that differs is told apart as edited in place
(its hash is not the one the installer wrote into ``RECORD``), lacking a patch (it is the base
version of a file a patch changes, or a file a patch adds is missing), a patched file that
differs otherwise, or a file from another version of the tree.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..checkout import Checkout
from .state import read_stack

_SKIP_DIRS = ("__pycache__",)
_SKIP_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # "differs": what runs is not what the series says (exit 1); "note"
    message: str
    next: str  # the next step, as a command where there is one
    paths: tuple[str, ...] = ()


def pip_install(python: str, folder: str | None) -> str:
    return f"{shlex.quote(python)} -m pip install -e {shlex.quote(folder)}" if folder else ""


def compare_copy(
    ws: Checkout, copy: str, tree: str, package: str, dist: dict[str, Any] | None, pip: str
) -> list[Finding]:
    """Findings for the copy at ``copy`` of the work tree's ``tree`` (``package`` relative to
    the top); ``dist`` is the probe's distribution (its ``files``: [path, RECORD hash])."""
    reinstall = pip or "reinstall the package from this work tree"
    record = {str(p): str(h) for p, h in (dist or {}).get("files") or ()}
    owners = _owners(ws)
    pairs = [
        (rel, copied, os.path.join(tree, rel) if rel else tree) for rel, copied in _files(copy)
    ]
    with ThreadPoolExecutor(max_workers=8) as pool:  # reading is most of the time; it waits
        verdicts = list(pool.map(lambda p: _compare(p[1], p[2]), pairs))
    differing = sorted(p[0] for p, v in zip(pairs, verdicts, strict=True) if v == "differs")
    extra = sorted(
        p[0] for p, v in zip(pairs, verdicts, strict=True) if v == "absent" and p[0].endswith(".py")
    )
    lacking: dict[tuple[str, ...], list[str]] = {}
    inside = package + "/"
    for path, names in owners.items():
        rel = path[len(inside) :] if path.startswith(inside) else ""
        in_tree = rel and os.path.isfile(os.path.join(tree, rel))
        if in_tree and not os.path.exists(os.path.join(copy, rel)):
            lacking.setdefault(names, []).append(rel)
    repo = {rel: f"{package}/{rel}" if rel else package for rel in differing}
    patched = [repo[rel] for rel in differing if repo[rel] in owners]
    git = ws.git
    base = git.ls_tree_paths(read_stack(git).base, patched) if patched and ws.exists() else {}
    found: list[Finding] = []
    other = []
    for rel in differing:
        copied = os.path.join(copy, rel) if rel else copy
        try:
            with open(copied, "rb") as f:
                data = f.read()
        except OSError:  # a dangling link, a folder in place of a file
            other.append(rel)
            continue
        names = owners.get(repo[rel], ())
        recorded = record.get(os.path.realpath(copied))
        if recorded is not None and _record_hash(data) != recorded:
            where = f"the work tree's {repo[rel]} carries {', '.join(names)}" if names else None
            found.append(
                Finding(
                    "edited-in-place",
                    "differs",
                    f"{copied} was edited after it was installed (its hash is not the one in"
                    f" RECORD); {where or 'the edit is in no patch'}",
                    f"make the edit in {repo[rel]} and capture it ('patchstack new NAME --tag"
                    f" TAG {repo[rel]}'"
                    + (f" or 'patchstack refresh --patch {names[0]}'" if names else "")
                    + f"), then {reinstall}",
                    (copied,),
                )
            )
        elif names and repo[rel] in base and _blob_id(data, base[repo[rel]][1]):
            lacking.setdefault(names, []).append(rel)
        elif names:
            found.append(
                Finding(
                    "patched-file-differs",
                    "differs",
                    f"{copied} differs from {repo[rel]}, a file of {', '.join(names)}",
                    reinstall,
                    (copied,),
                )
            )
        else:
            other.append(rel)
    for names, rels in lacking.items():
        found.append(
            Finding(
                "lacks-patch",
                "differs",
                f"the copy at {copy} lacks {', '.join(names)} ({_few(rels)})",
                reinstall,
                tuple(rels),
            )
        )
    if other:
        found.append(
            Finding(
                "other-version",
                "differs",
                f"{len(other)} file(s) of the copy at {copy} differ from the work tree, in no"
                f" patch (another version was installed): {_few(other)}",
                reinstall,
                tuple(other),
            )
        )
    # A module the installer wrote (RECORD has it, unchanged) may be packaged from another
    # folder or generated; one it did not write was added to the copy by hand.
    added = [rel for rel in extra if not _as_installed(os.path.join(copy, rel), record)]
    packaged = [rel for rel in extra if rel not in added]
    if added:
        found.append(
            Finding(
                "added-modules",
                "differs",
                f"{len(added)} module(s) were added to the copy at {copy} and are in no patch"
                f" (not in the work tree, not as installed): {_few(added)}",
                f"move them into the work tree and capture them ('patchstack new'), then"
                f" {reinstall}",
                tuple(added),
            )
        )
    if packaged:
        found.append(
            Finding(
                "installed-elsewhere",
                "note",
                f"{len(packaged)} installed module(s) have no file at the same place in the"
                f" work tree (packaged from another folder, generated at build, or from another"
                f" version): {_few(packaged)}",
                "nothing, if the package maps them; else " + reinstall,
                tuple(packaged),
            )
        )
    if not [f for f in found if f.severity == "differs"]:
        found.append(
            Finding(
                "copy",
                "note",
                f"the copy at {copy} matches the work tree now, but does not follow it (a push,"
                " pop or pull will not reach it)",
                pip or "install the package from this work tree in editable mode",
            )
        )
    return found


def _owners(ws: Checkout) -> dict[str, tuple[str, ...]]:
    """Path -> the series' patches that change it (none without a series)."""
    if not ws.exists():
        return {}
    owners: dict[str, list[str]] = {}
    for entry in ws.load_series().entries:
        for path in ws.read_patch(entry)[1].paths:
            owners.setdefault(path, []).append(entry.name)
    return {path: tuple(names) for path, names in owners.items()}


def _files(copy: str) -> Iterator[tuple[str, str]]:
    """(path relative to ``copy``, full path) of its files, compiled caches left out."""
    if not os.path.isdir(copy):
        yield "", copy
        return
    folders = [("", copy)]
    while folders:
        rel, folder = folders.pop()
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in _SKIP_DIRS:
                        folders.append((f"{rel}{e.name}/", e.path))
                elif not e.name.endswith(_SKIP_SUFFIXES):
                    yield f"{rel}{e.name}", e.path


def _compare(copied: str, here: str) -> str:
    """ "same", "differs", or "absent" (nothing at ``here``); links compare by target."""
    try:
        theirs = os.lstat(here)
    except OSError:
        return "absent"
    try:
        ours = os.lstat(copied)
        if stat.S_ISLNK(ours.st_mode) or stat.S_ISLNK(theirs.st_mode):
            same = stat.S_ISLNK(ours.st_mode) and stat.S_ISLNK(theirs.st_mode)
            return "same" if same and os.readlink(copied) == os.readlink(here) else "differs"
        if ours.st_size != theirs.st_size:
            return "differs"
        with open(copied, "rb") as a, open(here, "rb") as b:
            return "same" if a.read() == b.read() else "differs"
    except OSError:
        return "differs"


def _as_installed(path: str, record: dict[str, str]) -> bool:
    """Whether the installer wrote this file with these bytes (RECORD says so)."""
    recorded = record.get(os.path.realpath(path))
    if recorded is None:
        return False
    try:
        with open(path, "rb") as f:
            return _record_hash(f.read()) == recorded
    except OSError:
        return False


def _record_hash(data: bytes) -> str:
    """A file's hash as RECORD writes it: urlsafe base64 of its sha256, no padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _blob_id(data: bytes, oid: str) -> bool:
    """Whether ``data`` is the blob ``oid`` (SHA-1 or SHA-256, by the id's length)."""
    h = hashlib.sha256() if len(oid) == 64 else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest() == oid


def _few(paths: list[str], n: int = 5) -> str:
    more = f" and {len(paths) - n} more" if len(paths) > n else ""
    return ", ".join(paths[:n]) + more
