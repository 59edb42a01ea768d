"""Where following the code looks (`engine.relocate`): for each candidate blob, the hashes of
its lines, kept across commands in the cache's section ``lines`` keyed by blob id, so that a
stop, a ``--skip`` and ``check`` on any tree read the contents of only the few files that
have a block's longest line, not every file the drift changed (the SGLang fork's first stop
read 4,130 blobs, 61 MB, at every command that met a deleted or split file).

A file's entry is its distinct lines (split on newlines only, as the lookup compares them)
hashed with CRC-32 and packed little-endian: a lookup is one search of the packed
hashes of a tree's candidates. A hash names a superset of the files that have the line (two
lines can share a hash; a match across two packed hashes is skipped by its alignment), and
the files named are then read and searched for the whole block, so a collision costs a read,
never an answer. An entry is checked when read (its scheme, its length, a CRC of the blob id
and the hashes); one that fails is ignored and made again, as a file not in the cache.
``plain`` (``PATCHSTACK_NO_LINE_INDEX=1``) reads every candidate and compares the lines
themselves, as before: the differential tests hold the proposals identical either way.
"""

from __future__ import annotations

import array
import bisect
import struct
import sys
import zlib
from collections.abc import Iterable, Sequence

from ..git import Git
from ..store import Store

SECTION = "lines"
SCHEME = "crc32-le"  # an entry of another scheme is foreign: ignored
MAX_BYTES = 1 << 20  # a candidate file larger than this is not searched
_WIDTH = 4
_CODE = "I" if array.array("I").itemsize >= _WIDTH else "L"  # an unsigned C type of 32 bits+


def hashes_of(data: bytes) -> bytes:
    """The distinct hashes of the lines of ``data``, packed little-endian, in no order (the
    lookup searches them): one pass over the split lines, about what a set of them costs."""
    packed = array.array(_CODE, set(map(zlib.crc32, data.split(b"\n"))))
    if packed.itemsize != _WIDTH or sys.byteorder != "little":
        return struct.pack(f"<{len(packed)}I", *packed)
    return packed.tobytes()


def _values(packed: bytes) -> Iterable[int]:
    """The hashes `hashes_of` packed."""
    values = array.array(_CODE)
    if values.itemsize != _WIDTH:
        return [v for (v,) in struct.iter_unpack("<I", packed)]
    values.frombytes(packed)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _check(blob: str, packed: bytes | None) -> int:
    return zlib.crc32(packed if packed is not None else b"-", zlib.crc32(blob.encode()))


def _entry(blob: str, packed: bytes | None) -> list[object]:
    return [SCHEME, packed, _check(blob, packed)]


def _read_entry(blob: str, value: object) -> tuple[bool, bytes | None]:
    """(valid, the packed hashes or None for a file not searched)."""
    if not (isinstance(value, list) and len(value) == 3 and value[0] == SCHEME):
        return False, None
    packed, check = value[1], value[2]
    if packed is not None and not (isinstance(packed, bytes) and len(packed) % _WIDTH == 0):
        return False, None
    return check == _check(blob, packed), packed


