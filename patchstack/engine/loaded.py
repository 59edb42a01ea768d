"""A patch file as the engine uses it: its series entry, bytes and checked parse."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from ..model import trailers
from ..model.patchfile import Patch
from ..model.series import Entry


@dataclass
class LoadedPatch:
    """``parsed``, or ``parse`` to parse it when first wanted: a re-push whose commits are all
    cached, for one, needs only the bytes (already proven, see `checkout.ProvenPatches`)."""

    entry: Entry
    data: bytes
    parsed: Patch | None = None
    shown: str = ""  # the patch file as error messages name it
    parse: Callable[[], Patch] | None = None

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
    return trailers.write(lp.patch.message(subject), lp.entry.name, lp.entry.tag)
