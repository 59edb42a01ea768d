"""The series folder as a tree: the series file and the patch files it names, nothing else of
the folder (see `journal.snapshot`), blob ids kept by stat data so a long series is not
hashed again by every command."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..checkout import Checkout
from ..errors import RefusedError
from ..files import write_atomic
from ..git import Git
from ..model.ids import Oid
from ..model.naming import named_files, validate_name
from .blobs import hash_paths, max_untracked, mode_of

if TYPE_CHECKING:
    from .snapshot import Snapshot


def series_files(ws: Checkout, limit: int, also: Sequence[str] = ()) -> dict[str, os.stat_result]:
    """Relative path -> stat of the files of the series: the series file and the patch files it
    names (regular files; a file too large to snapshot is an error naming it and the folder),
    and ``also`` (what an interrupted command was writing). Nothing else under the series
    directory is the series: not a nested repository's ``.git``, not the other files of a
    folder that ``--dir`` named by mistake, not the recorded resolutions (written outside the
    journal, never named by the series file: undo leaves them)."""
    folder = ws.series_dir
    found: dict[str, os.stat_result] = {}
    names = list(also)
    try:
        st = os.lstat(ws.series_path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):  # (a link is no series file: load_series)
        _check_size(ws, ws.series_path, st, limit)
        found["series"] = st
        with open(ws.series_path, "rb") as f:
            names += named_files(f.read().decode("utf-8", "surrogateescape"))
    for name in dict.fromkeys(names):
        if name in found or validate_name(name, folders=True) is not None:
            continue
        full = os.path.join(folder, name)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(st.st_mode):
            _check_size(ws, full, st, limit)
            found[name] = st
    return found


def _check_size(ws: Checkout, path: str, st: os.stat_result, limit: int) -> None:
    if st.st_size > limit:
        raise RefusedError(
            f"{ws.display(path)} is {st.st_size >> 20} MiB, more than a snapshot of the series"
            f" folder {ws.display(ws.series_dir)} takes (patchstack.snapshotMaxSize,"
            f" {limit >> 20} MiB a file)",
            "if that is not the series folder, point --dir at the one that holds the series;"
            " else raise the limit (git config patchstack.snapshotMaxSize 1g); nothing was"
            " changed",
        )


SeriesFiles = dict[str, tuple[str, str]]  # relative path -> (mode, blob)


def series_files_of(git: Git, snap: Snapshot) -> SeriesFiles:
    """The files of a snapshot's series tree that are the series. A snapshot taken before it
    held the series only (`Snapshot.series_only`) holds the whole folder, a nested ``.git``
    say, that a restore must never write: of those, the series file and what it names."""
    if snap.series == git.fmt.empty_tree:
        return {}
    files = git.ls_tree(snap.series)
    if snap.series_only:
        return files
    if "series" not in files:
        return {}
    named = named_files(git.read_blob(files["series"][1]).decode("utf-8", "surrogateescape"))
    return {n: files[n] for n in ("series", *named) if n in files}


def as_series_only(git: Git, snap: Snapshot) -> Snapshot:
    """``snap`` as a snapshot taken now would record it (an older one, whose series tree holds
    the whole folder, compared with one taken now, must not differ by that alone)."""
    if snap.series_only:
        return snap
    tree = _tree_of_files(git, series_files_of(git, snap))
    return replace(snap, series=tree, series_only=True)


def _tree_of_files(git: Git, files: dict[str, tuple[str, str]]) -> Oid:
    """A tree (subtrees included) from relative path -> (mode, blob)."""
    children: dict[str, dict[str, tuple[str, str]]] = {}
    entries: list[tuple[str, str, str]] = []
    for path, (mode, oid) in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            children.setdefault(head, {})[rest] = (mode, oid)
        else:
            entries.append((mode, oid, path))
    for name, sub in children.items():
        entries.append(("040000", _tree_of_files(git, sub), name))
    return git.mktree(sorted(entries, key=lambda e: e[2] + ("/" if e[0] == "040000" else "")))


def series_tree(ws: Checkout, also: Sequence[str] = ()) -> tuple[Oid, bool]:
    """The series directory as a tree. Blob ids are cached by stat data (like git's index),
    so a long series is not re-hashed by every command; entries younger than two seconds are
    hashed again, and cached ids are checked to exist."""
    git = ws.git
    folder = ws.series_dir
    if not os.path.isdir(folder):
        return git.mktree([]), False  # written, not only known: git fsck checks entries
    cache_path = os.path.join(git.common_dir, "patchstack", "series-stat-cache")
    try:
        with open(cache_path, encoding="utf-8") as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    if cache.get("folder") != folder or cache.get("format") != git.fmt.name:
        cache = {"folder": folder, "format": git.fmt.name, "files": {}}
    now = time.time()
    found: dict[str, tuple[str, str]] = {}
    todo = []
    stats = {}
    for name, st in series_files(ws, max_untracked(git), also).items():
        key = [st.st_size, st.st_mtime_ns, st.st_ino, mode_of(st)]
        stats[name] = key
        hit = cache["files"].get(name)
        if hit and hit[0] == key and now - st.st_mtime > 2:
            found[name] = (str(key[3]), hit[1])
        else:
            todo.append(name)
    # Nothing changed since the tree was last made: that tree, if it is still there (a tree
    # the operation log points at keeps its blobs).
    known = cache.get("tree")
    if not todo and len(found) == len(cache["files"]) and known and git.has_objects([known])[known]:
        return Oid(known), True
    present = git.has_objects([oid for _m, oid in found.values()])
    for name, (_m, oid) in list(found.items()):
        if not present.get(oid):
            del found[name]
            todo.append(name)
    found.update(hash_paths(git, folder, todo))
    files = {n: [stats[n], found[n][1]] for n in found if n in stats}
    tree = _tree_of_files(git, found)
    if files != cache["files"] or tree != known:
        with contextlib.suppress(OSError):
            data = {"folder": folder, "format": git.fmt.name, "files": files, "tree": tree}
            write_atomic(cache_path, json.dumps(data).encode(), sync=False)
    return tree, True
