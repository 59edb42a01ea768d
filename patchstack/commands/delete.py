"""``delete NAME...`` (``drop``): take patches out of the stack when applied (as ``pop
--only`` does, the patches above them carried by three-way merge), out of the series, and
remove their files (``--keep-file`` keeps them). A later patch that cannot do without one of
them stops the command before anything changes, with the conflict report naming both."""

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
class DeleteResult:
    deleted: tuple[str, ...]
    popped: tuple[str, ...]  # those that were applied
    kept_files: bool
    head: Oid
    rewritten: tuple[str, ...]


def delete(
    ws: Checkout, name_texts: Sequence[str], keep_file: bool = False, discard: bool = False
) -> DeleteResult:
    if not name_texts:
        raise PatchstackError("name the patches to delete", "see 'patchstack series'")
    series = ws.load_series()
    stack = read_stack(ws.git)
    names = tuple(dict.fromkeys(resolve_name(series, t) for t in name_texts))
    popped = tuple(n for n in stack.names if n in names)
    new_series = series
    for name in names:
        new_series = new_series.remove(name)

    def plan(_engine: Engine, changes: Sequence[Change]) -> tuple[Series, list[Part]]:
        return new_series, parts_in_order(series, new_series, changes, stack)

    done = publish_reorder(ws, "delete", series, stack, plan, names, keep_file, discard)
    return DeleteResult(names, popped, keep_file, done.head, done.rewritten)
