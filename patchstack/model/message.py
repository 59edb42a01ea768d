"""A patch's message (subject and description) and its place in a patch file.

A patch file in patchstack's form is a mail: a header (``From:``, ``Date:``, ``Subject:``), the
description, a line ``---``, then the diffstat and the diff. Editing the message of a patch
changes the mail part only: `splice` puts a new mail part (made by ``git format-patch``, so
encoding, folding and quoting are git's) in front of the old diff part, byte for byte.

The editing rules are git's (``commit.cleanup=strip``): lines starting with ``#`` are dropped,
trailing whitespace is removed, runs of blank lines become one, and an empty message aborts.
"""

from __future__ import annotations

import re

from .conflict import is_marker
from .diffparse import is_file_start

_AUTHOR_RE = re.compile(r"[^<>\n]*[^<>\s][^<>\n]* <[^<>\s]+>\Z")


def split(message: str) -> tuple[str, str]:
    """(subject, description) of a message whose first paragraph is the subject."""
    text = message.strip("\n")
    subject, _, rest = text.partition("\n\n")
    return " ".join(subject.split()), rest.strip("\n")


def join(subject: str, description: str) -> str:
    """The commit message of a subject and a description (one newline at the end)."""
    return subject + ("\n\n" + description.strip("\n") if description.strip() else "") + "\n"


def guard_diff_starts(message: str) -> str:
    """``message`` with each description line that a patch reader takes for the start of a
    file diff (``diff --git ...``, or ``--- X`` over ``+++ Y``: a diff pasted into a commit
    message), or that git's ``mailinfo`` takes for the end of a message (a bare ``---``,
    ``--- X``, ``diff -``, ``Index: ``: `patch_break`), indented by one space, so that the
    patch file's description ends where its own diff begins, and ``git am`` of an exported
    patch keeps the whole message (it would cut it at the first, and fail on hunk lines
    after it)."""
    head, sep, body = message.partition("\n\n")
    lines = body.split("\n")

    # A lone "=======" underlines a heading; with other markers it is one too.
    bare = any(is_marker(ln, bare_separator=False) for ln in lines)

    def guard(i: int) -> bool:
        return is_file_start(lines, i) or patch_break(lines[i]) or is_marker(lines[i], bare)

    if not any(guard(i) for i in range(len(lines))):
        return message
    guarded = [" " + ln if guard(i) else ln for i, ln in enumerate(lines)]
    return head + sep + "\n".join(guarded)


def patch_break(line: str) -> bool:
    """Whether git's ``mailinfo`` ends a mail's message at ``line`` (its ``patchbreak``)."""
    if line.startswith(("diff -", "Index: ")):
        return True
    if not line.startswith("---"):
        return False
    rest = line[3:]
    if rest[:1] == " " and rest[1:2] and not rest[1:2].isspace():
        return True  # "--- <file>"
    return not rest.strip()  # "---" and whitespace: a separator


def cleanup(text: str) -> str:
    """git's ``strip`` cleanup of an edited message: comments and trailing whitespace go,
    blank runs collapse; "" when nothing is left."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def template(name: str, message: str, author: str | None) -> str:
    """What the editor shows: the message, then comment lines that say what to do."""
    return (
        message.rstrip("\n")
        + "\n\n"
        + f"# The message of patch {name}: the first line is the subject, the rest the\n"
        + "# description. Lines starting with '#' are ignored; an empty message aborts.\n"
        + (f"# Author: {author}\n" if author else "")
    )


def combined(target: str, other: str) -> str:
    """The message of a patch folded from ``target`` and ``other``: target's, then each
    paragraph of ``other`` (its subject first) that target does not already hold."""
    have = {_norm(p) for p in _paragraphs(target)}
    extra = [p for p in _paragraphs(other) if _norm(p) not in have]
    return target.rstrip("\n") + "".join("\n\n" + p for p in extra) + "\n"


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip("\n")) if p.strip()]


def _norm(paragraph: str) -> str:
    return " ".join(paragraph.split())


def author_problem(author: str) -> str | None:
    """Why ``author`` is not "Name <email>", or None."""
    if _AUTHOR_RE.match(author):
        return None
    return f"author '{author}' is not in the form 'Name <email>'"


def _separator(data: bytes) -> int | None:
    """Offset of the ``---`` line that ends the mail part (the last one before the first
    ``diff --git`` line), or None."""
    first_diff = data.find(b"\ndiff --git ")
    limit = len(data) if first_diff < 0 else first_diff + 1
    cut = data.rfind(b"\n---\n", 0, limit)
    return None if cut < 0 else cut + 1


def mail_part(mail: bytes) -> bytes:
    """The header and description of a ``format-patch`` mail, up to its ``---`` line."""
    cut = _separator(mail)
    if cut is None:
        raise ValueError("not a format-patch mail: no '---' line before the diff")
    return mail[:cut]


def mail_parts(data: bytes) -> tuple[bytes, bytes]:
    """A patch file as (header and description, the rest from its ``---`` line); a plain
    diff is all rest."""
    cut = _separator(data)
    return (b"", data) if cut is None else (data[:cut], data[cut:])


def splice(head: bytes, old: bytes, diff_offset: int) -> bytes:
    """A header and description (`mail_part`) in front of ``old``'s diff part (from its
    ``---`` line, or from ``diff_offset`` when ``old`` is a plain diff)."""
    cut = _separator(old)
    rest = old[cut:] if cut is not None and cut <= diff_offset else b"---\n" + old[diff_offset:]
    return head + rest


def keep_head(old: bytes, diff_offset: int, new: bytes) -> bytes:
    """A regenerated patch file (``new``, a ``format-patch`` mail) with ``old``'s header and
    description, byte for byte: every field of the header block survives (SUSE's
    ``Patch-mainline:`` among the mail headers, a DEP-3 quilt header), and only the diff part
    changes. A plain diff with no header at all (``diff_offset`` 0) takes ``new`` whole."""
    cut = _separator(old)
    head = old[:cut] if cut is not None and cut <= diff_offset else old[:diff_offset]
    at = _separator(new)
    if not head.strip() or at is None:
        return new
    return head + new[at:]


def line_offset(data: bytes, lineno: int) -> int:
    """Byte offset of 1-based line ``lineno``."""
    pos = 0
    for _ in range(max(0, lineno - 1)):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            return len(data)
        pos = nxt + 1
    return pos
