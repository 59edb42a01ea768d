"""One transaction for every state change: plan in the object database, publish once, journal it.

A command that changes state never writes anything itself. It reads the state, builds every
tree and commit it needs in the object database, and hands a `Plan` to `publish`:

1. ``begin`` (called by the CLI before the command runs) takes the repository lock, refuses
   while the journal shows an interrupted command or a stopped refresh (unless the command is
   the one that resolves it), and is the only way in;
2. `publish` snapshots the state before (`journal.snapshot`), checks that HEAD is still the
   one the plan was made on, and writes a ``running`` entry to the operation log;
3. it moves the index and the work tree once (`MoveTree`, `Captured`, `Overlay` or
   `Restore`, see each in `journal.plan`), writes the series files, each atomically;
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
from .git import HeldIndex, RefTransactionFailed, RefUpdate
from .git.base import EARLY_LISTING
from .git.process import quiet_hooks
from .journal import derived
from .journal.moves import check_unmoved, check_writes, move_overlay, move_tree
from .journal.oplog import (
    RESTORING,
    BrokenLog,
    Entry,
    half_made_error,
    interrupted,
    interrupted_error,
    note_refused,
    oplog_ref,
    parse_entry,
    read_log,
    write_entry,
)
from .journal.plan import (
    Captured,
    FileWrite,
    MoveTree,
    Overlay,
    Plan,
    Published,
    Restore,
    Worktree,
)
from .journal.refusals import foreign_error, refresh_error
from .journal.restore import not_rolled_back, put_back, restore_state
from .journal.snapshot import Snapshot, take_snapshot
from .journal.trees import describe, put, roll_back
from .model.ids import Oid

__all__ = [
    "Captured",
    "FileWrite",
    "MoveTree",
    "Overlay",
    "Plan",
    "Published",
    "Restore",
    "Worktree",
    "begin",
    "clean_up_after_failure",
    "describe_interruption",
    "note_refusal",
    "publish",
    "scratch_was_full",
    "start_command",
]


# -- the way in ----------------------------------------------------------------------------------

# What this process opened and published, for the messages after a failure or an interrupt.
_OPENED: list[tuple[Checkout, float]] = []
_PUBLISHED: list[Published] = []
_UNFINISHED: list[str] = []  # rollbacks that failed (the running entry stayed)


def start_command() -> None:
    """Forget what an earlier command in this process opened (tests run many in one)."""
    _OPENED.clear()
    _PUBLISHED.clear()
    _UNFINISHED.clear()


def begin(
    ws: Checkout, write: bool, allow_interrupted: bool = False, while_stopped: bool = False
) -> tuple[lock.Lock, list[PatchstackError]]:
    """Take the lock (exclusive to change state, shared to read). A command that changes state
    is refused while a git operation is in progress (merge, rebase, ...), while the journal
    shows an interrupted command (``undo`` restores it) or a stopped refresh (``refresh
    --continue``/``--abort``); for one that only reads, the last two are warnings; no hook fires."""
    quiet_hooks(not write)
    held = lock.acquire(ws.git.common_dir, ws.command, exclusive=write)
    _OPENED.append((ws, time.time()))
    try:
        ws.git.clear_stale_index_lock()  # a killed patchstack's (no patchstack runs now)
        problems: list[PatchstackError] = []
        foreign = foreign_error(ws) if write else None  # (status shows it to readers)
        if foreign:
            problems.append(foreign)
        try:
            pending = interrupted(ws.git)
        except BrokenLog as exc:
            if write:
                raise
            problems.append(exc)  # a reader goes on, reading no log
            ws.git.read_as_absent(oplog_ref(ws.git))
            pending = None
        half_made = half_made_error(ws.git)
        if half_made:
            problems.append(half_made)
        elif pending and not allow_interrupted:
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


# -- publishing ----------------------------------------------------------------------------------


def publish(ws: Checkout, plan: Plan) -> Published:
    git = ws.git
    check_writes(ws, [fw.path for fw in plan.files])
    lock.point("publish-start")  # planned, nothing written yet: a Ctrl-C here changes nothing
    git._memo.pop((EARLY_LISTING,), None)  # (a listing of the work tree begun early: stale)
    git.keep_scratch()  # the objects planned in the scratch store, into the repository
    lock.point("scratch-kept")
    with lock.critical():
        held = git.lock_index()  # as git's own commands do: a 'git commit' meanwhile is refused
        try:
            lock.point("index-locked")
            published = _publish_locked(ws, plan, held)
        finally:
            held.release()
        lock.point("journal-done")
    return published


def _publish_locked(ws: Checkout, plan: Plan, held: HeldIndex) -> Published:
    git = ws.git
    ref = oplog_ref(git)
    found = read_log(git, 1)
    parent, last = (found[0][0], parse_entry(*found[0])) if found else (None, None)
    if plan.before is None:
        ws.progress.step("saving the state before")
    before = plan.before or take_snapshot(ws, refresh=last.state.refresh if last else None)
    check_unmoved(ws, plan.old_head, before, taken_before=plan.before is not None)
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
        plan.trees,
        plan.keep,
        writes=tuple(_series_name(ws, fw.path) for fw in plan.files),
        notes=plan.notes,
    )
    running = write_entry(git, parent, entry)
    try:
        git.ref_transaction([RefUpdate(ref, running, parent)])
    except RefTransactionFailed as exc:
        raise _ref_error(exc, "the operation log", wrote=False) from None
    lock.point("journal-running")
    wrote = _Wrote([], [])
    try:
        if _moves_the_work_tree(plan):
            ws.progress.step("writing the work tree")
        written = _apply(ws, plan, before, wrote)
        trees = put(git, plan.trees, ws.series_dir)
        ws.progress.step("recording the operation")
        after = _after(ws, plan, before)
        lock.point("journal-finishing")
        updates = []
        if plan.new_head != plan.old_head:
            branch = before.branch or "HEAD"
            updates.append(RefUpdate(branch, plan.new_head, plan.old_head))
        done: Oid | None = None
        if after.key() != before.key() or plan.kind in RESTORING or trees:
            finished = replace(entry, status="done", after=after, trees=trees)
            done = write_entry(git, parent, finished)
            updates.append(RefUpdate(ref, done, running))
        else:
            updates.append(RefUpdate(ref, parent, running))
        held.commit()  # the index first: the entry says done only once the index is new
        lock.point("index-committed")
        try:
            git.ref_transaction(updates, f"patchstack: {plan.kind}")
        except RefTransactionFailed as exc:
            raise _ref_error(exc, "the branch") from None
    except BaseException as exc:
        failed = _roll_back(ws, plan, before, ref, running, parent, held, wrote)
        if failed is None or not isinstance(exc, Exception):
            raise
        raise not_rolled_back(exc, failed) from exc
    lock.point("publish-ref")
    _PUBLISHED.append(Published(before, after, done, written, trees, plan.kind))
    return _PUBLISHED[-1]


@dataclass(frozen=True)
class _Wrote:
    """What a publish wrote so far, noted before each write: the rollback's list."""

    worktree: list[str]  # work-tree paths
    series: list[str]  # names in the series directory
    trees: list[Oid] = field(default_factory=list)  # whose versions those paths may hold


