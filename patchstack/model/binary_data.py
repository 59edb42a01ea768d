"""The data of a ``GIT binary patch`` section, checked without trusting it.

git writes a binary change as ``literal N`` (the new content) or ``delta N`` (a delta against
the old content), N being the size of the inflated data, then base85 lines (each starting
with a letter giving its byte count: ``A``-``Z`` 1-26, ``a``-``z`` 27-52) of zlib-compressed
data, then a blank line; a reverse block follows the same way.

`check_binary` proves that each block decodes and inflates to exactly the size it declares,
inflating in small pieces and stopping as soon as it passes that size, so that a block
declaring 2^60 bytes, or a few kilobytes of data that would inflate to gigabytes, costs
neither the memory nor the time it announces. A size over `MAX_BINARY` is refused outright:
applying it would need that much memory.
"""

from __future__ import annotations

import re
import zlib

from ..errors import InputError

MAX_BINARY = 256 * 1024 * 1024
_CHUNK = 1 << 20
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_B85_VALUE = {c: i for i, c in enumerate(_B85)}
_HEAD_RE = re.compile(r"(literal|delta) (\d+)\Z")
_HINT = "the binary data is damaged or was edited; regenerate the patch with 'git diff --binary'"


def _decode_line(line: str) -> bytes | None:
    """One base85 line of git's binary patch, or None when it is not one."""
    if not line:
        return None
    c = line[0]
    if "A" <= c <= "Z":
        size = ord(c) - ord("A") + 1
    elif "a" <= c <= "z":
        size = ord(c) - ord("a") + 27
    else:
        return None
    body = line[1:]
    if len(body) != (size + 3) // 4 * 5:
        return None
    out = bytearray()
    for k in range(0, len(body), 5):
        acc = 0
        for ch in body[k : k + 5]:
            value = _B85_VALUE.get(ch)
            if value is None:
                return None
            acc = acc * 85 + value
        if acc > 0xFFFFFFFF:
            return None
        out += acc.to_bytes(4, "big")
    return bytes(out[:size])


def _inflated_size(data: bytes, limit: int) -> int | None:
    """How many bytes ``data`` inflates to, counting at most ``limit + 1``; None: not zlib."""
    inflater = zlib.decompressobj()
    total = 0
    pending = data
    try:
        while True:
            piece = inflater.decompress(pending, _CHUNK)
            total += len(piece)
            if total > limit:
                return total
            pending = inflater.unconsumed_tail
            if not pending and (inflater.eof or not piece):
                break
        if not inflater.eof:
            return None
    except zlib.error:
        return None
    return total


def check_binary(lines: list[str], i: int, path: str, changed: str = "?") -> int:
    """Check the forward and reverse blocks starting at ``lines[i]``; the index after them.
    ``changed``: the file the binary change is to (named by the messages)."""
    n = len(lines)
    for block in range(2):
        if i >= n or not lines[i].startswith(("literal ", "delta ")):
            if block == 0:
                raise InputError(
                    path,
                    i + 1,
                    f"'GIT binary patch' for '{changed}' without a literal or delta",
                    _HINT,
                )
            break
        head = lines[i].rstrip("\r")
        m = _HEAD_RE.match(head)
        if not m:
            raise InputError(path, i + 1, f"malformed binary block header '{head[:40]}'", _HINT)
        declared = int(m.group(2))
        if declared > MAX_BINARY:
            raise InputError(
                path,
                i + 1,
                f"binary {m.group(1)} of {declared} bytes for '{changed}' is over the limit of"
                f" {MAX_BINARY} bytes",
                "keep large binary files out of the patch series",
            )
        start = i + 1
        i += 1
        data = bytearray()
        while i < n and lines[i].strip():
            decoded = _decode_line(lines[i].rstrip("\r"))
            if decoded is None:
                raise InputError(path, i + 1, "malformed base85 line in binary data", _HINT)
            data += decoded
            i += 1
        size = _inflated_size(bytes(data), declared)
        if size is None:
            raise InputError(
                path,
                start + 1,
                f"binary data for '{changed}' does not inflate (damaged zlib data)",
                _HINT,
            )
        if size != declared:
            more = "more than" if size > declared else ""
            raise InputError(
                path,
                start,
                f"binary {m.group(1)} for '{changed}' declares {declared} bytes but its data"
                " inflates to"
                f" {more} {size} bytes".replace("  ", " "),
                _HINT,
            )
        while i < n and not lines[i].strip():
            i += 1
    return i
