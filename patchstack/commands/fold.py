"""``fold NAME --into TARGET``: one patch from two. The result has TARGET's name, tag, place,
author and date; its description is TARGET's, then what NAME's message adds (its subject and
the paragraphs TARGET does not already have). Both must be applied, or both unapplied: the
tree after the fold is then the tree before. NAME's change is carried to TARGET's place by
three-way merge first, as ``move`` would; NAME's file is removed."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..model import message
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..transaction import Plan, publish
from .rechain import Part, old_changes, rechain
from .restack import mail_of
from .state import make_engine, read_stack, require_movable


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
    if stack.applied:
        require_movable(stack)
    _tdata, tpatch = ws.read_patch(series.entry(target))
    _ndata, npatch = ws.read_patch(series.entry(name))
    text = message.combined(
        tpatch.message(target.removesuffix(".patch")), npatch.message(name.removesuffix(".patch"))
    )
    who, when = tpatch.author, tpatch.date
    if not who or not when:
        ident, now = git.ident()
        who, when = who or ident, when or now
    mail = mail_of(git, text, who, when)
    new_series = series.remove(name)
    engine = make_engine(ws, series, stack)
    try:
        changes = old_changes(ws, series, engine)
        both = sorted((target, name), key=series.index)
        parts = []
        for e in new_series.entries:
            is_on = stack.find(e.name) is not None
            if e.name == target:
                carried = tuple(changes[series.index(n)] for n in both)
                parts.append(Part(e, carried, (target, name), is_on, mail))
            else:
                parts.append(Part(e, (changes[series.index(e.name)],), (e.name,), is_on))
        done = rechain(
            ws,
            stack,
            engine,
            changes,
            new_series,
            parts,
            (name,),
            verb="patchstack fold",
            discard=discard,
        )
    finally:
        engine.close()
    publish(ws, Plan("fold", stack.head, done.head, done.files))
    return FoldResult(name, target, applied[name], done.head, done.rewritten)