def describe_interruption() -> str:
    """What an interrupt (SIGINT, SIGTERM, SIGHUP) left: nothing changed, or the command
    finished (and what is applied now), or a refresh stopped at a conflict, or a step failed
    and what it wrote could not be put back."""
    if _UNFINISHED:
        return (
            f"a step failed and what it wrote could not be put back ({_UNFINISHED[-1]});"
            " 'patchstack undo' restores the state before the command exactly"
        )
    if not _PUBLISHED:
        return "nothing was changed (the state is the one before the command)"
    after = _PUBLISHED[-1].after
    if _PUBLISHED[-1].trees:
        return describe(_PUBLISHED[-1].trees, "redo" if _PUBLISHED[-1].kind == "undo" else "undo")
    what = f"HEAD {after.head[:12]}, {len(after.stack)} patch(es) applied"
    if after.refresh:
        return (
            f"the refresh stopped at a conflict ({what}); resolve it and run 'patchstack"
            " refresh --continue', or 'patchstack refresh --abort'"
        )
    return f"the command had finished ({what}); 'patchstack undo' takes it back"


def note_refusal() -> None:
    """The command was refused: say so beside the log of each repository it opened (for
    ``undo`` right after it, `journal.oplog.note_refused`)."""
    for ws, _since in _OPENED:
        note_refused(ws.git, ws.command)


def scratch_was_full() -> str | None:
    """Where a scratch store of this command ran out of room (`git.scratch`), if one did: a
    "no space left" then is that file system's, which the error must name."""
    return next((ws.git.scratch_full for ws, _since in _OPENED if ws.git.scratch_full), None)


def clean_up_after_failure() -> None:
    """Remove what git leaves in a repository when it dies half way (temporary objects and
    packs, fast-import crash reports) and that appeared while this command ran."""
    for ws, since in _OPENED:
        ws.git.sweep_debris(since)


