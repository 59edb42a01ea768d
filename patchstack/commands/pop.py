"""``pop``: unapply patches; ``--only``/``--except`` take them out of the middle of the stack
and keep the rest applied (rebuilt by the engine, as ``push`` would build them)."""

from __future__ import annotations

from ..checkout import Checkout
from ..model import selection
from ..model.selection import Selector
from .push import MoveResult, Progress, move_stack, unchanged
from .state import read_stack, require_movable


def pop(
    ws: Checkout, sel: Selector, progress: Progress = None, discard: bool = False
) -> MoveResult:
    series = ws.load_series()
    stack = read_stack(ws.git)
    require_movable(stack)
    target = selection.pop_target(series, stack.names, sel)
    if tuple(target) == stack.names:
        return unchanged(stack)
    return move_stack(ws, series, stack, target, None, "pop", progress, discard)
