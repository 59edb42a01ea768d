"""Snapshots: the whole state a command may change, as git objects.

A snapshot holds the branch and HEAD, the applied stack's names, and three trees:

- ``index``: the user's index as it was (absent when it had unmerged entries);
- ``worktree``: the work tree as it was, every tracked and untracked (not ignored) file with
  its exact bytes, mode and symlink target, built in a temporary index copied from the real
  one, so only files whose stat data changed and untracked files are hashed, with
  ``hash-object --no-filters`` (no eol conversion, no clean filter: a restore writes back the
  very bytes). The series directory is not part of it; untracked files larger than
  ``patchstack.snapshotMaxSize`` (64 MiB) are left out, and so never touched by a restore
  either. Never ``git stash``: nothing of the user's is moved to take a snapshot;
- ``series``: the series: the series file and the patch files it names (`series_files`), and
  nothing else of the series directory (a nested repository's ``.git``, a folder ``--dir``
  named by mistake, the recorded resolutions in ``resolutions/``: what a refresh learned,
  which undo leaves, as git leaves its rerere cache), each file at most
  ``patchstack.snapshotMaxSize``;

and ``refresh``: the blob of a stopped refresh's state, when one is stopped (a stopped refresh
is a state of the journal, see `commands.refresh`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..checkout import Checkout
from ..errors import RefusedError
from ..files import write_atomic
from ..git import Git
from ..git.objects import file_bytes, staged_mode
from ..model.ids import Oid
from ..model.naming import named_files, validate_name
from .stacks import names_at as _names

DEFAULT_MAX_UNTRACKED = 64 * 1024 * 1024
# (index mode, path) of the tracked files whose stat data differs, the untracked files
Scan = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]


@dataclass(frozen=True)
class Snapshot:
    branch: str | None  # refs/heads/..., None when detached
    head: str
    index: str | None
    worktree: str
    series: str
    series_exists: bool
    stack: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # untracked files too large to snapshot
    refresh: str | None = None  # blob of the stopped refresh's state
    # the series directory snapshotted: relative to the top of the work tree when inside it
    # (so a moved or copied checkout is undone in its own folder), else absolute; entries
    # written before held it absolute always (see `series_dir_of`)
    series_dir: str | None = None
    # ``series`` holds the series only (`series_files`); older snapshots hold the whole folder
    series_only: bool = False

    def key(self) -> tuple[Any, ...]:
        return (
            self.branch,
            self.head,
            self.index,
            self.worktree,
            self.series,
            self.series_exists,
            self.refresh,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "head": self.head,
            "index": self.index,
            "worktree": self.worktree,
            "series": self.series,
            "series_exists": self.series_exists,
            "stack": list(self.stack),
            "left_out": list(self.left_out),
            "refresh": self.refresh,
            "series_dir": self.series_dir,
            "series_only": self.series_only,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Snapshot:
        return Snapshot(
            data.get("branch"),
            data["head"],
            data.get("index"),
            data["worktree"],
            data["series"],
            bool(data.get("series_exists", True)),
            tuple(data.get("stack", ())),
            tuple(data.get("left_out", ())),
            data.get("refresh"),
            data.get("series_dir"),
            bool(data.get("series_only", False)),
        )


def max_untracked(git: Git) -> int:
    value = git.config("patchstack.snapshotMaxSize")
    if value:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
        mult = units.get(value[-1].lower(), 1)
        with contextlib.suppress(ValueError):
            return int(value.rstrip("kKmMgG")) * mult
    return DEFAULT_MAX_UNTRACKED


def inside(path: str, folder: str | None) -> bool:
    return bool(folder) and (path + "/").startswith((folder or "").rstrip("/") + "/")


def mode_of(st: os.stat_result) -> str:
    """The mode git stages for a file (`git.objects.staged_mode`: a regular file is executable
    by its owner's bit)."""
    return staged_mode(st) or "100644"


def hash_paths(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob) for files and symlinks (the link text), bytes exactly as they are;
    stored in process, as loose objects, unless a scratch store would take them."""
    if in_process(git):
        with contextlib.suppress(OSError):  # (git says what it cannot read)
            return _stored(git, top, rel_paths)
    return _hashed(git, top, rel_paths)


def in_process(git: Git) -> bool:
    """Whether a snapshot's objects may be written here: not while a scratch store takes the
    objects written (`git.scratch`), nor in a repository that keeps a second object format."""
    return git.scratch is None and not git.compat_format()


def _stored(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    result: dict[str, tuple[str, str]] = {}
    for rel in rel_paths:
        full = os.path.join(top, rel)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):  # (a folder of it is a file now)
            continue
        entry = git.write_file(full, st)
        if entry is not None:
            result[rel] = entry
    return result


def nested(paths: Iterable[str]) -> bool:
    """Whether one of ``paths`` is a folder of another (a file turned into a folder)."""
    listed = set(paths)
    for path in listed:
        while "/" in path:
            path = path.rpartition("/")[0]
            if path in listed:
                return True
    return False


def _hashed(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    result: dict[str, tuple[str, str]] = {}
    regular: list[tuple[str, str]] = []
    link_files: list[tuple[str, str]] = []
    temps: list[str] = []
    try:
        for rel in rel_paths:
            full = os.path.join(top, rel)
            try:
                st = os.lstat(full)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISLNK(st.st_mode):
                fd, tmp = tempfile.mkstemp(prefix="patchstack-link-", dir=git.git_dir)
                with os.fdopen(fd, "wb") as f:
                    f.write(file_bytes(full, st))
                temps.append(tmp)
                link_files.append((rel, tmp))
            elif stat.S_ISREG(st.st_mode):
                regular.append((rel, mode_of(st)))
        oids = git.hash_files(
            [tmp for _rel, tmp in link_files] + [os.path.join(top, r) for r, _m in regular]
        )
        for (rel, _tmp), oid in zip(link_files, oids, strict=False):
            result[rel] = ("120000", oid)
        for (rel, mode), oid in zip(regular, oids[len(link_files) :], strict=False):
            result[rel] = (mode, oid)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return result


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


def take_snapshot(
    ws: Checkout,
    refresh: str | None = None,
    head: Oid | None = None,
    also: Sequence[str] = (),
    scanned: list[Scan] | None = None,
) -> Snapshot:
    """The state now; ``refresh``: the stopped refresh it is in (the journal knows it);
    ``head``: the HEAD to record when the branch is about to move there (the transaction
    moves it together with the operation log); ``also``: files of the series directory to
    take besides the series (those an interrupted command was writing); ``scanned`` gets
    what the scan of the work tree found (`Scan`, for `commands.refresh.taking`)."""
    git = ws.git
    head = head or git.head()
    if head is None:
        from ..errors import PatchstackError

        raise PatchstackError("the repository has no commits yet", "commit the upstream tree first")
    exclude = ws.in_tree
    left_out: list[str] = []
    null = git.fmt.null

    def meanwhile() -> tuple[tuple[Oid, bool], tuple[str, ...]]:
        return series_tree(ws, also), _names(git, head)

    with git.temp_index() as idx:
        idx.copy_from(git.index_path)
        index_tree = idx.try_write_tree()
        records: list[tuple[str, str, str]] = []
        candidates: list[str] = []
        dirty, untracked, ((series, exists), names) = idx.scan(exclude, meanwhile)
        if scanned is not None:
            scanned.append((tuple(dirty), tuple(untracked)))
        for mode, path in dirty:
            if mode == "160000" or inside(path, exclude):
                continue
            candidates.append(path)
            records.append(("0", null, path))  # removed unless it is there (set below)
        limit = max_untracked(git)
        for path in untracked:
            if path.endswith("/"):
                continue  # a nested repository: never touched, not ours to snapshot
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(os.path.join(git.top, path)).st_size > limit:
                    left_out.append(path)
                    continue
            candidates.append(path)
        hashed = hash_paths(git, git.top, candidates)
        changes = {p: None for _m, _o, p in records} | hashed
        if index_tree is None:  # unmerged entries: drop every stage, keep the files
            records = [("0", null, p) for p in candidates] + records
        records += [(mode, oid, p) for p, (mode, oid) in hashed.items()]
        if index_tree is not None and not changes:  # a clean work tree: the index's tree
            worktree = index_tree
        elif index_tree is not None and in_process(git) and not nested(changes):
            worktree = git.edit_tree(index_tree, changes)
        else:
            idx.set_entries(records)
            worktree = idx.write_tree()
    branch = git.head_ref()
    return Snapshot(
        branch,
        head,
        index_tree,
        worktree,
        series,
        exists,
        names,
        tuple(left_out),
        refresh,
        ws.in_tree or ws.series_dir,
        series_only=True,
    )


def series_dir_of(snap: Snapshot, ws: Checkout) -> str:
    """The series directory ``snap`` was taken with, in the checkout of ``ws`` (absolute).

    An absolute one outside the work tree that ends with the folder ``ws`` uses (its path in
    the tree) is that folder as an older entry recorded it before the checkout was moved or
    copied: the folder here, never the one at the old place."""
    folder = snap.series_dir
    if not folder:
        return ws.series_dir
    if not os.path.isabs(folder):
        return os.path.normpath(os.path.join(ws.git.top, folder))
    rel = ws.in_tree
    if rel and not inside(folder, ws.git.top) and (folder.rstrip("/") + "/").endswith(f"/{rel}/"):
        return ws.series_dir
    return folder
