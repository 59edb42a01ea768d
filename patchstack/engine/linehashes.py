"""The line hashes `lineindex` keeps, as bytes: each file's distinct lines hashed with
CRC-32 and packed little-endian (`hashes_of`), the lookup of one packed hash among many files'
hashes joined end to end (`find`), and the joined value kept for a drift (`Joined`)."""

from __future__ import annotations

import array
import bisect
import operator
import struct
import sys
import zlib
from collections.abc import Iterable, Sequence
from typing import cast

SCHEME = "crc32-le"  # an entry of another scheme is foreign: ignored
WIDTH = 4
_CODE = "I" if array.array("I").itemsize >= WIDTH else "L"  # an unsigned C type of 32 bits+


def hashes_of(data: bytes) -> bytes:
    """The distinct hashes of the lines of ``data``, packed little-endian, in no order (the
    lookup searches them): one pass over the split lines, about what a set of them costs."""
    return packed_of(line_hashes(data))


def line_hashes(data: bytes) -> set[int]:
    return set(map(zlib.crc32, data.split(b"\n")))


def packed_of(hashes: set[int]) -> bytes:
    packed = array.array(_CODE, hashes)
    if packed.itemsize != WIDTH or sys.byteorder != "little":
        return struct.pack(f"<{len(packed)}I", *packed)
    return packed.tobytes()


def values(packed: bytes) -> Iterable[int]:
    """The hashes `hashes_of` packed."""
    values = array.array(_CODE)
    if values.itemsize != WIDTH:
        return [v for (v,) in struct.iter_unpack("<I", packed)]
    values.frombytes(packed)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def has(packed: bytes, line: bytes) -> bool:
    """Whether ``packed`` (`hashes_of`) holds the hash of ``line``."""
    needle = struct.pack("<I", zlib.crc32(line))
    i = packed.find(needle)
    while i >= 0 and i % WIDTH:
        i = packed.find(needle, i + 1)
    return i >= 0


def find(joined: bytes, starts: Sequence[int], ids: Sequence[str], needle: bytes) -> set[str]:
    """Those of ``ids`` whose hashes (``joined`` end to end, each from its ``starts``) hold
    the packed hash ``needle`` (a match across two hashes skipped by its alignment)."""
    found, i = set(), joined.find(needle)
    while i >= 0:
        if i % WIDTH:
            i = joined.find(needle, i + 1)
            continue
        found.add(ids[bisect.bisect_right(starts, i) - 1])
        i = joined.find(needle, i + WIDTH)
    return found


def pack(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def drift_check(trees: str, paths: str, ids: str) -> int:
    """The check of a drift's candidates: of the two trees they are of, too."""
    check = zlib.crc32(trees.encode())
    check = zlib.crc32(paths.encode("utf-8", "surrogateescape"), check)
    return zlib.crc32(ids.encode(), check)


def blob_check(blob: str, packed: bytes | None) -> int:
    return zlib.crc32(packed if packed is not None else b"-", zlib.crc32(blob.encode()))


def blob_entry(blob: str, packed: bytes | None) -> list[object]:
    return [SCHEME, packed, blob_check(blob, packed)]


def read_entry(blob: str, value: object) -> tuple[bool, bytes | None]:
    """(valid, the packed hashes or None for a file not searched) of a blob's cache entry, as
    `blob_entry` keeps it (`lineindex`; `lineprefetch` asks which blobs the cache knows)."""
    if not (isinstance(value, list) and len(value) == 3 and value[0] == SCHEME):
        return False, None
    packed, check = value[1], value[2]
    if packed is not None and not (isinstance(packed, bytes) and len(packed) % WIDTH == 0):
        return False, None
    return check == blob_check(blob, packed), packed


class Joined:
    """The hashes of some searched blobs end to end, each blob's at ``offsets``, and the blobs
    not searched (binary, too large): `LineIndex.searched` answers for them from this one
    value. Kept as ``[scheme, ids, offsets, hashes, not searched, check]``."""

    def __init__(self, ids: list[str], offsets: list[int], hashes: bytes, unsearched: set[str]):
        self.ids, self.offsets, self.hashes, self.unsearched = ids, offsets, hashes, unsearched
        self.at = {b: i for i, b in enumerate(ids)}

    def covers(self, blob: str) -> bool:
        return blob in self.at or blob in self.unsearched

    def packed(self, blob: str) -> bytes | None:
        i = self.at.get(blob)
        return None if i is None else self.hashes[self.offsets[i] : self.offsets[i + 1]]

    def entry(self) -> list[object]:
        fields = ["\n".join(self.ids), pack(self.offsets), self.hashes]
        fields.append("\n".join(sorted(self.unsearched)))
        return [SCHEME, *fields, _joined_check(fields)]

    @staticmethod
    def read(value: object) -> Joined | None:
        """The value `entry` made, or None when it is not one (damaged, another scheme)."""
        if not (isinstance(value, list) and len(value) == 6 and value[0] == SCHEME):
            return None
        ids, offsets, hashes, unsearched, check = value[1:]
        if not (
            isinstance(ids, str)
            and isinstance(offsets, bytes)
            and isinstance(hashes, bytes)
            and isinstance(unsearched, str)
            and check == _joined_check([ids, offsets, hashes, unsearched])
        ):
            return None
        names = ids.split("\n") if ids else []
        starts = list(values(offsets)) if len(offsets) % WIDTH == 0 else []
        if len(starts) != len(names) + 1 or starts[-1] != len(hashes) or starts[0] != 0:
            return None
        # in order, each at a whole hash (the first is 0): each one's hashes whole
        if not all(map(operator.le, starts, starts[1:])) or any(map((WIDTH - 1).__and__, starts)):
            return None
        return Joined(names, starts, hashes, set(unsearched.split("\n")) - {""})


def _joined_check(fields: Sequence[object]) -> int:
    check = 0
    for f in fields:
        check = zlib.crc32(f.encode() if isinstance(f, str) else cast(bytes, f), check)
    return check
