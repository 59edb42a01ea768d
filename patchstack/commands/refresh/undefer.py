"""``push NAME`` of a deferred patch: bring it back onto the series where it stands now.

A deferred patch (`model.series.Deferral`) keeps the commit of its change where its file was
made. Bringing it back is a replay of the series on its own base in which that change takes
the patch's place again, placed by three-way merge like every patch (`engine.contract`), and
the patches after it placed on top; the knock-ons waiting for it (deferred "after" it) come
back with it, each placed again before anyone is asked about it. A conflict stops as a
refresh stops (markers in the work tree; ``refresh --continue``, ``--skip`` to leave it
deferred, ``--abort``), a knock-on of a patch still missing is deferred again (the patch
named is not: that is refused, nothing changed, exit 1), and the end is
a refresh's: the patch files rewritten for where they now stand, the deferral lines gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...checkout import Checkout
from ...engine.chain import Engine
from ...engine.claims import deferred_change, upstream_changes
from ...engine.placer import Placer
from ...engine.replay import Done, Step, old_chain, real_changes, replay, steps
from ...engine.triage import KNOCK_ON
from ...errors import ConflictError, PatchstackError, RefusedError
from ...model.conflict import Conflict
from ...model.ids import Oid
from ...model.series import Series
from ..state import make_engine, read_stack, require_movable
from .knockons import KnockOns
from .resolutions import Resolutions
from .settle import RefreshResult, end
from .start import marked, resolver
from .stopped import State

ROUTE = "undefer"


def waiting(series: Series, names: Sequence[str]) -> list[str]:
    """``names`` and the deferred patches waiting for them, transitively, in series order."""
    wanted = set(names)
    grew = True
    while grew:
        more = {d.name for d in series.deferred.values() if d.root in wanted} - wanted
        grew = bool(more)
        wanted |= more
    return [n for n in series.names if n in wanted]


def bring_back(
    ws: Checkout,
    names: Sequence[str],
    applied_after: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
) -> RefreshResult:
    """Bring the deferred patches ``names`` (and their knock-ons) back; ``applied_after``:
    the patches to have applied afterwards (they and the stack's)."""
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    require_movable(stack)
    if series.base and stack.base != series.base:
        raise RefusedError(
            f"the stack is on {stack.base[:12]}, not on the series base {series.base[:12]}",
            "a deferred patch comes back onto the series base: 'patchstack refresh' first",
        )
    back = waiting(series, names)
    engine = make_engine(ws, series, stack)
    try:
        chain = old_chain(git, engine, series)
        commits = [engine.canonical_commit(k) for k in range(len(chain))]
        where = ws.display(ws.series_path)
        kept = upstream_changes(engine, series, where)
        plan = list(steps(series, chain, real_changes(stack), commits, kept))
        for i, s in enumerate(plan):
            if s.name in back:
                plan[i] = _brought(engine, series, where, s)
        base = Oid(series.base or stack.base)
        state = State(
            old_base=base,
            new_base=base,
            new_ref=None,
            route=ROUTE,
            applied_before=tuple(n for n in series.names if n in applied_after or n in back),
            drop_merged=False,
            steps=tuple(plan),
            undefer=tuple(back),
        )
        labels = ("the series", "where it was made")
        placer = Placer(engine, base, [s.name for s in state.steps])
        knock_ons = KnockOns(ws, state, series, placer)
        records = Resolutions(ws)
        done, conflicts = replay(
            git,
            state.steps,
            0,
            git.tree_of(base),
            labels,
            placer=placer,
            progress=progress,
            resolve=resolver(ws, series, state, records),
            go_on=knock_ons,
            hold=knock_ons.needs,
        )
        done = marked(done, records)

        def check(found: list[Conflict]) -> None:
            _still_waiting(names, found)
            _still_nothing(series, names, back, done)

        head = stack.head
        src = (git.tree_of(head), ())
        return end(
            ws,
            state,
            engine,
            series,
            done,
            src,
            head,
            conflicts,
            knock_ons,
            records,
            records.note,
            check=check,
        )
    finally:
        engine.close()


def _still_waiting(names: Sequence[str], found: Sequence[Conflict]) -> None:
    """Refuse, changing nothing, when a patch named comes back only to be deferred again: a
    knock-on of a patch still missing (exit 1, with its conflict)."""
    for report in found:
        if report.patch in names and report.root:
            why = (
                f"it conflicts because {report.root}, still deferred, is missing"
                if report.kind == KNOCK_ON
                else f"it waits for {report.root}, still deferred, and with it applied still"
                " conflicts"
            )
            raise ConflictError(
                f"{report.patch} was not applied: {why} (nothing changed)",
                report,
                f"'patchstack push {report.root}' first, then 'patchstack push {report.patch}'",
            )


def _still_nothing(
    series: Series, names: Sequence[str], back: Sequence[str], done: Sequence[Done]
) -> None:
    """Refuse, changing nothing, when a patch named was deferred as a no-op of a patch that
    stays deferred (``# deferred: NAME C after ROOT``) and still changes nothing: bringing it
    back alone would apply nothing (it exited 0, calling it 'unknown')."""
    empty = {d.name for d in done if d.upstream}
    for name in names:
        mark = series.deferred.get(name)
        root = mark.root if mark else None
        if name in empty and root and root in series.deferred and root not in back:
            raise RefusedError(
                f"{name} was not applied: it changes nothing without {root}, still deferred"
                " (nothing changed)",
                f"'patchstack push {root}' first, then 'patchstack push {name}'",
            )


def _brought(engine: Engine, series: Series, where: str, step: Step) -> Step:
    """The step of a deferred patch coming back: its deferral commit's change, proven its
    patch file's (`engine.claims`)."""
    commit = step.commit or ""
    if not commit or not engine.git.has_objects([commit])[commit]:
        raise PatchstackError(
            f"the change of the deferred patch '{step.name}' ({commit[:12]}) is not in this"
            " repository",
            "fetch it from the clone that deferred it, or delete the patch and capture it again",
        )
    mark = series.deferred[step.name]
    before, after = deferred_change(engine, series, where, mark)
    return replace(step, before=before, after=after, deferred=False)
