"""``refresh --continue`` and ``refresh --abort``: go on from a stopped refresh, or back to the
state before it started.

``--continue`` takes the files the conflicting patch touches from the work tree (no ``git
add``), refuses while markers remain, and replays the rest. ``--abort`` restores the snapshot
the stopped refresh recorded of the state before it (HEAD, work tree, index and series files,
byte for byte). Both are one transaction each; ``undo`` of either gives the stopped refresh back.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ...checkout import Checkout
from ...engine.replay import Done, replay
from ...errors import PatchstackError, RefusedError
from ...journal.oplog import newest
from ...journal.snapshot import as_series_only, series_tree
from ...model.conflict import marker_lines
from ...model.ids import Oid
from ...transaction import Plan, Restore, publish
from ..state import make_engine, read_stack
from . import stopped
from .settle import RefreshResult, finish, labels_of, stop
from .start import resolver


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


def continue_(ws: Checkout, progress: Callable[[int, int], None] | None = None) -> RefreshResult:
    git = ws.git
    state = stopped.load(ws)
    assert state.stop_head and state.stop_tree and state.stopped_at
    left = find_markers(ws, state.conflicted)
    if left:
        raise RefusedError(
            "conflict markers remain: " + ", ".join(f"{p}:{n}" for p, n in left[:10]),
            "edit the files to resolve them, then run 'patchstack refresh --continue' again",
        )
    head = git.head()
    if head != state.stop_head:
        raise RefusedError(
            f"HEAD moved since the refresh stopped (it was {state.stop_head[:12]})",
            f"'git reset --soft {state.stop_head[:12]}' and continue, or"
            " 'patchstack refresh --abort'",
        )
    last = newest(git)
    was = as_series_only(git, last.state).series if last is not None else None
    if was is not None and series_tree(ws)[0] != was:
        changed = git.changed_paths(was, series_tree(ws)[0])
        raise RefusedError(
            "series files changed while the refresh was stopped: " + ", ".join(changed),
            "put them back, or run 'patchstack refresh --abort'",
        )
    series = ws.load_series()
    # A file the patch creates and the user deleted while resolving is in neither place.
    had = git.ls_tree_paths(state.stop_tree, list(state.touched))
    paths = [p for p in state.touched if p in had or os.path.lexists(os.path.join(git.top, p))]
    with git.temp_index() as idx:
        idx.read_tree(state.stop_tree)
        idx.add_paths(paths)
        resolved_tree = idx.write_tree()
    stack = read_stack(git)
    engine = make_engine(ws, series, stack)
    try:
        k = [s.name for s in state.steps].index(state.stopped_at)
        done = [*state.done, Done(state.stopped_at, Oid(state.stop_tree), resolved_tree, True)]
        more, conflicts = replay(
            git,
            state.steps,
            k + 1,
            resolved_tree,
            labels_of(state),
            resolve=resolver(ws, series, state),
            progress=progress,
        )
        done += more
        src = (resolved_tree, state.touched)
        if conflicts:
            return stop(ws, state, engine, series, done, conflicts[0], src, head)
        return finish(ws, state, engine, series, done, src, head)
    finally:
        engine.close()


def abort(ws: Checkout) -> RefreshResult:
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
    publish(ws, Plan("refresh", head, Oid(target.head), worktree=Restore(target)))
    return RefreshResult(
        state.route,
        state.old_base,
        Oid(state.new_base),
        state.new_ref,
        (),
        Oid(target.head),
        state.applied_before,
        aborted=True,
    )
