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
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..checkout import Checkout
from ..model.ids import Oid
from .blobs import hash_paths, in_process, inside, nested
from .blobs import max_untracked as max_untracked
from .blobs import mode_of as mode_of
from .seriestree import as_series_only as as_series_only
from .seriestree import series_tree as series_tree
from .stacks import names_at as _names

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
