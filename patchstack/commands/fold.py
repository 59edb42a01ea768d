"""``fold NAME --into TARGET``: one patch from two. The result has TARGET's name, tag, place,
author and date; its description is TARGET's, then what NAME's message adds (its subject and
the paragraphs TARGET does not already have). Both must be applied, or both unapplied: the
tree after the fold is then the tree before. NAME's change is carried to TARGET's place by
three-way merge first, as ``move`` would; NAME's file is removed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..engine.chain import Engine
from ..errors import PatchstackError, RefusedError
from ..model import fields, message
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..model.series import Series
from .reorder import Change, Part, parts_in_order, publish_reorder
from .reword import mail_of
from .state import read_stack


@dataclass(frozen=True)
class FoldResult:
    name: str
    target: str
    applied: bool
    head: Oid
    rewritten: tuple[str, ...]


def fold(ws: Checkout, name_text: str, target_text: str, discard: bool = False) -> FoldResult:
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    name = resolve_name(series, name_text)
    target = resolve_name(series, target_text)
    if name == target:
        raise PatchstackError(f"cannot fold '{name}' into itself", "name another patch")
    applied = {n: stack.find(n) is not None for n in (name, target)}
    if applied[name] != applied[target]:
        up, down = (name, target) if applied[name] else (target, name)
        raise RefusedError(
            f"'{up}' is applied and '{down}' is not",
            f"push '{down}' or pop '{up}' first, so that the fold changes no tree",
        )
    _tdata, tpatch = ws.read_patch(series.entry(target))
    _ndata, npatch = ws.read_patch(series.entry(name))
    text = message.combined(
        tpatch.message(target.removesuffix(".patch")), npatch.message(name.removesuffix(".patch"))
    )
    # A field both carry (a probe, an upstream status) keeps TARGET's value, once.
    mine = fields.read(tpatch.description, tpatch.fields)
    theirs = {f.key.lower() for f in fields.read(npatch.description, npatch.fields)}
    text = fields.write(text, [(f.key, f.value) for f in mine if f.key.lower() in theirs])
    who, when = tpatch.author, tpatch.date
    if not who or not when:
        ident, now = git.ident()
        who, when = who or ident, when or now
    mail = mail_of(git, text, who, when)
    new_series = series.remove(name)
    both = sorted((target, name), key=series.index)

    def plan(_engine: Engine, changes: Sequence[Change]) -> tuple[Series, list[Part]]:
        carried = tuple(changes[series.index(n)] for n in both)
        on = stack.find(target) is not None
        merged = Part(new_series.entry(target), carried, (target, name), on, mail)
        return new_series, parts_in_order(series, new_series, changes, stack, {target: [merged]})

    done = publish_reorder(ws, "fold", series, stack, plan, (name,), discard=discard)
    return FoldResult(name, target, applied[name], done.head, done.rewritten)
