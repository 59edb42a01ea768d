"""``rename OLD NEW``: a patch under a new name. Its file keeps its bytes; applied, its commit
(and every applied commit above it) is made again with the new name in its trailers and the
very same tree."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..transaction import FileWrite, Plan, publish
from .naming import new_patch_name, require_free
from .refresh.resolutions import Resolutions
from .reword import Reword, reword
from .state import read_stack, require_movable


@dataclass(frozen=True)
class RenameResult:
    old: str
    new: str
    applied: bool
    head: Oid


def rename(ws: Checkout, old_text: str, new_text: str) -> RenameResult:
    series = ws.load_series()
    stack = read_stack(ws.git)
    old = resolve_name(series, old_text)
    new = new_patch_name(new_text)
    require_free(ws, series, new, renaming=old)
    entry = series.entry(old)
    data, _patch = ws.read_patch(entry)
    head = stack.head
    applied = stack.find(old) is not None
    if applied:
        require_movable(stack)
        head = reword(ws.git, stack, {old: Reword(new, entry.tag)})
    records = Resolutions(ws)
    records.all()  # checked before anything is written
    new_series = series.renamed(old, new)
    files = (
        FileWrite(ws.patch_path(new), data),
        FileWrite(ws.patch_path(old), None),
        FileWrite(ws.series_path, new_series.format().encode("utf-8", "surrogateescape")),
    )
    publish(ws, Plan("rename", stack.head, head, files))
    # Its recorded resolutions match by content either way; they name it for 'resolutions'.
    records.renamed(old, new)
    return RenameResult(old, new, applied, head)
