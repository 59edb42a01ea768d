"""Restoring a snapshot: the work tree, the index and the series directory made exactly those of
a recorded state (the branch is moved by the transaction that runs the restore)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from .. import lock
from ..checkout import Checkout
from ..errors import PatchstackError, environment_fault
from ..files import is_temp_name, read_bytes, write_atomic
from ..git import Git, RawDiff, index_locked
from ..model.ids import Oid
from .blobs import hash_paths, inside
from .moves import check_writes, ignored_in_the_way
from .seriestree import SeriesFiles, series_files_of
from .snapshot import Snapshot


def check_restorable(ws: Checkout, current: Snapshot, target: Snapshot) -> list[RawDiff]:
    """The work-tree changes a restore makes; refuses (changing nothing) when an ignored file
    is where the restore must write, or a series file it writes is a link."""
    return _restorable(ws, current, target)[0]


def _restorable(
    ws: Checkout, current: Snapshot, target: Snapshot
) -> tuple[list[RawDiff], SeriesFiles, SeriesFiles]:
    git = ws.git
    skip = set(current.left_out) | set(target.left_out)
    diffs = [
        d
        for d in (git.raw_diffs([(current.worktree, target.worktree)]) or [[]])[0]
        if not inside(d[4], ws.in_tree) and d[4] not in skip and "160000" not in d[:2]
    ]
    # What is on disk and not in the current snapshot is ignored (or too large to snapshot):
    # a file where the restore writes one, or where it needs a folder.
    removed = {d[4] for d in diffs if d[1] == "000000"}
    in_the_way: list[str] = []
    for om, _nm, _oo, _no, path in diffs:
        if om != "000000":
            continue
        blocker = _in_the_way(git.top, path, removed)
        if blocker is not None:
            in_the_way.append(blocker)
        folder = path
        while "/" in folder:
            folder = folder.rpartition("/")[0]
            full = os.path.join(git.top, folder)
            if folder not in removed and (
                os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full))
            ):
                in_the_way.append(folder)
    if in_the_way:
        raise ignored_in_the_way(sorted(set(in_the_way)), "the restore")
    have, want = series_files_of(git, current), series_files_of(git, target)
    check_writes(ws, [ws.patch_path(n) for n in {*have, *want} if have.get(n) != want.get(n)])
    if not git.index_file:  # (a publish holds the index lock itself)
        index_lock = os.path.join(git.git_dir, "index.lock")
        if os.path.exists(index_lock):
            raise index_locked(index_lock)
    return diffs, have, want


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


def restore_state(
    ws: Checkout,
    current: Snapshot,
    target: Snapshot,
    touched: list[str] | None = None,
    series_touched: list[str] | None = None,
) -> tuple[str, ...]:
    """Make the work tree, index and series directory those of ``target``; the paths written
    (noted in ``touched`` and ``series_touched`` before each is written, for a rollback)."""
    git = ws.git
    diffs, have, want = _restorable(ws, current, target)
    if touched is not None:
        touched.extend(d[4] for d in diffs)
    _write_files(git, git.top, diffs)
    lock.point("restore-worktree")
    git.reset_index(target.index or git.tree_of(target.head))
    lock.point("restore-index")
    series_files = _restore_series(ws, have, want, target, series_touched)
    return tuple(d[4] for d in diffs) + series_files


def put_back(
    ws: Checkout,
    before: Snapshot,
    wrote: Sequence[str],
    tree: Oid,
    series_wrote: Sequence[str],
) -> None:
    """After a failed step: the work-tree paths a publish wrote (``wrote``, each as ``tree``
    has it) and the series files it wrote, as ``before`` had them. A path that holds neither
    what the publish wrote nor what was there before was written by someone else meanwhile,
    and is left alone."""
    git = ws.git
    paths = sorted(set(wrote))
    if paths:
        was = git.ls_tree_paths(before.worktree, paths)
        wanted = git.ls_tree_paths(tree, paths)
        now = hash_paths(git, git.top, paths)
        null = git.fmt.null
        diffs: list[RawDiff] = []
        for path in paths:
            old, new, there = was.get(path), wanted.get(path), now.get(path)
            if there == old or there != new:
                continue
            if "160000" in (old or ("",))[0] + (new or ("",))[0]:
                continue  # a submodule: never written
            diffs.append(
                (
                    there[0] if there else "000000",
                    old[0] if old else "000000",
                    there[1] if there else null,
                    old[1] if old else null,
                    path,
                )
            )
        _write_files(git, git.top, diffs)
    if series_wrote:
        empty = git.fmt.empty_tree
        had = git.ls_tree(before.series) if before.series != empty else {}
        for name in dict.fromkeys(series_wrote):
            path = ws.patch_path(name)
            data_now = read_bytes(path) if not os.path.isdir(path) else None
            if name in had:
                mode, oid = had[name]
                data = git.read_blob(oid)
                if data_now != data:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    write_atomic(path, data, mode=0o755 if mode == "100755" else 0o644)
            elif data_now is not None:
                os.unlink(path)


def not_rolled_back(exc: Exception, failed: str) -> PatchstackError:
    """The error of a step that failed when putting back what it wrote failed too: its cause,
    and 'undo' (the running entry stayed), never "nothing was changed"."""
    if isinstance(exc, PatchstackError):
        message = exc.message
    elif isinstance(exc, OSError):
        message = environment_fault(exc).message
    else:
        message = str(exc) or type(exc).__name__
    return PatchstackError(
        message,
        f"putting back what the command wrote failed too ({failed}): run 'patchstack undo',"
        " which restores the state before it exactly",
    )


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


def _restore_series(
    ws: Checkout,
    have: SeriesFiles,
    want: SeriesFiles,
    target: Snapshot,
    noted: list[str] | None = None,
) -> tuple[str, ...]:
    git = ws.git
    touched = []
    if want:
        os.makedirs(ws.series_dir, exist_ok=True)
    for name, (mode, oid) in want.items():
        if have.get(name) != (mode, oid):
            path = ws.patch_path(name)
            if noted is not None:
                noted.append(name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, git.read_blob(oid), mode=0o755 if mode == "100755" else 0o644)
            touched.append(ws.display(path))
    for name in have:
        if name not in want:
            if noted is not None:
                noted.append(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ws.patch_path(name))
            _prune_dirs(ws.series_dir, os.path.dirname(name))
            touched.append(ws.display(ws.patch_path(name)))
    # A write_atomic cut short by a kill leaves its temporary file next to the file.
    folders: dict[str, set[str]] = {}
    for name in {*want, *have, "series"}:
        folder, base = os.path.split(ws.patch_path(name))
        folders.setdefault(folder, set()).add(base)
    for folder, bases in folders.items():
        with contextlib.suppress(OSError):
            for entry in os.listdir(folder):
                if is_temp_name(entry) and entry[1:].rpartition(".")[0] in bases:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(folder, entry))
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
