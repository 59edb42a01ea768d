"""A check's candidates read and not hashed (`lineprefetch`'s lazy prefetch, `lineindex`).

`check` asks where the code of a few patches went once, at the end of its replay: hashing
every line of every file the drift changed (weight-sync 4,120 files, 1.6 million lines: 0.45
CPU s in the prefetch's thread) for a cache a later command may read costs more than finding
the few lines it asks in the bytes. A *lazy* blob is kept as its bytes; `LineIndex._each`
asks it which of the lines looked for so far it holds (`hits`: the set of those lines
intersected with its split bytes, 0.21 s for the same files), which are exactly the blobs
holding each line: a subset of what the hashes answer (no collision) and a superset of those
that hold a block, which `relocate` reads and locates in exactly, so the proposals are the
same. Whatever else needs a lazy blob's hashes (`has`, `_one`) makes them then (`take`); a
lazy blob is never kept in the cache. ``PATCHSTACK_NO_LAZY_LINES=1``: the prefetch hashes
every line, as a refresh's does.
"""

from __future__ import annotations

import zlib


class LazyLines:
    """The lazy blobs, by id, with their bytes; the lines looked for, in the sets they were
    asked in (`ask`), and of each blob how many of those sets it was searched for."""

    def __init__(self) -> None:
        self._raw: dict[str, bytes] = {}
        self._sets: list[frozenset[bytes]] = []
        self._all: set[bytes] = set()
        self._upto: dict[str, int] = {}
        self._since: dict[int, frozenset[bytes]] = {}  # at -> the sets from it on, joined

    def __contains__(self, blob: object) -> bool:
        return blob in self._raw

    def __bool__(self) -> bool:
        return bool(self._raw)

    def add(self, blob: str, raw: bytes) -> None:
        self._raw[blob] = raw

    def take(self, blob: str) -> bytes:
        """A blob's bytes, no longer lazy (its hashes made by the caller)."""
        return self._raw.pop(blob)

    def ask(self, lines: set[bytes]) -> None:
        """``lines`` among those looked for."""
        if not lines <= self._all:
            self._sets.append(frozenset(lines - self._all))
            self._all |= lines
            self._since.clear()

    def hits(self, blob: str) -> set[int]:
        """The hashes of the lines looked for that the blob holds as whole lines, of those not
        looked for in it before (the caller has the others)."""
        n, at = len(self._sets), self._upto.get(blob, 0)
        if at == n:
            return set()
        self._upto[blob] = n
        new = self._since.get(at)
        if new is None:
            new = self._since[at] = frozenset().union(*self._sets[at:])
        return set(map(zlib.crc32, new.intersection(self._raw[blob].split(b"\n"))))
