"""The patch file: one named diff, read strictly.

patchstack writes patches in ``git format-patch`` form (a From/Date/Subject header, the
description, ``---``, a diffstat, and a diff with ``a/`` ``b/`` prefixes and full ``index``
lines); `git.Git.format_patch` produces the bytes, so this module only reads.

Reading accepts that form (folded and MIME-encoded headers included), plain ``diff -u`` and quilt
patches with or without a header, and DEP-3 style description headers. Reading is strict where
tools are lax: a hunk whose line counts disagree with its header, a garbage ``@@`` line, a
truncated hunk, a binary change without data, two mails in one file or a file with no change
at all is an `InputError` naming the file and line. (unidiff, for one, reads a garbage hunk
header as "no hunks"; git would refuse the patch later with a less useful message.)

The text is decoded as UTF-8 with ``surrogateescape``, so any bytes survive a round trip.
"""

from __future__ import annotations

import re

from ..errors import InputError
from .conflict import unresolved_in_patch
from .diff import FileDiff, Hunk, Patch, decode
from .diffparse import is_file_start, parse_diff

__all__ = ["FileDiff", "Hunk", "Patch", "decode", "parse_patch"]

_HEADER_RE = re.compile(r"([A-Za-z][A-Za-z0-9-]*):(?: |\Z)")


_SUBJECT_PREFIX_RE = re.compile(r"^(\s*\[[^\]]*\])+\s*")


def parse_patch(data: bytes, path: str, strip: int = 1) -> Patch:
    """Parse and validate a patch. ``path`` names the file in error messages."""
    lines = decode(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError(path, 1, "the patch is empty", "a patch needs at least one file diff")
    start = _find_diff_start(lines)
    unresolved_in_patch(lines, len(lines) if start is None else start, path)
    if start is None:
        raise InputError(path, 1, "no diff found in the patch", "a patch needs a unified diff")
    author, date, subject, description, found = _parse_head(lines[:start], path)
    files = parse_diff(lines, start, path, strip)
    if not files:
        raise InputError(path, start + 1, "no file diff found", "a patch needs a unified diff")
    return Patch(subject, description, author, date, tuple(files), start + 1, found)


def _find_diff_start(lines: list[str]) -> int | None:
    for i in range(len(lines)):
        if is_file_start(lines, i):
            # quilt/svn "Index:" and "====" lines, and a "diff -u ..." command line, belong
            # to the file diff rather than to the description.
            j = i
            while j > 0 and (
                lines[j - 1].startswith(("Index: ", "====", "diff "))
                and not lines[j - 1].startswith("diff --git ")
            ):
                j -= 1
            return j
    return None


_DEP3_FIELDS: tuple[str, ...] = ("reviewed-by", "acked-by")


def _is_dep3_field(key: str) -> bool:
    """DEP-3's fields, SUSE's and Yocto's upstream status, and the probe (`fields`)."""
    from . import fields  # (parsed files are cached: a command that parses none needs not it)

    return key in _DEP3_FIELDS or fields.known(key)


def _parse_head(
    head: list[str], path: str
) -> tuple[str | None, str | None, str | None, str, tuple[tuple[str, str], ...]]:
    i = 0
    if head and head[0].startswith("From ") and not head[0].startswith("From: "):
        i = 1  # the mbox separator line
    headers: dict[str, str] = {}
    spelled: dict[str, str] = {}
    where: dict[str, int] = {}
    if i < len(head) and _HEADER_RE.match(head[i]):
        key = None
        while i < len(head) and head[i].strip():
            line = head[i].rstrip("\r")
            m = _HEADER_RE.match(line)
            if line[:1] in (" ", "\t") and key:
                if key == "description":
                    # DEP-3 continuation: " ." stands for an empty line.
                    more = line.strip()
                    headers[key] += "\n" + ("" if more == "." else more)
                else:
                    headers[key] += " " + line.strip()
            elif m:
                key = m.group(1).lower()
                if key not in headers:
                    headers[key] = line[m.end() :].strip()
                    spelled[key] = m.group(1)
                    where[key] = i + 1
            else:
                break
            i += 1
    body = head[i:]
    # The description ends at the last "---" line (what follows is the diffstat).
    cut = max((k for k, ln in enumerate(body) if ln.rstrip("\r") == "---"), default=None)
    if cut is not None:
        body = body[:cut]
    subject = headers.get("subject")
    description = "\n".join(ln.rstrip("\r") for ln in body).strip("\n")
    if subject is None and "description" in headers:  # DEP-3
        first, _, rest = headers["description"].partition("\n")
        subject = first
        description = "\n".join(p for p in (rest.strip(), description) if p)
    if subject is not None:
        subject = _SUBJECT_PREFIX_RE.sub("", _decode_header(subject)).strip() or None
    author = headers.get("from") or headers.get("author")
    if author is not None:
        author = _decode_header(author)
    found = tuple((spelled[k], v) for k, v in headers.items() if _is_dep3_field(k))
    date = headers.get("date")
    for key, value in (("from" if headers.get("from") else "author", author), ("date", date)):
        if value is not None and _CONTROL_RE.search(value):
            raise InputError(
                path,
                where[key],
                f"the {spelled[key]}: header holds a control character",
                "the author and the date become a commit's identity; correct the header",
            )
    return author, date, subject, description, found


_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _decode_header(value: str) -> str:
    if "=?" not in value:
        return value
    import email.errors  # (only for an encoded header: every command reads patch files)
    import email.header

    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (UnicodeDecodeError, LookupError, email.errors.HeaderParseError):
        return value
