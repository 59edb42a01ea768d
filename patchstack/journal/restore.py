"""Restoring a snapshot: the work tree, the index and the series directory made exactly those of
a recorded state (the branch is moved by the transaction that runs the restore)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from .. import lock
from ..checkout import Checkout
from ..errors import RefusedError
from ..files import is_temp_name, write_atomic
from ..git import Git, RawDiff
from .snapshot import Snapshot, inside


def check_restorable(ws: Checkout, current: Snapshot, target: Snapshot) -> list[RawDiff]:
    """The work-tree changes a restore makes; refuses (changing nothing) when an ignored file
    is where the restore must write."""
    git = ws.git
    skip = set(current.left_out) | set(target.left_out)
    diffs = [
        d
        for d in (git.raw_diffs([(current.worktree, target.worktree)]) or [[]])[0]
        if not inside(d[4], ws.in_tree) and d[4] not in skip and "160000" not in d[:2]
    ]
    removed = {d[4] for d in diffs if d[1] == "000000"}
    for om, _nm, _oo, _no, path in diffs:
        if om == "000000":
            blocker = _in_the_way(git.top, path, removed)
            if blocker is not None:
                raise RefusedError(
                    f"'{blocker}' is in the way (an ignored file the restore would overwrite)",
                    "move it away and run the command again; nothing was changed",
                )
    index_lock = os.path.join(git.git_dir, "index.lock")
    if os.path.exists(index_lock):
        raise RefusedError(
            f"git's index is locked ({index_lock})",
            "if no git command is running, remove that file and try again; nothing was changed",
        )
    return diffs


def _in_the_way(top: str, path: str, removed: set[str]) -> str | None:
    """What on disk keeps the restore from writing ``path``: a file or link there, or a file
    in a folder there that the restore does not remove itself (a patch that turned a file into
    a folder leaves a folder the restore takes away); None when nothing does."""
    full = os.path.join(top, path)
    if not os.path.lexists(full):
        return None
    if os.path.islink(full) or not os.path.isdir(full):
        return path
    for root, _dirs, files in os.walk(full):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), top).replace(os.sep, "/")
            if rel not in removed:
                return rel
    return None


def restore_state(ws: Checkout, current: Snapshot, target: Snapshot) -> tuple[str, ...]:
    """Make the work tree, index and series directory those of ``target``; the paths written."""
    git = ws.git
    diffs = check_restorable(ws, current, target)
    _write_files(git, git.top, diffs)
    lock.point("restore-worktree")
    git.reset_index(target.index or git.tree_of(target.head))
    lock.point("restore-index")
    series_files = _restore_series(ws, current, target)
    return tuple(d[4] for d in diffs) + series_files


def _write_files(git: Git, top: str, diffs: Sequence[RawDiff]) -> None:
    # Removals first (a file may give way to a folder), deepest first, then writes.
    for om, nm, _oo, _no, path in sorted(diffs, key=lambda d: d[4], reverse=True):
        full = os.path.join(top, path)
        if nm == "000000" or (om != "000000" and om[:2] != nm[:2]):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            _prune_dirs(top, os.path.dirname(path))
    for _om, nm, _oo, no, path in diffs:
        if nm == "000000":
            continue
        full = os.path.join(top, path)
        _make_parents(top, path)
        data = git.read_blob(no)
        if nm == "120000":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            os.symlink(os.fsdecode(data), full)
            continue
        if os.path.islink(full):
            os.unlink(full)
        write_atomic(full, data, sync=False)
        mode = os.stat(full).st_mode & 0o777
        os.chmod(full, (mode | 0o111) if nm == "100755" else (mode & ~0o111))


def _make_parents(top: str, path: str) -> None:
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = os.path.join(top, *parts[:i])
        if os.path.islink(d) or (os.path.lexists(d) and not os.path.isdir(d)):
            os.unlink(d)  # a file or link where the snapshot has a folder (it is in the log)
        if not os.path.isdir(d):
            os.mkdir(d)


def _prune_dirs(top: str, folder: str) -> None:
    while folder:
        try:
            os.rmdir(os.path.join(top, folder))
        except OSError:
            return
        folder = os.path.dirname(folder)


def _restore_series(ws: Checkout, current: Snapshot, target: Snapshot) -> tuple[str, ...]:
    git = ws.git
    empty = git.fmt.empty_tree
    have = git.ls_tree(current.series) if current.series != empty else {}
    want = git.ls_tree(target.series) if target.series != empty else {}
    touched = []
    if want:
        os.makedirs(ws.series_dir, exist_ok=True)
    for name, (mode, oid) in want.items():
        if have.get(name) != (mode, oid):
            path = ws.patch_path(name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, git.read_blob(oid), mode=0o755 if mode == "100755" else 0o644)
            touched.append(ws.display(path))
    for name in have:
        if name not in want:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ws.patch_path(name))
            _prune_dirs(ws.series_dir, os.path.dirname(name))
            touched.append(ws.display(ws.patch_path(name)))
    if os.path.isdir(ws.series_dir):  # a write_atomic cut short by a kill leaves its temp file
        for root, _dirs, files in os.walk(ws.series_dir):
            for name in files:
                if is_temp_name(name):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(root, name))
    if not target.series_exists:
        with contextlib.suppress(OSError):
            os.rmdir(ws.series_dir)
    return tuple(touched)


def restore_worktree(ws: Checkout, current: Snapshot, target: Snapshot) -> tuple[str, ...]:
    """`restore_state` without the series directory: an experiment tree made again gets its
    own files and index back; the series it shares is not its to restore."""
    diffs = check_restorable(ws, current, target)
    _write_files(ws.git, ws.git.top, diffs)
    ws.git.reset_index(target.index or ws.git.tree_of(target.head))
    return tuple(d[4] for d in diffs)
