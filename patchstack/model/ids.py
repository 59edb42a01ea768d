"""Object ids and the repository's object format (SHA-1 or SHA-256).

Everything outside the git boundary sees object ids as `Oid` strings of lowercase hex. Their
length, the null id, the empty tree and how a blob's id is computed depend on the repository's
object format, which is read from the repository once (`git.Git.fmt`) and passed around as an
`ObjectFormat` value; nothing hard-codes 40 hex digits.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import NewType

Oid = NewType("Oid", str)


@dataclass(frozen=True)
class ObjectFormat:
    name: str  # "sha1" or "sha256", as `git rev-parse --show-object-format` says

    @cached_property
    def hexsz(self) -> int:
        return hashlib.new(self.name).digest_size * 2

    @cached_property
    def null(self) -> Oid:
        return Oid("0" * self.hexsz)

    @cached_property
    def empty_tree(self) -> Oid:
        return self.hash("tree", b"")

    @cached_property
    def _full_re(self) -> re.Pattern[str]:
        return re.compile(rf"[0-9a-f]{{{self.hexsz}}}\Z")

    def hash(self, kind: str, data: bytes) -> Oid:
        """The id git gives an object of ``kind`` ("blob", "tree", ...) with ``data``."""
        h = hashlib.new(self.name)
        h.update(b"%s %d\0" % (kind.encode(), len(data)))
        h.update(data)
        return Oid(h.hexdigest())

    def blob_id(self, data: bytes) -> Oid:
        return self.hash("blob", data)

    def is_full(self, text: str | None) -> bool:
        """True for a full (not abbreviated) id of this format."""
        return bool(text) and self._full_re.match(text or "") is not None

    def is_null(self, text: str | None) -> bool:
        return bool(text) and set(text or "") == {"0"}


SHA1 = ObjectFormat("sha1")
SHA256 = ObjectFormat("sha256")
