"""What a selection leans on: the unselected patches ``push --with-deps`` adds and the ones
``pop --keep-deps`` keeps applied, from the edges of the patch graph (`review.graph`: a patch
leans on an earlier one whose lines it changes, where leaving that one out conflicts)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..checkout import Checkout
from ..model.series import Series

Deps = tuple[tuple[str, str], ...]  # (patch carried along, a patch that leans on it)


def leaned_on(ws: Checkout, series: Series, target: Iterable[str], pool: Iterable[str]) -> Deps:
    """The patches of ``pool`` that ``target`` leans on, directly or through each other, in
    series order, each with a patch that leans on it."""
    from ..review.graph import build, closure  # (only --with-deps and --keep-deps need it)

    graph = build([(e, ws.read_patch(e)[1]) for e in series.entries])
    added = closure(graph, target, pool)
    return tuple((n, added[n]) for n in series.names if n in added)


def with_deps(order: Sequence[str], target: Sequence[str], deps: Deps) -> list[str]:
    """``target`` with ``deps`` put in, in the order of ``order``."""
    wanted = set(target) | {n for n, _by in deps}
    return [n for n in order if n in wanted]
