"""``undo`` and ``redo``: walk the operation log.

``undo`` restores the *before* state of the newest operation not yet undone (``undo N``: of the
N newest, at once); ``redo`` reverts the newest undo, as long as no other operation came after
it. Both are recorded like any command, so an undo can itself be undone and nothing a restore
replaces is lost. Before restoring, the current state is compared with the state the log last
recorded: commits made on top since, a moved HEAD, or edits and staged changes made since make
undo refuse, naming what it would drop, unless ``--force`` (even then what it replaces stays in
the log, and ``redo`` brings it back). After a command was killed, its ``running`` entry is
closed as ``interrupted`` and ``undo`` restores the state before it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..git import Git
from ..journal.oplog import (
    Entry,
    effective,
    entries,
    interrupted_error,
    oplog_ref,
    redo_target,
    refused_since,
    write_entry,
)
from ..journal.restore import check_restorable
from ..journal.snapshot import Snapshot, as_series_only, series_dir_of, take_snapshot
from ..journal.trees import TreeChange, TreeState, capture, read_note
from ..model.ids import Oid
from ..transaction import MoveTree, Plan, Restore, publish


@dataclass(frozen=True)
class RestoreResult:
    undone: tuple[Entry, ...]
    before: Snapshot  # the state the restore replaced
    target: Snapshot  # the state restored
    files: tuple[str, ...]  # work tree and series files written or removed
    refused: str | None = None  # the command refused right before, which changed nothing
    trees: tuple[TreeChange, ...] = ()  # experiment trees removed or made again


def _logged_dir(ws: Checkout, entry: Entry) -> Checkout:
    """The checkout with the series directory the newest entry recorded (a command run with
    ``--dir`` is undone in the folder it changed)."""
    folder = series_dir_of(entry.state, ws)
    return replace(ws, series_dir=folder) if folder != ws.series_dir else ws


def undo(ws: Checkout, steps: int = 1, force: bool = False) -> RestoreResult:
    git = ws.git
    log = entries(git, None)
    if not log:
        made = (
            (read_note(git.git_dir) or {}).get("made_from")
            if git.git_dir != git.common_dir
            else None
        )
        raise PatchstackError(
            "the operation log is empty: nothing to undo",
            f"this worktree was made from {made}: 'patchstack undo' there removes it, as"
            " 'patchstack worktree --remove' does"
            if made
            else None,
        )
    ws = _logged_dir(ws, log[0])
    newest = log[0]
    refused = refused_since(git, newest.oid)
    if newest.status == "running":
        if steps != 1:
            raise PatchstackError(
                f"'{newest.command}' was interrupted: undo it first (plain 'patchstack undo')"
            )
        current = take_snapshot(ws, refresh=newest.before.refresh, also=newest.writes)
        _check_branch(current, newest.before)
        allowed = {newest.before.head, newest.planned_head}
        if current.head not in allowed and not force:
            _refuse_moved(git, current, newest.before.head, newest.command)
        check_restorable(ws, current, newest.before)
        _close_interrupted(git, newest, log[1].oid if len(log) > 1 else None, current)
        targets = [newest]
    else:
        ops = effective(log)
        if len(ops) < steps:
            raise PatchstackError(
                f"only {len(ops)} operation(s) to undo" if ops else "nothing left to undo",
                "'patchstack log' lists them",
            )
        targets = ops[:steps]
        current = _check_unchanged(ws, newest, force)
    trees = _tree_changes(ws, targets, force or newest.status == "running")
    target = targets[-1].before
    undoes = tuple(t.seq for t in targets)
    files = _restore(ws, "undo", target, current, undoes=undoes, trees=trees)
    return RestoreResult(tuple(targets), current, target, files, refused, trees)


def redo(ws: Checkout, force: bool = False) -> RestoreResult:
    git = ws.git
    log = entries(git, None)
    if log and log[0].status == "running":
        raise interrupted_error(log[0])
    if log:
        ws = _logged_dir(ws, log[0])
    target = redo_target(log)
    if target is None:
        raise PatchstackError(
            "nothing to redo", "redo only follows an undo, before any other command"
        )
    current = _check_unchanged(ws, log[0], force)
    trees = _tree_changes(ws, [target], force)
    files = _restore(ws, "redo", target.before, current, redoes=target.seq, trees=trees)
    return RestoreResult((target,), current, target.before, files, trees=trees)


def _restore(
    ws: Checkout,
    kind: str,
    target: Snapshot,
    current: Snapshot,
    undoes: tuple[int, ...] = (),
    redoes: int | None = None,
    trees: tuple[TreeChange, ...] = (),
) -> tuple[str, ...]:
    _check_branch(current, target)
    plan = Plan(
        kind,
        Oid(current.head),
        Oid(target.head),
        # Only experiment trees change: the checkout itself is left alone, index included.
        worktree=MoveTree() if trees and current.key() == target.key() else Restore(target),
        refresh=target.refresh,
        undoes=undoes,
        redoes=redoes,
        before=current,
        trees=trees,
    )
    return publish(ws, plan).written


def _key(state: TreeState | None) -> object:
    return state.key() if state else None


def _tree_changes(ws: Checkout, targets: list[Entry], force: bool) -> tuple[TreeChange, ...]:
    """The experiment trees the restore puts back: each as it was before the oldest of
    ``targets`` that made or removed it. Refused when one changed since the newest of them
    recorded it (unless ``force``: what it replaces stays in the log), or when a folder that
    is not the tree is where it must be made again."""
    wanted: dict[str, TreeState | None] = {}
    recorded: dict[str, tuple[TreeState | None, str]] = {}
    for t in targets:  # newest first
        for c in t.trees:
            wanted[c.path] = c.before
            recorded.setdefault(c.path, (c.after, t.command))
    changes = []
    for path, want in wanted.items():
        now = capture(ws.git, path, ws.series_dir)
        if _key(now) == _key(want):
            continue
        after, command = recorded[path]
        shown = ws.display(path)
        if not force and _key(now) != _key(after):
            raise RefusedError(
                f"the worktree {shown} changed since '{command}' (its HEAD, files or log)",
                f"remove it with 'patchstack worktree --remove {shown}' (refused when that"
                " would lose work), or pass --force: what it holds stays in the operation log"
                " and 'patchstack redo' brings it back; nothing was changed",
            )
        blocked = os.path.lexists(path) and (not os.path.isdir(path) or os.listdir(path))
        if want is not None and now is None and blocked:
            raise RefusedError(
                f"{shown} is in the way of the worktree the undo makes again there",
                "move it away and run the command again; nothing was changed",
            )
        changes.append(TreeChange(path, now, want))
    return tuple(changes)


def _close_interrupted(git: Git, entry: Entry, parent: str | None, current: Snapshot) -> None:
    """Close an interrupted entry, recording the state it left as its 'after'."""
    closed = replace(entry, status="interrupted", after=current)
    git.set_ref(oplog_ref(git), write_entry(git, parent, closed), entry.oid)


def _check_branch(current: Snapshot, recorded: Snapshot) -> None:
    if current.branch != recorded.branch:

        def name(b: str | None) -> str:
            return b.removeprefix("refs/heads/") if b else "a detached HEAD"

        raise RefusedError(
            f"the log was recorded on {name(recorded.branch)}, and HEAD is on"
            f" {name(current.branch)} now",
            f"switch back first (git switch {name(recorded.branch)}); nothing was changed",
        )


def _refuse_moved(git: Git, current: Snapshot, recorded_head: str, command: str) -> None:
    if git.is_ancestor(recorded_head, current.head):
        commits = git.log_commits(f"{recorded_head}..{current.head}")
        shown = "; ".join(f"{oid[:12]} {subject}" for oid, _p, subject in commits[:10])
        more = f" and {len(commits) - 10} more" if len(commits) > 10 else ""
        raise RefusedError(
            f"{len(commits)} commit(s) were made on top since '{command}': {shown}{more};"
            " undo would drop them from the branch",
            "keep them (cherry-pick them after undo), or pass --force: they stay in the"
            " operation log and 'patchstack redo' brings them back; nothing was changed",
        )
    raise RefusedError(
        f"HEAD moved since '{command}' (to {current.head[:12]}, not by patchstack)",
        "pass --force to restore anyway (what it replaces stays in the operation log);"
        " nothing was changed",
    )


def _check_unchanged(ws: Checkout, newest: Entry, force: bool) -> Snapshot:
    """Refuse when the state differs from what the log last recorded (unless ``force``)."""
    git = ws.git
    last = as_series_only(git, newest.state)
    current = take_snapshot(ws, refresh=last.refresh)
    _check_branch(current, last)
    if force:
        return current
    if current.head != last.head:
        _refuse_moved(git, current, last.head, newest.command)
    changed = []
    if current.worktree != last.worktree:
        changed += git.changed_paths(last.worktree, current.worktree)
    if current.series != last.series:
        changed += [
            os.path.join(ws.display(ws.series_dir), p)
            for p in git.changed_paths(last.series, current.series)
        ]
    if current.series_exists != last.series_exists:
        changed.append(ws.display(ws.series_dir))
    staged = current.index != last.index
    if changed or staged:
        what = ", ".join(changed[:10]) + (
            f" and {len(changed) - 10} more" if len(changed) > 10 else ""
        )
        raise RefusedError(
            "files changed since '"
            + newest.command
            + "': "
            + (what or "")
            + ("; " if what and staged else "")
            + ("the staged changes differ" if staged else ""),
            "commit or capture them first, or pass --force: they stay in the operation log and"
            " 'patchstack redo' brings them back; nothing was changed",
        )
    return current
