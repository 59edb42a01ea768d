"""``move NAME (--before X | --after X | --top | --bottom)``: reorder the series.

Every patch keeps its applied state. The new order is built as push places patches: each
change carried by a three-way merge (`reorder`); when it cannot be built, nothing
changes and the conflict report names the two patches. A move across patches of other files
(a move that commutes) keeps every tree and every patch file's bytes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..engine.chain import Engine
from ..errors import PatchstackError
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..model.series import Series
from .reorder import Change, Part, parts_in_order, publish_reorder
from .state import read_stack


@dataclass(frozen=True)
class MoveResult:
    name: str
    before: tuple[str, ...]  # the series order before
    after: tuple[str, ...]
    head: Oid
    rewritten: tuple[str, ...]  # patch files written again (their change moved)

    @property
    def moved(self) -> bool:
        return self.before != self.after


def move(
    ws: Checkout,
    name_text: str,
    before: str | None = None,
    after: str | None = None,
    top: bool = False,
    bottom: bool = False,
    discard: bool = False,
) -> MoveResult:
    if sum((before is not None, after is not None, top, bottom)) != 1:
        raise PatchstackError("give one of --before X, --after X, --top, --bottom")
    series = ws.load_series()
    stack = read_stack(ws.git)
    name = resolve_name(series, name_text)
    names = series.names
    if top:
        after = names[-1]
    elif bottom:
        before = names[0]
    anchor = resolve_name(series, before if before is not None else after or "")
    if anchor == name:
        if top or bottom:
            return MoveResult(name, names, names, stack.head, ())
        raise PatchstackError(f"cannot move '{name}' next to itself", "name another patch")
    if before is not None:
        new_series = series.moved(name, before=anchor)
    else:
        new_series = series.moved(name, after=anchor)
    if new_series.names == names:
        return MoveResult(name, names, names, stack.head, ())

    def plan(_engine: Engine, changes: Sequence[Change]) -> tuple[Series, list[Part]]:
        return new_series, parts_in_order(series, new_series, changes, stack)

    done = publish_reorder(ws, "move", series, stack, plan, discard=discard)
    return MoveResult(name, names, new_series.names, done.head, done.rewritten)
