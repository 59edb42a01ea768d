"""One transaction for every state change: plan in the object database, publish once, journal it.

A command that changes state never writes anything itself. It reads the state, builds every
tree and commit it needs in the object database, and hands a `Plan` to `publish`:

1. ``begin`` (called by the CLI before the command runs) takes the repository lock, refuses
   while the journal shows an interrupted command or a stopped refresh (unless the command is
   the one that resolves it), and is the only way in;
2. `publish` snapshots the state before (`journal.snapshot`), checks that HEAD is still the
   one the plan was made on, and writes a ``running`` entry to the operation log;
3. it moves the index and the work tree once (`MoveTree`, `Captured`, `Overlay` or
   `Restore`, see each), writes the series files, each atomically;
4. it snapshots the state after, and moves the branch and the operation log in one
   ``update-ref`` transaction that expects their old values, so the branch moves exactly when
   the entry says ``done``.

All of it runs inside `lock.critical`: Ctrl-C and SIGTERM wait until it ends. When a step fails
(an edit in the way, a full disk, a hook that refuses, a branch another process moved), what was
written is put back from the snapshot and the running entry is dropped: nothing changed. When
the process is killed (``kill -9``), the running entry stays; the next command names it, and
``patchstack undo`` restores the state before, exactly.

A stopped refresh is a state of the journal: the snapshot's ``refresh`` blob. `Plan.refresh`
says what it is after the command (none, for every command but ``refresh`` itself and restores).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from . import lock
from .checkout import Checkout
from .errors import PatchstackError, RefusedError
from .files import write_atomic
from .git import RefTransactionFailed, RefUpdate
from .journal.oplog import (
    RESTORING,
    Entry,
    interrupted,
    interrupted_error,
    oplog_ref,
    parse_entry,
    write_entry,
)
from .journal.restore import restore_state
from .journal.snapshot import Snapshot, moved_snapshot, take_snapshot
from .model.ids import Oid


@dataclass(frozen=True)
class FileWrite:
    path: str  # absolute, inside the series directory
    data: bytes | None  # None: delete


@dataclass(frozen=True)
class MoveTree:
    """Move the index and work tree from the old HEAD's tree to the new one (``read-tree -m
    -u``), keeping the user's edits; refused before writing anything when one is in the way."""


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


@dataclass(frozen=True)
class Published:
    before: Snapshot
    after: Snapshot
    entry: Oid | None  # None: nothing changed, nothing recorded
    written: tuple[str, ...] = ()  # files a restore wrote or removed


# -- the way in ----------------------------------------------------------------------------------

# What this process opened and published, for the messages after a failure or an interrupt.
_OPENED: list[tuple[Checkout, float]] = []
_PUBLISHED: list[Published] = []


def start_command() -> None:
    """Forget what an earlier command in this process opened (tests and the completion
    shell run many commands in one interpreter; the after-failure sweep is per command)."""
    _OPENED.clear()
    _PUBLISHED.clear()


def begin(
    ws: Checkout, write: bool, allow_interrupted: bool = False, while_stopped: bool = False
) -> tuple[lock.Lock, list[PatchstackError]]:
    """Take the lock (exclusive to change state, shared to read). A command that changes state
    is refused while a git operation is in progress (merge, rebase, ...), while the journal
    shows an interrupted command (``undo`` restores it) or a stopped refresh (``refresh
    --continue``/``--abort``); for one that only reads, the last two come back as warnings."""
    held = lock.acquire(ws.git.common_dir, ws.command, exclusive=write)
    _OPENED.append((ws, time.time()))
    try:
        problems: list[PatchstackError] = []
        foreign = foreign_error(ws) if write else None  # (status shows it to readers)
        if foreign:
            problems.append(foreign)
        pending = interrupted(ws.git)
        if pending and not allow_interrupted:
            problems.append(interrupted_error(pending))
        elif not while_stopped:
            stopped = refresh_error(ws)
            if stopped:
                problems.append(stopped)
        if write and problems:
            raise problems[0]
    except BaseException:
        held.release()
        raise
    return held, problems


_NEXT_STEPS = {
    "merge": "finish it with 'git commit' (after resolving and 'git add'), or 'git merge --abort'",
    "rebase": "finish it with 'git rebase --continue', or 'git rebase --abort'",
    "cherry-pick": "finish it with 'git cherry-pick --continue', or 'git cherry-pick --abort'",
    "revert": "finish it with 'git revert --continue', or 'git revert --abort'",
    "am": "finish it with 'git am --continue', or 'git am --abort'",
    "bisect": "end it with 'git bisect reset'",
}


