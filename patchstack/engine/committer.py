"""The one committer: who and when every commit made from a patch file says, whichever way
writes it, so that one patch file gives one commit id.

A patch's commit has the author and date of its file's header (``From:``, ``Date:``); where
the header has none, the engine's default (the user's identity, the canonical base's date).
The committer is the author, so equal inputs give equal ids. Two ways write commits:
``git commit-tree`` (git parses the identity and the date itself) and a ``fast-import``
stream, which writes them as given. A stream may write a commit only where its bytes are
provably those commit-tree writes:

- the name and the email have nothing git strips from their ends (its "crud": whitespace and
  control characters, ``. , : ; < > " \\ '``; git 2.42 stopped stripping a trailing dot, so a
  dot is left to whichever git runs) and no ``<``, ``>`` or newline inside;
- the date is git's raw ``<epoch> <tz>`` as git writes it back (`git.rawobjects.written_as_given`:
  git refuses an epoch before 1973 or from 2100 on and rewrites a leading zero, ``-0000`` and a
  zone beyond 23:59) or the RFC 2822 form ``format-patch`` writes, which git and Python read
  alike.

Everything else goes through commit-tree: its rules are git's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import GitFailure, InputError
from ..git import FastImport, Git
from ..git.fastimport import Change
from ..git.rawobjects import DATE_END, written_as_given
from ..model.ids import Oid
from .cache import Cache
from .loaded import LoadedPatch, commit_message

CRUD = frozenset(" .,:;<>\"\\'")
_RFC2822 = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-3]?\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r" (19[7-9]\d|2\d\d\d) [0-2]\d:[0-5]\d:[0-5]\d [+-][01]\d[0-5]\d"
)


def _clean(part: str) -> bool:
    """Nothing git's ident rules would strip or drop."""
    if not part or "<" in part or ">" in part or "\n" in part:
        return False
    return all(c not in CRUD and ord(c) > 32 for c in (part[0], part[-1]))


def streamable_author(author: str) -> bool:
    """Would commit-tree write ``author`` ("Name <email>") exactly as given?"""
    m = re.fullmatch(r"(.*) <(.*)>", author)
    return bool(m) and _clean(m.group(1)) and _clean(m.group(2))  # type: ignore[union-attr]


def raw_date(text: str) -> str | None:
    """A date as git's raw "<epoch> <tz>", when git would read ``text`` as this very value
    (its raw form, or the RFC 2822 form format-patch writes); None otherwise."""
    text = text.strip()
    if written_as_given(text):
        return text
    if not _RFC2822.fullmatch(text) or text.endswith("-0000"):
        return None
    import email.utils  # (imports the socket module: only for a date in this form)

    parsed = email.utils.parsedate_tz(text)
    if parsed is None or parsed[9] is None:
        return None
    offset, epoch = parsed[9], email.utils.mktime_tz(parsed)
    if not 0 <= epoch < DATE_END:  # git refuses it, or writes a negative one unsigned
        return None
    if offset == -60:  # -0001: git writes +0000 (it keeps -1 minute as "no zone")
        return None
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{epoch} {sign}{hours:02d}{minutes:02d}"


@dataclass(frozen=True)
class Identity:
    author: str  # "Name <email>" as the header (or the default) gives it
    date: str  # the date text as given
    raw: str | None  # "<epoch> <tz>" when a stream may write this identity; None: commit-tree

    @property
    def key(self) -> str:
        return f"{self.author}\0{self.date}"


class Committer:
    """Makes the commit of a patch on a parent with a tree, by stream or by commit-tree, with
    one identity rule (see the module docstring)."""

    def __init__(self, git: Git, cache: Cache, default: Callable[[], tuple[str, str]]) -> None:
        self.git = git
        self.cache = cache
        self.default = default

    def identity(self, lp: LoadedPatch) -> Identity:
        author, date = lp.head.author, lp.head.date
        if not author or not date:
            default_author, default_date = self.default()
            author, date = author or default_author, date or default_date
        when = raw_date(date) if streamable_author(author) else None
        return Identity(author, date, when)

    def streamable(self, lp: LoadedPatch) -> bool:
        return self.identity(lp).raw is not None

    def commit(self, parent: Oid, tree: Oid, lp: LoadedPatch) -> Oid:
        """The commit of ``lp`` with ``tree`` on ``parent``, by ``commit-tree`` (cached)."""
        who = self.identity(lp)
        message = commit_message(lp)
        digest = hashlib.sha1(f"{who.key}\0{message}".encode("utf-8", "surrogateescape"))
        key = f"commit {parent} {tree} {digest.hexdigest()}"
        cached = self.cache.get(key)
        if cached:
            return cached
        try:
            oid = self.git.commit_tree(tree, [parent], message, who.author, who.date)
        except GitFailure as e:
            if "invalid date format" not in e.message or who.date != lp.head.date:
                raise
            found = re.search(rb"^Date:", lp.data.split(b"\n---")[0], re.M)
            line = lp.data.count(b"\n", 0, found.start()) + 1 if found else None
            raise InputError(
                lp.shown or lp.entry.name,
                line,
                f"git cannot read the date {who.date!r}",
                hint="write it as format-patch does ('Date: Tue, 14 Nov 2023 22:13:20 +0100')"
                " or as git's raw '<seconds since 1970> <zone>' from 1973 to 2099",
            ) from None
        self.cache.put(key, oid)
        return oid

    def stream_commit(
        self,
        stream: FastImport,
        parent: str,
        lp: LoadedPatch,
        changes: list[Change],
        named: bool = True,
    ) -> Oid | None:
        """The same commit `commit` makes, written by ``stream`` from ``changes`` (to the
        parent's tree); None when only commit-tree may write its identity."""
        who = self.identity(lp)
        if who.raw is None:
            return None
        message = commit_message(lp).encode("utf-8", "surrogateescape")
        return stream.commit(parent, who.author, who.raw, message, changes, named)

    def chain(self, parent: Oid, items: Sequence[tuple[LoadedPatch, Oid]]) -> list[Oid]:
        """Commits of these (patch, tree) pairs, one on the other from ``parent``: in one
        fast-import stream where it may write them, else by commit-tree; the very commits
        `commit` makes."""
        made: list[Oid] = []
        stream = self.git.fast_import()
        try:
            for lp, tree in items:
                commit = self.stream_commit(stream, parent, lp, [("040000", tree, "")])
                if commit is None:
                    stream.close()  # its commits must be written before git reads them
                    commit = self.commit(parent, tree, lp)
                    stream = self.git.fast_import()
                made.append(commit)
                parent = commit
        finally:
            stream.close()
        return made
