"""Exact application of a file's hunks to its preimage, proven by blob ids.

This is the fast path of the engine, not a replacement for ``git apply``: a patch file written
by patchstack carries full ``index <old>..<new>`` lines, so when the preimage blob is exactly
``<old>`` and the text the hunks produce hashes to ``<new>``, the result is proven to be the one
the patch was made with. Anything else (no full index line, a different preimage, a hash that
does not match, binary data, renames) is left to ``git apply`` by returning None.

Each hunk must match at its stated line, or at the nearest place up or down (as git allows an
offset); never with fuzz. The hash check makes a match at a wrong place harmless: the result
would not hash to the expected id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from .patch import FileDiff, Hunk

NULL_ID = "0" * 40


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _split(data: bytes) -> list[bytes]:
    """Lines with their newline; the last line may lack one."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = [ln + b"\n" for ln in lines]
    if last:
        out.append(last)
    return out


def _hunk_sides(hunk: Hunk) -> tuple[list[bytes], list[bytes]]:
    pre: list[bytes] = []
    post: list[bytes] = []
    prev_kind = " "
    for raw in hunk.lines:
        if raw.startswith("\\"):
            # "\ No newline at end of file" applies to the line just before it.
            for side, kinds in ((pre, " -"), (post, " +")):
                if side and prev_kind in kinds and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        prev_kind = raw[:1] or " "
        line = raw[1:].encode("utf-8", "surrogateescape") + b"\n"
        if prev_kind in " -":
            pre.append(line)
        if prev_kind in " +":
            post.append(line)
    return pre, post


def apply_hunks(old: bytes, hunks: Sequence[Hunk]) -> bytes | None:
    """The postimage, or None when a hunk's preimage is not found exactly."""
    lines = _split(old)
    out: list[bytes] = []
    pos = 0  # next unread line of ``lines``
    offset = 0
    for hunk in hunks:
        pre, post = _hunk_sides(hunk)
        want = hunk.old_start - 1 + offset if hunk.old_len else hunk.old_start + offset
        if not pre:
            at = max(want, pos)
            if at > len(lines):
                return None
        else:
            at = _find(lines, pre, max(want, pos), pos)
            if at is None:
                return None
        out.extend(lines[pos:at])
        out.extend(post)
        pos = at + len(pre)
        offset = at - (hunk.old_start - 1 if hunk.old_len else hunk.old_start)
    out.extend(lines[pos:])
    return b"".join(out)


def _find(lines: list[bytes], pre: list[bytes], want: int, floor: int) -> int | None:
    n = len(pre)
    limit = len(lines) - n
    if limit < floor:
        return None
    want = min(max(want, floor), limit)  # a line number past the end starts at the end
    for delta in range(0, limit - floor + 1):
        for at in (want + delta, want - delta) if delta else (want,):
            if floor <= at <= limit and lines[at : at + n] == pre:
                return at
        if want + delta > limit and want - delta < floor:
            break
    return None


def proven_postimage(fd: FileDiff, old: bytes | None) -> bytes | None:
    """The new content of ``fd`` applied to ``old`` (None: absent), when the ids prove it."""
    if fd.binary or fd.renamed or fd.copied or not fd.old_id or not fd.new_id:
        return None
    if len(fd.old_id) != 40 or len(fd.new_id) != 40:
        return None
    if fd.old_id == NULL_ID:
        if old is not None:
            return None
        old = b""
    elif old is None or blob_id(old) != fd.old_id:
        return None
    new = apply_hunks(old, fd.hunks) if fd.hunks else old
    if new is None:
        return None
    if fd.new_id == NULL_ID:
        return b"" if not new else None
    return new if blob_id(new) == fd.new_id else None


def crlf_mismatch(fd: FileDiff, old: bytes) -> str | None:
    """Why ``fd`` cannot match ``old`` when the only difference is CR LF against LF."""
    pre = [ln[1:] for h in fd.hunks for ln in h.lines if ln[:1] in (" ", "-")]
    if not pre:
        return None
    patch_cr = sum(ln.endswith("\r") for ln in pre)
    lines = old.split(b"\n")[:-1] if old.endswith(b"\n") else old.split(b"\n")
    file_cr = sum(ln.endswith(b"\r") for ln in lines)
    if patch_cr == len(pre) and lines and file_cr == 0:
        return (
            f"{fd.old_path}: the patch's lines end in CR LF (bytes 0d 0a, shown as <U+000D>)"
            " but the file's lines end in LF (0a)"
        )
    if patch_cr == 0 and lines and file_cr == len(lines):
        return (
            f"{fd.old_path}: the file's lines end in CR LF (bytes 0d 0a) but the patch's"
            " lines end in LF (0a)"
        )
    return None
