"""patchstack's commit trailers: the one writer and the one reader.

An applied patch is a commit whose message ends with a paragraph of two trailers::

    <subject>

    <description>

    Patchstack-Patch: <name>
    Patchstack-Tag: <tag>

The reader looks only at the last paragraph of a message (git's trailer block), so a
description that mentions a trailer, a multi-line body, or a body whose last paragraph holds
other trailers (``Signed-off-by:``) is read right; keys are case-insensitive and the last
occurrence of a key wins, as ``git interpret-trailers`` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PATCH = "Patchstack-Patch"
TAG = "Patchstack-Tag"
# A regular expression (git's extended syntax) matching messages of patch commits.
PATCH_COMMIT_GREP = f"^{PATCH}: "
_OURS_RE = re.compile(rf"({PATCH}|{TAG})[ \t]*:[ \t]*(.*?)[ \t]*\Z", re.IGNORECASE)


@dataclass(frozen=True)
class Trailers:
    patch: str | None = None
    tag: str | None = None


def _last_paragraph(lines: list[str]) -> tuple[int, int]:
    """[start, end) of the last paragraph of ``lines`` (trailing blank lines excluded)."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start = end
    while start and lines[start - 1].strip():
        start -= 1
    return start, end


def read(message: str) -> Trailers:
    lines = message.split("\n")
    start, end = _last_paragraph(lines)
    if start == 0:  # the subject alone is never a trailer block
        return Trailers()
    found: dict[str, str] = {}
    for line in lines[start:end]:
        m = _OURS_RE.match(line)
        if m:
            found[m.group(1).lower()] = m.group(2)
    return Trailers(found.get(PATCH.lower()) or None, found.get(TAG.lower()) or None)


def strip(message: str) -> str:
    """``message`` without patchstack's trailers (the paragraph goes when nothing else is
    left in it), ending in one newline."""
    lines = message.rstrip("\n").split("\n")
    start, end = _last_paragraph(lines)
    if start == 0:
        return message.rstrip("\n") + "\n"
    kept = [ln for ln in lines[start:end] if not _OURS_RE.match(ln)]
    head = lines[:start]
    if not kept:
        while head and not head[-1].strip():
            head.pop()
    return "\n".join(head + kept).rstrip("\n") + "\n"


def write(message: str, patch: str, tag: str) -> str:
    """The commit message of patch ``patch``: ``message`` (any trailers of ours replaced) and
    the two trailers as its last paragraph."""
    if "\n" in patch or "\n" in tag:
        raise ValueError("a trailer value cannot hold a newline")
    body = strip(message)
    return f"{body}\n{PATCH}: {patch}\n{TAG}: {tag}\n"


def strip_from_mail(data: bytes) -> bytes:
    """``format-patch`` output of a patch commit without patchstack's trailers: they end the
    message, just before the ``---`` line that starts the diffstat."""
    lines = data.split(b"\n")
    diff = next((i for i, ln in enumerate(lines) if ln.startswith(b"diff --git ")), len(lines))
    cut = max((i for i in range(diff) if lines[i] == b"---"), default=None)
    if cut is None:
        return data
    end = cut
    start = end
    while start and lines[start - 1].strip():
        start -= 1
    ours = [i for i in range(start, end) if _OURS_RE.match(lines[i].decode("utf-8", "replace"))]
    if not ours:
        return data
    kept = [lines[i] for i in range(start, end) if i not in ours]
    head = lines[:start]
    if not kept:
        while head and not head[-1].strip():
            head.pop()
    return b"\n".join(head + kept + lines[end:])
