"""A scratch object store for the objects a replay throws away.

A 1,000-patch refresh makes thousands of objects it never publishes: the trees and blobs every
``merge-tree`` writes, the throwaway commits it merges, the trees a conflict is relabelled in.
Written into the repository they are thousands of loose files, each created on disk (0.7 ms
each on the benchmark's machine, 3,000 of them 2.2 s, against 0.18 s in memory), left behind
for ``git gc``. While a replay runs they go instead to a folder in memory (``/dev/shm``, when
it exists with room to spare), which every git process of the command reads as an alternate
object directory, and which the processes that write them (`merge-tree`, the replay's
``fast-import``, `Objects.write_loose`) take as their object directory.

Publishing (`transaction.publish`) keeps them first: they become one pack of the repository
(one ``pack-objects`` of the loose ones and of the stream's packs, one per checkpoint, written
in one go), before any ref can point at them. A command that publishes nothing (``check``, a
refused or failed refresh) drops the folder: a dry run writes no object into the repository. A
folder left by a killed process holds nothing anything points at; the next replay removes it.
``PATCHSTACK_NO_SCRATCH=1`` writes straight into the repository, as when no such folder exists.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
import time

from ..errors import GitFailure

PARENT = "/dev/shm"
PREFIX = "patchstack-objects-"
MIN_FREE = 256 << 20  # bytes free in PARENT to use it (a 1,000-patch replay uses about 25 MB)
STALE_AFTER = 600  # seconds
FULL_BELOW = 1 << 20  # bytes free in PARENT under which a failed write is said to be its


def room() -> bool:
    """Whether a scratch store can be made here (and is not turned off)."""
    if os.environ.get("PATCHSTACK_NO_SCRATCH") is not None:
        return False
    try:
        stat = os.statvfs(PARENT)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize >= MIN_FREE and os.access(PARENT, os.W_OK)


def nearly_full() -> bool:
    """Whether the scratch stores' file system has (almost) no room left: a write there that
    failed for want of space was the store's, not the repository's."""
    try:
        stat = os.statvfs(PARENT)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < FULL_BELOW


def make() -> str | None:
    """A new scratch object directory, or None where there is no room in memory for one."""
    if not room():
        return None
    try:
        _remove_stale()
        path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=PARENT)
        os.mkdir(os.path.join(path, "pack"))
    except OSError:
        return None
    return path


def _remove_stale() -> None:
    """Remove the scratch folders of processes that are gone (killed before they dropped them)
    and that nothing wrote to for a while (a process of another PID namespace sharing the
    folder would look gone)."""
    now = time.time()
    for name in os.listdir(PARENT):
        pid = name[len(PREFIX) :].split("-")[0] if name.startswith(PREFIX) else ""
        if not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(PARENT, name)
        with contextlib.suppress(OSError):
            if now - os.stat(path).st_mtime > STALE_AFTER:
                shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's
        return True
    return True


def alternate(path: str) -> str:
    """``path`` as one entry of ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` or one line of an
    ``alternates`` file (C-quoted where it holds the separator or a newline or starts with a
    quote, as git reads it)."""
    if os.pathsep in path or "\n" in path or path.startswith('"'):
        quoted = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return '"' + quoted + '"'
    return path


def loose_objects(path: str) -> list[str]:
    """The ids of the loose objects in a scratch directory."""
    ids: list[str] = []
    for folder in os.scandir(path):
        if len(folder.name) == 2 and folder.is_dir():
            ids.extend(folder.name + f.name for f in os.scandir(folder.path) if "_" not in f.name)
    return ids


def packed_objects(path: str, hash_size: int) -> list[str]:
    """The ids of the objects in the packs of a scratch directory (fast-import's: one pack per
    checkpoint), read from each pack's index (version 2: a header, 256 fan-out counts, then
    the sorted ids)."""
    ids: list[str] = []
    folder = os.path.join(path, "pack")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".idx"):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        if data[:8] != b"\377tOc\0\0\0\2":
            raise GitFailure(f"unexpected pack index in the scratch store: {name}")
        start = 8 + 256 * 4
        (count,) = struct.unpack(">I", data[start - 4 : start])
        ids.extend(
            data[at : at + hash_size].hex()
            for at in range(start, start + count * hash_size, hash_size)
        )
    return ids