class LineIndex:
    """The candidates' line hashes (or, ``plain``, their lines) of one command, by blob id;
    `content` of a blob, read once."""

    def __init__(self, git: Git, store: Store | None, plain: bool = False) -> None:
        self.git, self.store, self.plain = git, None if plain else store, plain
        self._packed: dict[str, bytes | None] = {}  # None: not searched (binary, too large)
        self._sets: dict[str, frozenset[bytes]] = {}  # plain: blob -> its lines
        self._raw: dict[str, bytes] = {}
        self._joined: dict[tuple[str, ...], tuple[bytes, list[int]]] = {}
        self._expected: set[bytes] = set()
        self._found: dict[tuple[str, ...], dict[bytes, set[str]]] = {}
        self.read: set[str] = set()  # the blobs whose contents this command read (for tests)

    def searched(self, blobs: Sequence[str]) -> set[str]:
        """Those of ``blobs`` that are searched (text, not too large), their entries made
        (reading them) for those neither this command nor the cache knows."""
        unknown = [b for b in dict.fromkeys(blobs) if b not in self._packed]
        if self.store is not None:
            for b in unknown:
                valid, packed = _read_entry(b, self.store.get(SECTION, b))
                if valid:
                    self._packed[b] = packed
            unknown = [b for b in unknown if b not in self._packed]
        if unknown:
            # in the caller's order: by path, neighbours are often deltas of one another, and
            # git's cat-file reads them 10-20 % faster than by id
            self._learn(unknown)
        return {b for b in blobs if self._packed[b] is not None}

    def _learn(self, blobs: list[str]) -> None:
        sizes = self.git.object_sizes(blobs)
        small = [b for b in blobs if (sizes.get(b) or 0) <= MAX_BYTES]
        for b in set(blobs) - set(small):
            self._packed[b] = None
        missing = set()
        for b, got in zip(small, self.git.each_object(small), strict=True):
            self.read.add(b)
            if got is None or b"\0" in got[1]:
                self._packed[b] = None
                missing |= {b} if got is None else set()
                continue
            self._raw[b] = got[1]
            if self.plain:
                self._sets[b] = frozenset(got[1].split(b"\n"))
            self._packed[b] = b"" if self.plain else hashes_of(got[1])
        if self.store is not None:
            for b in blobs:
                if b not in missing:
                    self.store.put(SECTION, b, _entry(b, self._packed[b]))

    def expect(self, blocks: Iterable[Sequence[str]]) -> None:
        """Blocks `block` will be asked about: their lines looked up together, in one pass
        over the candidates' hashes, at the first question (84 blocks on kernel-timers' first
        stop: a search of 6 MB of hashes for each line otherwise)."""
        lines = {ln for block in blocks for ln in block if "\0" not in ln and "\n" not in ln}
        self._expected.update(ln.encode("utf-8", "surrogateescape") for ln in lines)

    def block(self, blobs: Sequence[str], block: Sequence[str]) -> set[str]:
        """Those of ``blobs`` (searched ones, sorted) that have the block's longest line as a
        whole line (or, for the last one, before an end with no newline), and but ``plain``
        every other line of it too: a superset of those that hold the block (a file that
        holds it has each of its lines), so that only those are read and indexed (a block's
        longest line can be in hundreds of files: ``import triton.language as tl``)."""
        line = max(block, key=len)
        if "\0" in line or "\n" in line:
            return set(blobs)
        found = self.holding(blobs, line.encode("utf-8", "surrogateescape"))
        if self.plain:
            return found
        for other in sorted(set(block) - {line}, key=len, reverse=True):
            if not found:
                break
            if "\0" not in other and "\n" not in other:
                found &= self.holding(blobs, other.encode("utf-8", "surrogateescape"))
        return found

    def holding(self, blobs: Sequence[str], line: bytes) -> set[str]:
        """Those of ``blobs`` (searched ones, sorted) that may have ``line`` as a whole line:
        every one that has it (``plain``: exactly those)."""
        if self.plain:
            return {b for b in blobs if line in self._sets[b]}
        key = tuple(blobs)
        known = self._found.setdefault(key, {})
        if line not in known:
            wanted = {line, *(ln for ln in self._expected if ln not in known)}
            known.update(
                self._each(blobs, wanted) if len(wanted) > 1 else {line: self._one(key, line)}
            )
        return set(known[line])

    def _one(self, blobs: tuple[str, ...], line: bytes) -> set[str]:
        """`holding` of one line: a search of the candidates' hashes joined."""
        if blobs not in self._joined:
            starts, at = [], 0
            for b in blobs:
                starts.append(at)
                at += len(self._packed[b] or b"")
            self._joined[blobs] = (b"".join(self._packed[b] or b"" for b in blobs), starts)
        joined, starts = self._joined[blobs]
        needle, found = struct.pack("<I", zlib.crc32(line)), set()
        i = joined.find(needle)
        while i >= 0:
            if i % _WIDTH:
                i = joined.find(needle, i + 1)
                continue
            found.add(blobs[bisect.bisect_right(starts, i) - 1])
            i = joined.find(needle, i + _WIDTH)
        return found

    def _each(self, blobs: Sequence[str], lines: set[bytes]) -> dict[bytes, set[str]]:
        """`holding` of each of ``lines``: one pass over the candidates' hashes."""
        by_hash: dict[int, list[bytes]] = {}
        for ln in lines:
            by_hash.setdefault(zlib.crc32(ln), []).append(ln)
        wanted = set(by_hash)
        found: dict[bytes, set[str]] = {ln: set() for ln in lines}
        for b in blobs:
            for h in wanted.intersection(_values(self._packed[b] or b"")):
                for ln in by_hash[h]:
                    found[ln].add(b)
        return found

    def content(self, blob: str) -> bytes:
        """A searched blob's bytes (read once)."""
        if blob not in self._raw:
            self.read.add(blob)
            self._raw[blob] = self.git.read_blob(blob)
        return self._raw[blob]
