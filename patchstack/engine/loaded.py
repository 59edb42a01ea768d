"""A patch file as the engine uses it: its series entry, bytes and checked parse."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..model import trailers
from ..model.patchfile import Patch
from ..model.series import Entry


class FileHead(Protocol):
    @property
    def renamed(self) -> bool: ...
    @property
    def copied(self) -> bool: ...


class PatchHead(Protocol):
    """What a commit is made from and what a patch touches: a parsed `Patch`, or the
    `checkout.PatchSummary` of a file proven before."""

    @property
    def subject(self) -> str | None: ...
    @property
    def description(self) -> str: ...
    @property
    def author(self) -> str | None: ...
    @property
    def date(self) -> str | None: ...
    @property
    def paths(self) -> tuple[str, ...]: ...
    @property
    def files(self) -> Sequence[FileHead]: ...
    def message(self, fallback_subject: str) -> str: ...


@dataclass
class LoadedPatch:
    """``parsed``, or ``parse`` to parse it when first wanted: a re-push whose commits are all
    cached, for one, needs only the bytes (already proven, see `checkout.ProvenPatches`), and
    a replay's carried patch only its ``head`` (``summary``, from the same cache)."""

    entry: Entry
    data: bytes
    parsed: Patch | None = None
    shown: str = ""  # the patch file as error messages name it
    parse: Callable[[], Patch] | None = None
    summary: PatchHead | None = None

    @property
    def head(self) -> PatchHead:
        """The header and the paths, without parsing the file when its summary is known."""
        if self.parsed is None and self.summary is not None:
            return self.summary
        return self.patch

    @property
    def patch(self) -> Patch:
        if self.parsed is None:
            assert self.parse is not None, "a loaded patch needs its parse or a parser"
            self.parsed = self.parse()
        return self.parsed

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.data).hexdigest()


def commit_message(lp: LoadedPatch) -> str:
    """The message of the commit that applies ``lp``: its subject and description, and the
    trailers that name it."""
    subject = lp.entry.name.removesuffix(".patch")
    return trailers.write(lp.head.message(subject), lp.entry.name, lp.entry.tag)
