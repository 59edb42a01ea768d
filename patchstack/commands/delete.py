"""``delete NAME...`` (``drop``): take patches out of the stack when applied (as ``pop
--only`` does, the patches above them carried by three-way merge), out of the series, and
remove their files (``--keep-file`` keeps them). A later patch that cannot do without one of
them stops the command before anything changes, with the conflict report naming both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..transaction import Plan, publish
from .rechain import Part, old_changes, rechain
from .state import make_engine, read_stack, require_movable


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
    if stack.applied:
        require_movable(stack)
    new_series = series
    for name in names:
        new_series = new_series.remove(name)
    engine = make_engine(ws, series, stack)
    try:
        changes = old_changes(ws, series, engine)
        parts = [
            Part(e, (changes[series.index(e.name)],), (e.name,), stack.find(e.name) is not None)
            for e in new_series.entries
        ]
        done = rechain(
            ws,
            stack,
            engine,
            changes,
            new_series,
            parts,
            names,
            keep_file,
            "patchstack delete",
            discard,
        )
    finally:
        engine.close()
    publish(ws, Plan("delete", stack.head, done.head, done.files))
    return DeleteResult(names, popped, keep_file, done.head, done.rewritten)
