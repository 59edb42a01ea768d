"""A patch file as the engine uses it: its series entry, bytes and checked parse."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..model import trailers
from ..model.patchfile import Patch
from ..model.series import Entry


@dataclass
class LoadedPatch:
    entry: Entry
    data: bytes
    patch: Patch
    shown: str = ""  # the patch file as error messages name it

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.data).hexdigest()


def commit_message(lp: LoadedPatch) -> str:
    """The message of the commit that applies ``lp``: its subject and description, and the
    trailers that name it."""
    subject = lp.entry.name.removesuffix(".patch")
    return trailers.write(lp.patch.message(subject), lp.entry.name, lp.entry.tag)
