"""Which later patches a replay leaves out with a patch it leaves out (`engine.needs`), for
``refresh``, ``push NAME`` and ``check`` alike, and their reports: knock-ons of that patch."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ...checkout import Checkout
from ...engine.needs import Held, Needs
from ...engine.replay import Step
from ...engine.triage import KNOCK_ON
from ...model.conflict import Conflict
from ...model.series import Series


def needs(
    ws: Checkout,
    series: Series,
    steps: Sequence[Step],
    missing: Iterable[str] = (),
    back: Collection[str] = (),
) -> Needs:
    """What tells which later patch needs a patch a replay of ``steps`` leaves out
    (`engine.needs`), for ``refresh``, ``push NAME`` (``back``: the patches it brings back)
    and ``check``; ``missing``: the patches left out already (a replay resumed)."""
    outside = set(series.deferred) | set(series.upstream) | set(back)
    links = {s.name for s in steps if s.name not in outside}

    def paths_of(name: str) -> tuple[str, ...]:
        return ws.proven_bytes(series.entry(name))[1].paths

    return Needs(ws.git, steps, paths_of, links, missing, _waits(ws, series, back))


def _waits(ws: Checkout, series: Series, back: Collection[str]) -> dict[str, tuple[str, str, str]]:
    """Each knock-on brought back -> (its root, the root's change where it was deferred)."""
    git = ws.git
    marks = series.deferred
    roots = {n: r for n in back if (r := marks[n].root) and r in marks} if back else {}
    commits = sorted({marks[r].commit for r in roots.values()})
    known = git.has_objects(commits) if commits else {}
    out: dict[str, tuple[str, str, str]] = {}
    for name, root in roots.items():
        commit = marks[root].commit
        if known.get(commit):
            before, after = git.trees_of([commit + "^", commit])
            out[name] = (root, before, after)
    return out


def held_reports(held: Sequence[Held]) -> list[Conflict]:
    """The reports of the patches left out for needing a missing one: knock-ons of it."""
    return [
        Conflict(h.name, h.paths, kind=KNOCK_ON, root=h.root, note=h.note, held=True) for h in held
    ]