def foreign_error(ws: Checkout) -> RefusedError | None:
    """A git merge, rebase, cherry-pick, revert, am or bisect stopped half way: patchstack
    acts on nothing then (its HEAD, index and files are git's work in progress)."""
    found = ws.git.operation_in_progress()
    if found is None:
        return None
    op, path = found
    return RefusedError(
        f"a git {op} is in progress ({os.path.relpath(path, ws.git.top)})",
        _NEXT_STEPS[op] + ", then run the command again; nothing was changed",
    )


def refresh_error(ws: Checkout) -> RefusedError | None:
    """The refusal every other command meets while a refresh is stopped at a conflict."""
    from .journal.oplog import current_refresh

    if current_refresh(ws.git) is None:
        return None
    return RefusedError(
        "a refresh is stopped at a conflict",
        "resolve the conflict markers and run 'patchstack refresh --continue',"
        " or run 'patchstack refresh --abort' to go back to the state before it",
    )


# -- publishing ----------------------------------------------------------------------------------


def publish(ws: Checkout, plan: Plan) -> Published:
    git = ws.git
    ref = oplog_ref(git)
    lock.point("publish-start")  # planned, nothing written yet: a Ctrl-C here changes nothing
    git.keep_scratch()  # the objects planned in the scratch store, into the repository
    lock.point("scratch-kept")
    with lock.critical():
        found = git.messages(ref, 1)
        parent = found[0][0] if found else None
        last = parse_entry(*found[0]) if found else None
        if plan.before is None:
            ws.progress.step("saving the state before")
        before = plan.before or take_snapshot(ws, refresh=last.state.refresh if last else None)
        if before.head != plan.old_head:
            raise RefusedError(
                f"HEAD moved while this command ran (now {before.head[:12]})",
                "run the command again; nothing was changed",
            )
        entry = Entry(
            "",
            (last.seq + 1) if last else 1,
            ws.command or plan.kind,
            plan.kind,
            "running",
            int(time.time()),
            os.getpid(),
            before,
            None,
            plan.new_head,
            plan.undoes,
            plan.redoes,
        )
        running = write_entry(git, parent, entry)
        try:
            git.ref_transaction([RefUpdate(ref, running, parent)])
        except RefTransactionFailed as exc:
            raise _ref_error(exc, "the operation log") from None
        lock.point("journal-running")
        try:
            if _moves_the_work_tree(plan):
                ws.progress.step("writing the work tree")
            written = _apply(ws, plan, before)
            ws.progress.step("recording the operation")
            after = _after(ws, plan, before)
            lock.point("journal-finishing")
            updates = []
            if plan.new_head != plan.old_head:
                branch = before.branch or "HEAD"
                updates.append(RefUpdate(branch, plan.new_head, plan.old_head))
            done: Oid | None = None
            if after.key() != before.key() or plan.kind in RESTORING:
                finished = replace(entry, status="done", after=after)
                done = write_entry(git, parent, finished)
                updates.append(RefUpdate(ref, done, running))
            else:
                updates.append(RefUpdate(ref, parent, running))
            try:
                git.ref_transaction(updates, f"patchstack: {plan.kind}")
            except RefTransactionFailed as exc:
                raise _ref_error(exc, "the branch") from None
        except BaseException:
            _roll_back(ws, before, ref, running, parent)
            raise
        lock.point("publish-ref")
        _PUBLISHED.append(Published(before, after, done, written))
        lock.point("journal-done")
    return _PUBLISHED[-1]


def describe_interruption() -> str:
    """What an interrupt (SIGINT, SIGTERM) left: nothing changed, or the command finished (and
    what is applied now), or a refresh stopped at a conflict."""
    if not _PUBLISHED:
        return "nothing was changed (the state is the one before the command)"
    after = _PUBLISHED[-1].after
    what = f"HEAD {after.head[:12]}, {len(after.stack)} patch(es) applied"
    if after.refresh:
        return (
            f"the refresh stopped at a conflict ({what}); resolve it and run 'patchstack"
            " refresh --continue', or 'patchstack refresh --abort'"
        )
    return f"the command had finished ({what}); 'patchstack undo' takes it back"


def clean_up_after_failure() -> None:
    """Remove what git leaves in a repository when it dies half way (temporary objects and
    packs, fast-import crash reports) and that appeared while this command ran."""
    for ws, since in _OPENED:
        ws.git.sweep_debris(since)


def _after(ws: Checkout, plan: Plan, before: Snapshot) -> Snapshot:
    """The state after the move: derived from ``before`` when the plan only moved the work
    tree from one HEAD to another (`journal.snapshot.moved_snapshot`), else taken."""
    if isinstance(plan.worktree, MoveTree) and not plan.files:
        if plan.old_head == plan.new_head:
            return replace(before, refresh=plan.refresh)
        derived = moved_snapshot(ws, before, plan.new_head, plan.refresh)
        if derived is not None:
            return derived
    return take_snapshot(ws, refresh=plan.refresh, head=plan.new_head)


