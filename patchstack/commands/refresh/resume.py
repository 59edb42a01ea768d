"""``refresh --continue`` and ``refresh --abort``: go on from a stopped refresh, or back to the
state before it started.

``--continue`` takes what the user changed since the stop from the work tree, as ``git add -A
&& git rebase --continue`` would (no ``git add`` needed; the rule, and why a new untracked file
is refused instead, is `taking`'s), records it as the conflict's resolution, refuses while
markers remain, and replays the rest. ``--abort`` restores the snapshot
the stopped refresh recorded of the state before it (HEAD, work tree, index and series files,
byte for byte). Both are one transaction each; ``undo`` of either gives the stopped refresh back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from ...checkout import Checkout
from ...engine.replay import Done, replay
from ...errors import PatchstackError, RefusedError
from ...git.attributes import start_listing
from ...journal.oplog import newest
from ...journal.snapshot import as_series_only, series_tree
from ...model.conflict import marker_lines
from ...model.ids import Oid
from ...transaction import Plan, Restore, publish
from ..state import make_engine, read_stack
from . import stopped
from .knockons import KnockOns
from .relocating import relocating_of
from .resolutions import Resolutions
from .resolver import notes, proposer_of
from .settle import RefreshResult, end, labels_of
from .start import marked, resolver, with_proposals
from .taking import taken


def find_markers(ws: Checkout, paths: tuple[str, ...]) -> list[tuple[str, int]]:
    """(path, line) of conflict markers left in the work tree files ``paths``."""
    found = []
    for path in paths:
        full = os.path.join(ws.git.top, path)
        if os.path.isfile(full) and not os.path.islink(full):
            with open(full, "rb") as f:
                text = f.read().decode("utf-8", "surrogateescape")
            found += [(path, n) for n in marker_lines(text)]
    return found


def _checked(ws: Checkout, verb: str) -> stopped.State:
    """The stopped refresh, when HEAD and the series files are as it left them."""
    git = ws.git
    state = stopped.load(ws)
    assert state.stop_head and state.stop_tree and state.stopped_at
    head = git.head()
    if head != state.stop_head:
        raise RefusedError(
            f"HEAD moved since the {state.verb} stopped (it was {state.stop_head[:12]})",
            f"'git reset --soft {state.stop_head[:12]}' and {verb}, or '{state.command} --abort'",
        )
    last = newest(git)
    was = as_series_only(git, last.state).series if last is not None else None
    if was is not None and series_tree(ws)[0] != was:
        changed = git.changed_paths(was, series_tree(ws)[0])
        raise RefusedError(
            f"series files changed while the {state.verb} was stopped: " + ", ".join(changed),
            f"put them back, or run '{state.command} --abort'",
        )
    return state


def _not_import(state: stopped.State) -> None:
    if state.route == "import":
        raise RefusedError(
            "the command stopped at a conflict is 'import branch', not a refresh",
            "resolve the markers and run 'patchstack import branch --continue' (or --abort)",
        )


def _work_tree(ws: Checkout, state: stopped.State, paths: Sequence[str] = ()) -> Oid:
    """The tree the refresh stopped at with the conflicting patch's files (or ``paths``) as
    the work tree holds them (resolved, or still with markers)."""
    git = ws.git
    assert state.stop_tree
    wanted = list(paths or state.touched)
    made = git.tree_with_files(state.stop_tree, wanted)  # only these paths read, when plain
    if made is not None:
        return made
    # A file the patch creates and the user deleted while resolving is in neither place.
    had = git.ls_tree_paths(state.stop_tree, wanted)
    paths = [p for p in wanted if p in had or os.path.lexists(os.path.join(git.top, p))]
    with git.temp_index() as idx:
        idx.read_tree(state.stop_tree)
        idx.add_paths(paths, force=True)  # the stop's files, ignored or not
        return idx.write_tree()


def continue_(ws: Checkout, progress: Callable[[int, int], None] | None = None) -> RefreshResult:
    _not_import(stopped.load(ws))
    state = _checked(ws, "continue")
    left = find_markers(ws, state.conflicted)
    if left:
        raise RefusedError(
            "conflict markers remain: " + ", ".join(f"{p}:{n}" for p, n in left[:10]),
            "edit the files to resolve them, then run 'patchstack refresh --continue' again"
            " (or 'patchstack refresh --skip' to leave the patch out, deferred)",
        )
    records = Resolutions(ws)
    records.all()  # checked before anything is written
    paths = taken(ws, state.touched, state.at_stop, state.command)
    resolved_tree = _work_tree(ws, state, paths)
    assert state.stopped_at and state.stop_tree and state.merged_tree
    step = next(s for s in state.steps if s.name == state.stopped_at)
    before, ours, merged = step.before, Oid(state.stop_tree), Oid(state.merged_tree)
    keys = records.record(
        step.name, before, ours, step.after, merged, resolved_tree, state.conflicted
    )
    now = {(r.patch, r.path) for r in records.all().values() if r.key in keys}
    state = replace(state, recorded=tuple(sorted({*state.recorded, *now})))
    first = Done(step.name, ours, resolved_tree, True)
    src = (resolved_tree, paths)
    return _go_on(ws, state, [*state.done, first], resolved_tree, src, progress)


def skip(ws: Checkout, progress: Callable[[int, int], None] | None = None) -> RefreshResult:
    """Leave the conflicting patch out, deferred (its file untouched), and go on with the
    rest, each placed without it, as ``git rebase --skip`` places them."""
    _not_import(stopped.load(ws))
    state = _checked(ws, "skip")
    start_listing(ws.git)  # (git walks the work tree while the skip reads its state)
    assert state.stopped_at and state.stop_tree
    step = next(s for s in state.steps if s.name == state.stopped_at)
    if step.commit is None:
        raise PatchstackError(
            f"'{step.name}' cannot be deferred: the commit of its change is unknown",
            "resolve the conflict and run 'patchstack refresh --continue'",
        )
    stop_tree = Oid(state.stop_tree)
    state = replace(state, deferrals=(*state.deferrals, (step.name, step.commit, None)))
    shown = _work_tree(ws, state)
    return _go_on(ws, state, list(state.done), stop_tree, (shown, state.touched), progress)


def _go_on(
    ws: Checkout,
    state: stopped.State,
    done: list[Done],
    tree: Oid,
    src: tuple[Oid, Sequence[str]],
    progress: Callable[[int, int], None] | None,
) -> RefreshResult:
    """Replay the patches after the stopped one onto ``tree``; the work tree holds ``src``
    (the stopped tree with these files as they are now)."""
    git = ws.git
    start_listing(git)
    head = git.head()
    assert head is not None and state.stopped_at
    series = ws.load_series()
    stack = read_stack(git)
    engine = make_engine(ws, series, stack)
    try:
        k = [s.name for s in state.steps].index(state.stopped_at)
        knock_ons = KnockOns(ws, state, series)
        records = Resolutions(ws)
        proposer = proposer_of(ws, series, state, knock_ons)
        moving = relocating_of(ws, series, state, knock_ons)
        more, conflicts = replay(
            git,
            state.steps,
            k + 1,
            tree,
            labels_of(state),
            resolve=resolver(ws, series, state, records, proposer, moving),
            progress=progress,
            go_on=knock_ons,
            hold=knock_ons.needs,
            renames=knock_ons.resumed_proof(k + 1),
        )
        done += marked(more, records)
        note = lambda name: notes(records.note(name), proposer, name)  # noqa: E731
        result = end(
            ws, state, engine, series, done, src, head, conflicts, knock_ons, records, note
        )
        return with_proposals(result, moving, proposer)
    finally:
        engine.close()


def resolution(ws: Checkout, state: stopped.State) -> tuple[Oid, Oid]:
    """(HEAD, the tree the user resolved the stopped patch to): the files it touches taken
    from the work tree, no ``git add``; refused while markers remain, when HEAD moved or the
    series files changed since the stop."""
    state = _checked(ws, "continue")
    left = find_markers(ws, state.conflicted)
    if left:
        raise RefusedError(
            "conflict markers remain: " + ", ".join(f"{p}:{n}" for p, n in left[:10]),
            f"edit the files to resolve them, then run '{state.command} --continue' again",
        )
    head = ws.git.head()
    assert head is not None
    return head, _work_tree(ws, state)


def abort(ws: Checkout, kind: str = "refresh") -> RefreshResult:
    git = ws.git
    state = stopped.load(ws)
    if state.before is None:
        raise PatchstackError(
            "the stopped refresh does not record the state before it",
            "'patchstack undo' goes back through the operation log",
        )
    head = git.head()
    assert head is not None
    target = state.before
    publish(ws, Plan(kind, head, Oid(target.head), worktree=Restore(target)))
    return RefreshResult(
        state.route,
        state.old_base,
        Oid(state.new_base),
        state.new_ref,
        (),
        Oid(target.head),
        state.applied_before,
        aborted=True,
        kept=_kept(ws, state),
    )


def _kept(ws: Checkout, state: stopped.State) -> tuple[tuple[str, str], ...]:
    """(patch, path) of the resolutions this refresh recorded that are still there: written
    outside the journal, as git's rerere records are, an abort keeps them (and says so)."""
    if not state.recorded:
        return ()
    try:
        there = {(r.patch, r.path) for r in Resolutions(ws).all().values()}
    except PatchstackError:
        return state.recorded
    return tuple(k for k in state.recorded if k in there)
