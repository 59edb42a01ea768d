"""``edit NAME [-m MESSAGE] [--author A] [--probe CMD]``: a patch's subject, description,
author and probe.

The patch file gets a new header and description, made by ``format-patch`` (git's encoding of
names and subjects), in front of its diff part, which keeps its bytes. Applied, its commit and
the applied ones above it are made again with the very same trees. Without ``-m`` the message
is edited in git's editor, with git's conventions (``#`` lines dropped; empty aborts).
`rewrite_message` is that change for every command that edits a patch's message (``upstream``
too); the probe and the upstream status are fields of it (`model.fields`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model import fields, message
from ..model.ids import Oid
from ..model.patchfile import Patch, parse_patch
from ..model.selection import resolve_name
from ..model.series import Series
from ..transaction import FileWrite, Plan, publish
from .reword import Reword, mail_of, reword
from .state import read_stack, require_movable


@dataclass(frozen=True)
class EditResult:
    name: str
    subject: str
    changed: bool
    applied: bool
    head: Oid


def _patch(ws: Checkout, series: Series, text: str) -> tuple[str, bytes, Patch]:
    name = resolve_name(series, text)
    data, patch = ws.read_patch(series.entry(name))
    return name, data, patch


def ask_message(ws: Checkout, name_text: str) -> str:
    """The message as the user leaves it in the editor (git's cleanup); empty aborts."""
    name, _data, patch = _patch(ws, ws.load_series(), name_text)
    path = os.path.join(ws.git.git_dir, "PATCHSTACK_EDITMSG")
    current = _with_fields(patch.message(name.removesuffix(".patch")), patch)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(message.template(name, current, patch.author))
    try:
        ws.git.launch_editor(path)
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            edited = message.cleanup(f.read())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    if not edited:
        raise PatchstackError("aborting: the message is empty", "nothing was changed")
    return edited


def edit(
    ws: Checkout,
    name_text: str,
    text: str | None,
    author: str | None,
    probe: str | None = None,
    keep_fields: bool = False,
) -> EditResult:
    """``probe``: the patch's new probe ("" removes it). ``keep_fields``: the fields of the
    old message that ``text`` does not name stay (``-m`` replaces the prose, not the probe or
    the upstream status; what is left in the editor is taken as it is)."""
    if text is None and author is None and probe is None:
        raise PatchstackError("give a message (-m), an author (--author) or a probe (--probe)")
    if author is not None:
        problem = message.author_problem(author)
        if problem:
            raise PatchstackError(problem, "e.g. --author 'Ada Lovelace <ada@example.org>'")
    probe = fields.clean_probe(probe)
    if text is not None:
        subject, description = message.split(text)
        if not subject:
            raise PatchstackError("aborting: the message is empty", "nothing was changed")
        text = message.guard_diff_starts(message.join(subject, description))

    def compose(current: str, patch: Patch) -> str:
        new = current if text is None else text
        if text is not None and keep_fields:
            new = _carry_fields(current, _with_fields(new, patch))
        if probe is not None:
            new = fields.write(new, [(fields.PROBE, probe or None)])
        return new

    return rewrite_message(ws, name_text, compose, author, "edit")


def rewrite_message(
    ws: Checkout,
    name_text: str,
    compose: Callable[[str, Patch], str],
    author: str | None = None,
    operation: str = "edit",
) -> EditResult:
    """Give a patch the message ``compose`` makes of its current one (subject, description,
    header fields) and its parse, and ``author``: the patch file's header and description
    are made again by ``format-patch`` in front of its diff part, which keeps its bytes;
    applied, its commit and the ones above are made again with the very same trees. One
    journalled change (``operation`` in the log)."""
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    name, data, patch = _patch(ws, series, name_text)
    entry = series.entry(name)
    fallback = name.removesuffix(".patch")
    new_data = with_message(ws, name, data, patch, compose, author)
    fresh = parse_patch(new_data, ws.display(ws.patch_path(name)), entry.strip_level)
    applied = stack.find(name) is not None
    if new_data == data:
        return EditResult(name, fresh.subject or fallback, False, applied, stack.head)
    head = stack.head
    if applied:
        require_movable(stack)
        change = Reword(name, entry.tag, fresh.message(fallback), author)
        head = reword(git, stack, {name: change})
    publish(ws, Plan(operation, stack.head, head, (FileWrite(ws.patch_path(name), new_data),)))
    return EditResult(name, fresh.subject or fallback, True, applied, head)


def with_message(
    ws: Checkout,
    name: str,
    data: bytes,
    patch: Patch,
    compose: Callable[[str, Patch], str],
    author: str | None = None,
) -> bytes:
    """The patch file ``data`` (of patch ``name``) with the message ``compose`` makes of its
    current one: header and description made again by ``format-patch``, the diff part kept
    byte for byte."""
    who = author or patch.author
    when = patch.date
    if not who or not when:
        ident, now = ws.git.ident()
        who, when = who or ident, when or now
    text = compose(_with_fields(patch.message(name.removesuffix(".patch")), patch), patch)
    mail = mail_of(ws.git, text, who, when)
    return message.splice(mail, data, message.line_offset(data, patch.diff_lineno))


def _with_fields(text: str, patch: Patch) -> str:
    """The fields of a patch file's header block (DEP-3's Origin, Bug, Forwarded...; SUSE's
    Patch-mainline) have no place in a mail header: they are kept as the last paragraph of
    the description."""
    lines = [f"{key}: {value}" for key, value in patch.fields]
    missing = [f for f in lines if f not in text]
    return text.rstrip("\n") + "\n\n" + "\n".join(missing) + "\n" if missing else text


def _carry_fields(old: str, new: str) -> str:
    """``new`` with the fields of ``old`` that it does not name."""
    _s, old_description = message.split(old)
    _s, new_description = message.split(new)
    named = {f.key.lower() for f in fields.read(new_description)}
    carried = [(f.key, f.value) for f in fields.read(old_description) if f.key.lower() not in named]
    return fields.write(new, carried) if carried else new
