"""The bytes ``mktree`` and ``commit-tree`` write, made in process where they are provably
those (`Objects.mktree`, `Objects.commit_tree`); None where git would change, refuse or judge
something itself, and then git writes the object."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .base import encode_path

_MODES = {"100644", "100755", "120000", "040000", "160000"}


def tree_data(entries: Sequence[tuple[str, str, str]], hexsz: int) -> bytes | None:
    """A tree object's bytes in git's order (a folder sorts as its name and a slash), or None
    for what ``mktree`` alone should judge (an unusual mode, a malformed id or name, a name
    twice)."""
    keyed = []
    for mode, oid, name in entries:
        raw = encode_path(name)
        if mode not in _MODES or len(oid) != hexsz or not _HEX.fullmatch(oid):
            return None
        if not raw or b"/" in raw or b"\0" in raw or raw in (b".", b".."):
            return None
        key = raw + (b"/" if mode == "040000" else b"")
        keyed.append((key, mode.lstrip("0").encode() + b" " + raw + b"\0" + bytes.fromhex(oid)))
    keyed.sort(key=lambda k: k[0])
    if len({raw for raw, _ in keyed}) != len(keyed) or len(
        {k.rstrip(b"/") for k, _ in keyed}
    ) != len(keyed):
        return None
    return b"".join(record for _key, record in keyed)


_HEX = re.compile(r"[0-9a-f]+")
# "<seconds> <zone>" as git reads it unchanged: nine or ten digits (git takes a shorter number
# for something else), a zone of hours and minutes.
_DATE = re.compile(r"[1-9][0-9]{8,9} ([+-])(?:[01][0-9]|2[0-3])[0-5][0-9]")
DATE_END = 4102444800  # 2100-01-01: git refuses a date from then on


def written_as_given(date: str) -> bool:
    """Whether ``commit-tree`` writes the raw date ``date`` ("<epoch> <zone>") as given: nine
    or ten digits (git reads fewer as no epoch, and refuses 2100 on), no leading zero, a zone
    of at most 23:59 and not ``-0000`` nor ``-0001`` (git writes +0000 for both: it keeps -1
    minute as "no zone")."""
    m = _DATE.fullmatch(date)
    zoneless = date.endswith((" -0000", " -0001"))
    return m is not None and int(date.split()[0]) < DATE_END and not zoneless


_CRUD = frozenset(b",:;<>\"\\'.")  # what git strips around a name or email, above a space


def commit_data(
    tree: str, parents: Sequence[str], message: str, name: str, email: str, date: str
) -> bytes | None:
    """The bytes ``commit-tree`` writes for these, or None where git would change or refuse
    something (it strips crud around a name, rewrites a zone ``-0000``, re-encodes text that
    is not UTF-8 and refuses a NUL): then git writes it."""
    if not written_as_given(date):
        return None
    for part in (name, email):
        raw = part.encode("utf-8", "surrogateescape")
        ends = (raw[0], raw[-1]) if raw else (0, 0)
        if any(c <= 32 or c in _CRUD for c in ends) or any(c in raw for c in b"<>\n"):
            return None
    who = f"{name} <{email}> {date}"
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    text = f"{head}author {who}\ncommitter {who}\n\n{message}"
    if "\0" in text or any(_nonchar(c) for c in text if ord(c) >= 0xFDD0):
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # (surrogate escapes: bytes that are not UTF-8)
        return None


def _nonchar(c: str) -> bool:
    """What git's UTF-8 check refuses besides malformed bytes (then it re-encodes)."""
    cp = ord(c)
    return 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE or 0xD800 <= cp <= 0xDFFF


def split_ident(author: str) -> tuple[str, str]:
    """("Name", "email") of "Name <email>"."""
    name, _, email = author.rpartition(" <")
    return name, email.rstrip(">")


def write_whole(fd: int, data: bytes, mode: int | None) -> None:
    """``data`` written to the open file ``fd``, closed then, its mode set first unless None:
    with no file object (`Objects.write_loose`: a replay writes thousands; the file object and
    the mode of the throwaway ones cost a fifth, 66 -> 53 us an object on dflash_v2's check)."""
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
