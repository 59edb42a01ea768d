"""``pop``: unapply patches; ``--only``/``--except`` (and ``NAME --alone``) take them out of
the middle of the stack and keep the rest applied (rebuilt by the engine, as ``push`` would
build them)."""

from __future__ import annotations

from dataclasses import replace

from ..checkout import Checkout
from ..model import selection
from ..model.selection import Selector
from .deps import Deps, leaned_on, with_deps
from .push import MoveResult, Progress, move_stack, unchanged
from .state import follow_renames, read_stack, require_movable


def pop(
    ws: Checkout,
    sel: Selector,
    progress: Progress = None,
    discard: bool = False,
    alone: bool = False,
    keep_deps: bool = False,
) -> MoveResult:
    """``alone``: only the patch NAME, not the ones above it; ``keep_deps``: the selected
    patches that a patch staying applied leans on stay too (`deps`)."""
    series = ws.load_series()
    stack = follow_renames(ws, series, read_stack(ws.git))
    require_movable(stack)
    target = selection.pop_target(series, stack.names, sel, alone)
    deps: Deps = ()
    if keep_deps:
        deps = leaned_on(ws, series, target, (n for n in stack.names if n not in target))
        target = with_deps(stack.names, target, deps)
    if tuple(target) == stack.names and not stack.renamed:
        return replace(unchanged(stack), deps=deps)
    return replace(move_stack(ws, series, stack, target, None, "pop", progress, discard), deps=deps)
