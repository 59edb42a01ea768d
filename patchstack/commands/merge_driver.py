"""``merge-driver``: git's merge driver for the series file and the patch files, so that two
maintainers' changes to one series merge (``git pull`` of the series), and ``--install``, which
sets it up in the repository that holds the series folder.

git runs a merge driver named in ``.gitattributes`` only when the repository's own
configuration defines it (``merge.patchstack.driver``): the series folder arrives through
teammates' pull requests (a trust boundary), so a ``.gitattributes`` in it runs nothing until
the user ran ``--install``, which writes both. git calls the driver as ``%O %A %B %L %P``
(base, ours, theirs, marker size, path); it writes the merge into ``%A`` and exits 0 when it
is clean, 1 with git's conflict markers in ``%A`` (which every command refuses as an
unresolved merge, naming the file and line) when it is not.

The series file merges by `model.seriesmerge`, a patch file by `model.patchmerge`; a series
whose merge conflicts is merged as text (``git merge-file``) for its markers, or left whole as
one conflict region where the text merges but the series does not.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..files import read_bytes, write_atomic
from ..git import find_repo
from ..git.textmerge import merge_text
from ..model.patchmerge import merge_patch, whole_conflict
from ..model.seriesmerge import merge_series
from .moved_patch import merge_moved

DRIVER = "patchstack"
KEY = f"merge.{DRIVER}.driver"
ATTRIBUTES = ("series", "*.patch")


@dataclass(frozen=True)
class DriverResult:
    path: str
    kind: str  # "series" or "patch"
    conflicts: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.conflicts


def run_driver(base: str, ours: str, theirs: str, size: int, path: str) -> DriverResult:
    """Merge the three files git gave (``ours`` receives the result)."""
    data = []
    for name in (base, ours, theirs):
        found = read_bytes(name)
        if found is None:
            raise PatchstackError(f"merge-driver: cannot read {name!r}", "git gives three files")
        data.append(found)
    o, a, b = data
    labels = ("ours", "base", "theirs")

    def text_merge(x: bytes, y: bytes, z: bytes) -> tuple[bytes, int]:
        return merge_text(x, y, z, labels, size)

    conflicts: tuple[str, ...] = ()
    if os.path.basename(path) == "series":
        kind = "series"
        merged = merge_series(_text(o), _text(a), _text(b), path)
        if merged.text is not None:
            result = merged.text.encode("utf-8", "surrogateescape")
        else:
            result, regions = text_merge(a, o, b)
            if not regions:
                result = whole_conflict(a, o, b, size)
            conflicts = merged.conflicts
    else:
        kind = "patch"
        patch = None
        if len({o, a, b}) == 3:  # changed on both sides: re-made on the place one side moved it to
            patch = merge_moved(o, a, b, text_merge, path, os.getcwd())
        if patch is None:
            patch = merge_patch(o, a, b, text_merge, path)
        result, conflicts = patch.data, patch.conflicts
    write_atomic(ours, result, sync=False)
    return DriverResult(path, kind, tuple(conflicts))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def driver_command() -> str:
    """The command line git runs: this interpreter's patchstack, whatever PATH says then."""
    return shlex.join([sys.executable, "-m", "patchstack", "merge-driver"]) + " %O %A %B %L %P"


@dataclass(frozen=True)
class InstallResult:
    attributes: str  # the .gitattributes file written
    config: str  # the configuration file
    changed: tuple[str, ...]  # what was written ('' when all was in place)


def install(ws: Checkout) -> InstallResult:
    """Write ``.gitattributes`` in the series folder and ``merge.patchstack.*`` into the
    configuration of the repository holding it; nothing when both are in place; refused,
    nothing written, when either names another driver."""
    folder = ws.series_dir
    if not os.path.isdir(folder):
        raise PatchstackError(
            f"no series folder at {ws.display(folder)}", "run 'patchstack init' first"
        )
    git = find_repo(folder)
    try:
        attributes = os.path.join(folder, ".gitattributes")
        text = _text(read_bytes(attributes) or b"")
        wanted = [p for p in ATTRIBUTES if not _names_driver(text, p, attributes)]
        current = git.local_config(KEY)
        if current is not None and "merge-driver" not in current:
            raise RefusedError(
                f"{KEY} is already set to '{current}' in {os.path.join(git.common_dir, 'config')}",
                f"remove it ('git config --unset {KEY}') to use patchstack's; nothing was changed",
            )
        changed = []
        if wanted:
            lines = text + ("" if not text or text.endswith("\n") else "\n")
            lines += "".join(f"{p} merge={DRIVER}\n" for p in wanted)
            write_atomic(attributes, lines.encode("utf-8", "surrogateescape"))
            changed.append(ws.display(attributes))
        if current != driver_command():
            git.set_local_config(f"merge.{DRIVER}.name", "patchstack series and patch files")
            git.set_local_config(KEY, driver_command())
            changed.append(f"{KEY} in {os.path.join(git.common_dir, 'config')}")
        return InstallResult(
            ws.display(attributes), os.path.join(git.common_dir, "config"), tuple(changed)
        )
    finally:
        git.close()


def _names_driver(text: str, pattern: str, where: str) -> bool:
    """Whether ``.gitattributes`` gives ``pattern`` our driver already; refused when it gives
    it another merge attribute."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0] != pattern:
            continue
        merges = [w for w in words[1:] if w.lstrip("-!").startswith("merge")]
        if f"merge={DRIVER}" in merges:
            return True
        if merges:
            raise RefusedError(
                f"{where}:{lineno}: '{pattern}' already has '{merges[0]}'",
                f"remove it to use patchstack's driver ('{pattern} merge={DRIVER}'); nothing"
                " was changed",
            )
    return False