def _ref_error(exc: RefTransactionFailed, what: str) -> PatchstackError:
    if exc.hook_refused:
        return RefusedError(
            f"a git hook refused to update {what}: {exc.git_message}",
            "look at the repository's hooks (reference-transaction); nothing was changed",
        )
    return RefusedError(
        f"could not update {what}: {exc.git_message}",
        "another process moved it meanwhile; nothing was changed, run the command again",
    )


def _roll_back(ws: Checkout, before: Snapshot, ref: str, running: str, parent: str | None) -> None:
    """Put back what a failed step wrote and drop its running entry; when that fails too, the
    running entry stays, and the next command points at ``undo``."""
    git = ws.git
    try:
        partial = take_snapshot(ws, refresh=before.refresh)
        if partial.key() != before.key():
            restore_state(ws, partial, before)
        git.ref_transaction([RefUpdate(ref, Oid(parent) if parent else None, Oid(running))])
    except BaseException:  # noqa: S110 - the running entry is the record of what happened
        pass


def _moves_the_work_tree(plan: Plan) -> bool:
    how = plan.worktree
    return isinstance(how, (Restore, Overlay)) or (
        isinstance(how, MoveTree) and plan.old_head != plan.new_head
    )


def _apply(ws: Checkout, plan: Plan, before: Snapshot) -> tuple[str, ...]:
    how = plan.worktree
    if isinstance(how, Restore):
        return restore_state(ws, before, how.target)
    if isinstance(how, Overlay):
        _move_overlay(ws, plan, how)
    elif isinstance(how, Captured):
        ws.git.set_index_entries(plan.new_head, list(how.paths))
    elif plan.old_head != plan.new_head:
        _move(ws, plan.old_head, plan.new_head)
    _write_files(plan.files)
    return ()


def _write_files(files: Sequence[FileWrite]) -> None:
    for fw in files:
        if fw.data is None:
            if os.path.lexists(fw.path):
                os.unlink(fw.path)
        else:
            os.makedirs(os.path.dirname(fw.path), exist_ok=True)
            write_atomic(fw.path, fw.data)
        lock.point("publish-file")


def _move(ws: Checkout, old: Oid, new: Oid) -> None:
    """read-tree refuses, before writing anything, to overwrite a file with uncommitted edits
    or an untracked file; stale stat information can make it refuse wrongly, so the index is
    refreshed and the move tried once more before reporting."""
    git = ws.git
    proc = git.checkout_tree(old, new)
    if proc.returncode != 0:
        git.refresh_index()
        proc = git.checkout_tree(old, new)
    if proc.returncode != 0:
        changed = git.changed_paths(old, new)
        dirty = git.dirty(exclude=ws.in_tree, paths=changed)
        touched = sorted(set(changed) & set(dirty.modified + dirty.untracked + dirty.unmerged))
        if not touched:
            raise RefusedError(
                "git refused to update the work tree: "
                + proc.stderr.decode("utf-8", "replace").strip(),
                "nothing was changed",
            )
        raise edits_in_the_way(touched)
    lock.point("publish-worktree")


def edits_in_the_way(paths: Sequence[str]) -> RefusedError:
    return RefusedError(
        "uncommitted edits in files this command would change: " + ", ".join(paths),
        "commit them, capture them with 'patchstack new', or fold them with"
        " 'patchstack refresh'; nothing was changed",
    )


def _move_overlay(ws: Checkout, plan: Plan, how: Overlay) -> None:
    git = ws.git
    new_tree = git.tree_of(plan.new_head)
    dst = how.shown or new_tree
    changed = set(git.changed_paths(how.src, dst))
    dirty = git.dirty(exclude=ws.in_tree, paths=sorted(changed))  # only what the move changes
    touched = sorted(
        (changed & set(dirty.modified + dirty.unmerged + dirty.untracked)) - set(how.overlaid)
    )
    if touched:
        raise edits_in_the_way(touched)
    if how.overlaid:
        git.set_index_entries(how.src, list(how.overlaid))
        git.refresh_index()
    proc = git.checkout_tree(how.src, dst)
    if proc.returncode != 0:
        raise RefusedError(
            "git refused to update the work tree: "
            + proc.stderr.decode("utf-8", "replace").strip(),
            "nothing was changed",
        )
    lock.point("publish-worktree")
    if dst != new_tree:
        git.set_index_entries(new_tree, git.changed_paths(new_tree, dst))
