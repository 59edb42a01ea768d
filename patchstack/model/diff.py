"""The values a patch file is read into: a `Patch` of `FileDiff` of `Hunk` (see `patchfile`
for reading). Paths are text decoded as UTF-8 with surrogate escapes, so any bytes survive."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: tuple[str, ...]  # each starts with ' ', '-', '+' or '\\' (no newline at end)
    lineno: int

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln.startswith("-"))

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln.startswith("+"))

    @property
    def preimage(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln[:1] in (" ", "-", ""))


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    old_mode: str | None = None
    new_mode: str | None = None
    old_id: str | None = None
    new_id: str | None = None
    binary: bool = False
    renamed: bool = False
    copied: bool = False
    hunks: tuple[Hunk, ...] = ()
    lineno: int = 0

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.old_path, self.new_path) if p))

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(len(h.removed) for h in self.hunks)


@dataclass(frozen=True)
class Patch:
    subject: str | None
    description: str
    author: str | None = None  # "Name <email>"
    date: str | None = None  # as written in the header (RFC 2822)
    files: tuple[FileDiff, ...] = ()
    diff_lineno: int = 1
    # The fields of the header block other than description and author (DEP-3's Origin,
    # Bug-Debian, Forwarded, Last-Update..., SUSE's Patch-mainline, Yocto's Upstream-Status,
    # a probe), as (name as written, value), in file order; `fields` reads them with those of
    # the description.
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for f in self.files for p in f.paths))

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def message(self, fallback_subject: str) -> str:
        return commit_text(self.subject, self.description, fallback_subject)


def commit_text(subject: str | None, description: str, fallback_subject: str) -> str:
    """The commit message of a patch: subject, blank line, description."""
    return (subject or fallback_subject) + ("\n\n" + description if description else "") + "\n"


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")
