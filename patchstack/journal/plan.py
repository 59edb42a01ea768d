"""What a command hands to `transaction.publish`: the new HEAD, the series files to write, how
the index and the work tree move (`MoveTree`, `Captured`, `Overlay`, `Restore`), and what the
publish gives back (`Published`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.ids import Oid
from .snapshot import Snapshot
from .trees import TreeChange


@dataclass(frozen=True)
class FileWrite:
    path: str  # absolute, inside the series directory
    data: bytes | None  # None: delete


@dataclass(frozen=True)
class MoveTree:
    """Index and work tree from the old HEAD's tree to the new (``read-tree -m -u``): edits
    kept, or the move refused before it writes anything when one is in the way."""


@dataclass(frozen=True)
class Captured:
    """The work tree already holds the new HEAD's content of ``paths`` (``new``): only their
    index entries change."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class Overlay:
    """The work tree holds ``src``: the old HEAD's tree with ``overlaid`` as they are in the
    work tree (edits being folded, a resolved conflict). Move it to ``shown``, or to the new
    HEAD's tree when None; with ``shown`` (a stopped refresh: conflict markers) the index keeps
    the new HEAD's version of the files that differ."""

    src: Oid
    overlaid: tuple[str, ...] = ()
    shown: Oid | None = None


@dataclass(frozen=True)
class Restore:
    """Make the work tree, index and series directory those of a recorded snapshot."""

    target: Snapshot


Worktree = MoveTree | Captured | Overlay | Restore


@dataclass(frozen=True)
class Plan:
    kind: str  # the verb the operation log records: push, pop, new, refresh, undo, ...
    old_head: Oid  # the HEAD the plan was made on
    new_head: Oid
    files: tuple[FileWrite, ...] = ()
    worktree: Worktree = field(default_factory=MoveTree)
    refresh: str | None = None  # the stopped refresh after this command (a blob), if any
    undoes: tuple[int, ...] = ()
    redoes: int | None = None
    before: Snapshot | None = None  # the state before, when the caller took it under the lock
    trees: tuple[TreeChange, ...] = ()  # experiment trees to make or remove (`journal.trees`)
    keep: tuple[Oid, ...] = ()  # commits the new state names only by id: kept by the log
    notes: tuple[str, ...] = ()  # why, for the patches' histories (`journal.oplog.Entry`)


@dataclass(frozen=True)
class Published:
    before: Snapshot
    after: Snapshot
    entry: Oid | None  # None: nothing changed, nothing recorded
    written: tuple[str, ...] = ()  # files a restore wrote or removed
    trees: tuple[TreeChange, ...] = ()
    kind: str = ""
