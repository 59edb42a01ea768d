"""Which later patches a replay leaves out with a patch it leaves out (`engine.needs`), for
``refresh``, ``push NAME`` and ``check`` alike, and where each would have been placed, for
their reports (`engine.triage`: a knock-on of that patch, or primary when with it in place it
still conflicts)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ...checkout import Checkout
from ...engine.needs import Held, Memory, Needs
from ...engine.replay import Done, Step
from ...engine.triage import Waiting
from ...git import MergeResult
from ...model.ids import Oid
from ...model.series import Series


def needs(
    ws: Checkout,
    series: Series,
    steps: Sequence[Step],
    missing: Iterable[str] = (),
    back: Collection[str] = (),
    memory: Memory | None = None,
    merges: dict[tuple[str, ...], MergeResult] | None = None,
) -> Needs:
    """What tells which later patch needs a patch a replay of ``steps`` leaves out
    (`engine.needs`), for ``refresh``, ``push NAME`` (``back``: the patches it brings back)
    and ``check``; ``missing``: the patches left out already (a replay resumed); ``memory``:
    where its states are kept from one command for the next (`engine.needs.Needs`);
    ``merges``: its merges' memo (the replay's proofs, `KnockOns.memo`)."""
    outside = set(series.deferred) | set(series.upstream) | set(back)
    links = {s.name for s in steps if s.name not in outside}

    def paths_of(name: str) -> tuple[str, ...]:
        return ws.proven_bytes(series.entry(name))[1].paths

    waits = _waits(ws, series, back)
    return Needs(ws.git, steps, paths_of, links, missing, waits, memory, merges)


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


def waiting(
    held: Sequence[Held],
    steps: Sequence[Step],
    done: Sequence[Done],
    start: Oid,
    missing: Sequence[str],
) -> list[Waiting]:
    """The patches ``held`` to be triaged (`engine.triage.Waiting`), each with the tree it
    would have been placed on: the last of ``done`` (the replay's placed patches, their trees
    known) before it, else ``start`` (the tree the replay began on); ``missing``: every patch
    the replay left out, the ones before each going with it."""
    order = {s.name: i for i, s in enumerate(steps)}
    placed = sorted((order[d.name], d.tree) for d in done if d.name in order)
    out = []
    for h in held:
        at = order[h.name]
        onto = next((t for i, t in reversed(placed) if i < at), start)
        before = sorted((n for n in set(missing) if order.get(n, at) < at), key=order.__getitem__)
        out.append(Waiting(h.name, onto, h.root, h.paths, h.note, tuple(before)))
    return out
