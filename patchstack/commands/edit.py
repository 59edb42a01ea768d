"""``edit NAME [-m MESSAGE] [--author A]``: a patch's subject, description and author.

The patch file gets a new header and description, made by ``format-patch`` (git's encoding of
names and subjects), in front of its diff part, which keeps its bytes. Applied, its commit and
the applied ones above it are made again with the very same trees. Without ``-m`` the message
is edited in git's editor, with git's conventions (``#`` lines dropped; empty aborts).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model import message
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
    current = patch.message(name.removesuffix(".patch"))
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


def edit(ws: Checkout, name_text: str, text: str | None, author: str | None) -> EditResult:
    if text is None and author is None:
        raise PatchstackError("give a message (-m) or an author (--author)")
    if author is not None:
        problem = message.author_problem(author)
        if problem:
            raise PatchstackError(problem, "e.g. --author 'Ada Lovelace <ada@example.org>'")
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    name, data, patch = _patch(ws, series, name_text)
    entry = series.entry(name)
    fallback = name.removesuffix(".patch")
    if text is not None:
        subject, description = message.split(text)
        if not subject:
            raise PatchstackError("aborting: the message is empty", "nothing was changed")
        text = message.join(subject, description)
    who = author or patch.author
    when = patch.date
    if not who or not when:
        ident, now = git.ident()
        who, when = who or ident, when or now
    text = _with_fields(text or patch.message(fallback), patch)
    mail = mail_of(git, text, who, when)
    new_data = message.splice(mail, data, message.line_offset(data, patch.diff_lineno))
    fresh = parse_patch(new_data, ws.display(ws.patch_path(name)), entry.strip_level)
    applied = stack.find(name) is not None
    if new_data == data:
        return EditResult(name, fresh.subject or fallback, False, applied, stack.head)
    head = stack.head
    if applied:
        require_movable(stack)
        change = Reword(name, entry.tag, fresh.message(fallback), author)
        head = reword(git, stack, {name: change})
    publish(ws, Plan("edit", stack.head, head, (FileWrite(ws.patch_path(name), new_data),)))
    return EditResult(name, fresh.subject or fallback, True, applied, head)


def _with_fields(text: str, patch: Patch) -> str:
    """DEP-3 fields of a patch file not in mail form (Origin, Bug, Forwarded...) have no
    place in a mail header: they are kept as the last paragraph of the description."""
    fields = [f"{key}: {value}" for key, value in patch.fields]
    missing = [f for f in fields if f not in text]
    return text.rstrip("\n") + "\n\n" + "\n".join(missing) + "\n" if missing else text