def _after(ws: Checkout, plan: Plan, before: Snapshot) -> Snapshot:
    """The state after the publish: derived where it can be (`journal.derived`), else taken."""
    how, after, head = plan.worktree, None, plan.new_head
    if isinstance(how, MoveTree) and not plan.files and plan.old_head == head:
        return replace(before, refresh=plan.refresh)
    if derived.enabled() and isinstance(how, MoveTree) and not plan.files:
        after = derived.moved_snapshot(ws, before, head, plan.refresh)
    elif derived.enabled() and isinstance(how, Overlay):
        moved = (how.src, how.overlaid, how.shown)
        after = derived.overlaid_snapshot(ws, before, head, moved, plan.refresh, plan.files)
    return after or take_snapshot(ws, refresh=plan.refresh, head=head)


def _ref_error(exc: RefTransactionFailed, what: str, wrote: bool = True) -> PatchstackError:
    """``wrote``: the step had written to the work tree or the series (it is put back)."""
    after = "what this command wrote was put back" if wrote else "nothing was changed"
    if exc.hook_refused:
        return RefusedError(
            f"a git hook refused to update {what}: {exc.git_message}",
            f"look at the repository's hooks (reference-transaction); {after}",
        )
    return RefusedError(
        f"could not update {what}: {exc.git_message}",
        f"another process moved it while this command ran; {after} (nothing else touched):"
        " run the command again",
    )


def _roll_back(
    ws: Checkout,
    plan: Plan,
    before: Snapshot,
    ref: str,
    running: str,
    parent: str | None,
    held: HeldIndex,
    wrote: _Wrote,
) -> str | None:
    """Put back the paths and series files a failed step wrote (only those, and only where
    they still hold what it wrote), the index as it was, and drop the running entry. None when
    done; else why not: the running entry stays, and the next command points at ``undo``."""
    git = ws.git
    try:
        roll_back(git, plan.trees, ws.series_dir)
        if wrote.worktree:
            how = plan.worktree
            if isinstance(how, Restore):
                tree = Oid(how.target.worktree)
            elif isinstance(how, Overlay) and how.shown:
                tree = how.shown
            else:
                tree = git.tree_of(plan.new_head)
            for written in wrote.trees or [tree]:  # (each puts back what holds its version)
                put_back(ws, before, wrote.worktree, written, wrote.series)
        elif wrote.series:
            put_back(ws, before, (), git.fmt.empty_tree, wrote.series)
        held.roll_back()
        git.ref_transaction([RefUpdate(ref, Oid(parent) if parent else None, Oid(running))])
    except Exception as exc:  # the running entry is the record of what happened
        _UNFINISHED.append(str(exc) or type(exc).__name__)
        return _UNFINISHED[-1]
    return None


def _moves_the_work_tree(plan: Plan) -> bool:
    """(An experiment tree made or removed is a work tree written too.)"""
    how = plan.worktree
    return (
        isinstance(how, (Restore, Overlay))
        or (isinstance(how, MoveTree) and plan.old_head != plan.new_head)
        or bool(plan.trees)
    )


def _apply(ws: Checkout, plan: Plan, before: Snapshot, wrote: _Wrote) -> tuple[str, ...]:
    how = plan.worktree
    if isinstance(how, Restore):
        return restore_state(ws, before, how.target, wrote.worktree, wrote.series)
    if isinstance(how, Overlay):
        new_tree = ws.git.tree_of(plan.new_head)
        dst = how.shown or new_tree
        move_overlay(ws, how.src, dst, how.overlaid, wrote.worktree, new_tree, wrote.trees)
    elif isinstance(how, Captured):
        ws.git.set_index_entries(plan.new_head, list(how.paths))
    elif plan.old_head != plan.new_head:
        move_tree(ws, plan.old_head, plan.new_head, wrote.worktree)
    _write_files(ws, plan.files, wrote.series)
    return ()


def _series_name(ws: Checkout, path: str) -> str:
    return os.path.relpath(path, ws.series_dir).replace(os.sep, "/")


def _write_files(ws: Checkout, files: Sequence[FileWrite], noted: list[str]) -> None:
    for fw in files:
        noted.append(_series_name(ws, fw.path))
        if fw.data is None:
            if os.path.lexists(fw.path):
                os.unlink(fw.path)
        else:
            os.makedirs(os.path.dirname(fw.path), exist_ok=True)
            write_atomic(fw.path, fw.data)
        lock.point("publish-file")
