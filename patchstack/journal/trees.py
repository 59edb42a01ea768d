"""Experiment trees in the operation log: a linked worktree that ``patchstack worktree`` makes
or removes, kept as a value the journal can record and make again.

Making or removing an experiment tree is an entry of the log of the checkout the command ran
in (`TreeChange`: the tree before and after), so ``undo`` there takes it back: a tree it made is
removed, a tree it removed is made again, exactly (`TreeState`: its HEAD, its own operation log,
its note, and its work tree and index when they were not a clean checkout). The entry's commit
keeps all of it reachable, so a removed tree's commits are in the journal, never only in a
deleted worktree. A tree's own log has a name of its own (`log_ref`, noted in the tree), so a
new tree at the path of an old one never inherits the old one's log.

A command killed while it makes or removes a tree leaves its ``running`` entry with the change
it planned; ``undo`` puts the tree back as it was before, half-made or not (`put`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import lock
from ..checkout import Checkout, experiment_path
from ..errors import GitFailure, RefusedError
from ..files import write_atomic
from ..git import Git, WorktreeInfo
from ..model.ids import Oid
from .restore import restore_worktree
from .snapshot import Snapshot, series_dir_of, take_snapshot

LOG_PREFIX = "refs/patchstack/worktrees/"


@dataclass(frozen=True)
class TreeState:
    """An experiment tree, everything needed to make it again."""

    path: str  # absolute
    head: Oid
    note: str  # its note (`checkout.experiment_path`), "" when it has none (half-made)
    log: Oid | None = None  # the tip of its own operation log
    snapshot: Snapshot | None = None  # its work tree and index, when not HEAD's clean checkout
    branch: str | None = None  # refs/heads/..., None when detached

    def key(self) -> tuple[Any, ...]:
        """What tells two states apart (the series directory it saw is not its own state)."""
        snap = self.snapshot
        return (self.head, self.log, self.branch, snap and (snap.worktree, snap.index))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "head": self.head,
            "note": self.note,
            "log": self.log,
            "snapshot": self.snapshot.to_json() if self.snapshot else None,
            "branch": self.branch,
        }

    @staticmethod
    def from_json(data: dict[str, Any] | None) -> TreeState | None:
        if not data:
            return None
        snap = data.get("snapshot")
        return TreeState(
            str(data["path"]),
            Oid(data["head"]),
            str(data.get("note") or ""),
            Oid(data["log"]) if data.get("log") else None,
            Snapshot.from_json(snap) if snap else None,
            data.get("branch"),
        )


@dataclass(frozen=True)
class TreeChange:
    """One experiment tree a command made (``before`` None), removed (``after`` None), or put
    back. In a ``running`` entry ``after`` is what the command set out to make."""

    path: str
    before: TreeState | None
    after: TreeState | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> TreeChange:
        before, after = (TreeState.from_json(data.get(k)) for k in ("before", "after"))
        return TreeChange(str(data["path"]), before, after)

    def states(self) -> tuple[TreeState, ...]:
        return tuple(s for s in (self.before, self.after) if s is not None)


def read_note(git_dir: str) -> dict[str, Any] | None:
    try:
        with open(experiment_path(git_dir), encoding="utf-8") as f:
            note = json.load(f)
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def noted_log(git_dir: str) -> str | None:
    """The operation log a tree's note names (None: the tree predates named logs, or has no
    note)."""
    log = (read_note(git_dir) or {}).get("log")
    if not isinstance(log, str) or not log.startswith(LOG_PREFIX) or not log.endswith("/oplog"):
        return None
    return None if re.search(r"\.\.|[^A-Za-z0-9._/-]", log) else log


def log_ref(git_dir: str) -> str:
    """A linked worktree's operation log: the one its note names, else one named after its
    administrative folder (trees made before logs were named, plain linked worktrees)."""
    return noted_log(git_dir) or f"{LOG_PREFIX}{os.path.basename(git_dir.rstrip('/'))}/oplog"


def find(git: Git, path: str) -> WorktreeInfo | None:
    real = os.path.realpath(path)
    for wt in git.worktrees()[1:]:
        if os.path.realpath(wt.path) == real:
            return wt
    return None


def capture(git: Git, path: str, series_dir: str) -> TreeState | None:
    """The experiment tree registered at ``path`` as it is now (None: no tree there)."""
    wt = find(git, path)
    if wt is None:
        return None
    note = read_note(wt.git_dir) if wt.git_dir else None
    text = json.dumps(note, indent=2) + "\n" if note is not None else ""
    log = git.rev_parse(log_ref(wt.git_dir)) if note is not None else None
    snapshot = None
    if wt.head and os.path.isdir(wt.path) and wt.git_dir:
        there = Git(wt.path, wt.git_dir, git.common_dir, git.fmt)
        try:
            folder = (note or {}).get("series_dir")
            snap = take_snapshot(Checkout(there, str(folder or series_dir), wt.path))
            tree = there.tree_of(wt.head)
            if snap.worktree != tree or snap.index != tree or snap.left_out:
                snapshot = snap
        except GitFailure:  # half-made: no index, no checkout yet
            pass
        finally:
            there.close()
    return TreeState(wt.path, wt.head or Oid(""), text, log, snapshot, wt.branch)


def put(git: Git, changes: Sequence[TreeChange], series_dir: str) -> tuple[TreeChange, ...]:
    """Make each tree what its change's ``after`` says; the changes as they came out (each
    ``after`` captured again, as it is on disk)."""
    done = []
    for change in changes:
        if change.after is None:
            _remove(git, change.path)
            done.append(change)
        else:
            if change.before is not None:
                _remove(git, change.path)  # another tree is there now: it is in `before`
            _make(git, change.after, series_dir)
            done.append(replace(change, after=capture(git, change.path, series_dir)))
    return tuple(done)


def roll_back(git: Git, changes: Sequence[TreeChange], series_dir: str) -> None:
    """Put back the trees of a command that failed half way (its ``before`` states)."""
    for change in reversed(changes):
        now = find(git, change.path)
        if change.before is None:
            if now is not None:
                _remove(git, change.path)
        elif now is None:
            _make(git, change.before, series_dir)


def describe(changes: Sequence[TreeChange], back: str = "undo") -> str:
    """What the changes did and how ``back`` (undo, or redo after an undo) takes it back, for
    the message after an interrupt."""
    said = []
    for c in changes:
        shown = _shown(c.path)
        if c.after is None:
            said.append(f"the worktree {shown} was removed; 'patchstack {back}' makes it again")
        else:
            said.append(
                f"the worktree {shown} was made (HEAD {c.after.head[:12]}); 'patchstack {back}'"
                " removes it"
            )
    return "; ".join(said)


def describe_planned(changes: Sequence[TreeChange]) -> str:
    """What an interrupted command was doing to trees, for its warning."""
    said = []
    for c in changes:
        shown = _shown(c.path)
        said.append(
            f"it was removing the worktree {shown}"
            if c.after is None
            else f"it was making the worktree {shown}, which may be half-made"
        )
    return "; ".join(said)


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("../..") else rel


def _make(git: Git, state: TreeState, series_dir: str) -> None:
    path = state.path
    if not state.head:
        return  # a tree that never had a commit checked out: there is nothing to make
    if os.path.lexists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise RefusedError(
            f"{path} exists and is not an empty folder",
            "move it away, then run the command again; nothing was changed",
        )
    git.worktree_add(path, state.head)
    lock.point("tree-added")
    wt = find(git, path)
    if wt is None or not wt.git_dir:
        raise GitFailure(f"git made no worktree at {path}")
    try:
        if state.note:
            where = experiment_path(wt.git_dir)
            os.makedirs(os.path.dirname(where), exist_ok=True)
            write_atomic(where, state.note.encode())
        if state.log:
            git.run("update-ref", log_ref(wt.git_dir), state.log)
        there = Git(wt.path, wt.git_dir, git.common_dir, git.fmt)
        try:
            _attach(git, there, state)
            if state.snapshot is not None:
                ws = Checkout(there, series_dir, wt.path)
                ws = replace(ws, series_dir=series_dir_of(state.snapshot, ws))
                restore_worktree(ws, take_snapshot(ws), state.snapshot)
        finally:
            there.close()
    except BaseException:
        with contextlib.suppress(Exception):
            _remove(git, path)
        raise
    lock.point("tree-made")


def _attach(git: Git, there: Git, state: TreeState) -> None:
    """The branch the tree was on, when it still points at the tree's HEAD and no other
    worktree has it."""
    if not state.branch or git.rev_parse(state.branch) != state.head:
        return
    if any(wt.branch == state.branch for wt in git.worktrees()):
        return
    there.run("symbolic-ref", "HEAD", state.branch)
    there.knows_head_ref(state.branch)


def _remove(git: Git, path: str) -> None:
    wt = find(git, path)
    if wt is None:
        with contextlib.suppress(OSError):
            os.rmdir(path)  # a folder git made and left empty
        return
    ref = log_ref(wt.git_dir) if wt.git_dir and read_note(wt.git_dir) is not None else None
    git.worktree_remove(wt.path)
    lock.point("tree-removed")
    if ref:
        git.delete_ref(ref)
