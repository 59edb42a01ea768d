"""Resolutions keyed by the conflict hunk, as git's rerere keys them: a resolution survives
upstream's edits elsewhere in the file.

A conflicted file as the merge writes it (diff3 markers) is text between conflict hunks
(`split`). Each hunk's key is its normalised conflict, as ``rerere.c`` normalises it: the
markers' labels dropped and the two sides sorted, so that which side is "ours" does not
matter. Unlike rerere, the key also holds the hunk's base (the ``|||||||`` part): the same two
sides over another base are other changes, and a resolution is never applied approximately
(invariant 10). (A second lookup by the two sides alone, rerere's key, was measured on the
real drifts of docs/benchmarks.md: it would settle no hunk there, so there is none.) The path
is not in the key either (rerere's is not): the same conflict in a file upstream renamed is
settled the same way.

At ``refresh --continue`` the user's file is split along the text the merge left outside the
hunks (`decompose`): each hunk's resolution is what stands between the text before it and the
text after it; when the user changed that text too, the file is recorded whole instead (the
earlier records, `resolutions`). Reusing one is `apply`: each hunk replaced by its recorded
resolution, byte for byte, exactly what the user would do by hand.

A record is a file of the series folder's ``resolutions/``, named by its key: a header (the
patch and path it was recorded for, the hunk's line, the four parts' sizes), a blank line, and
upstream's side, the base, the patch's side and the resolution, one after the other. `record`
checks it when read (`BadRecord` says why not).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAGIC = "patchstack-resolution-hunk 1"
_OPEN, _BASE, _SEP, _CLOSE = b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>"


@dataclass(frozen=True)
class Hunk:
    """One conflict region: upstream's side (the merge's first), the base, the patch's side."""

    ours: bytes
    base: bytes
    theirs: bytes
    line: int  # 1-based line of its ``<<<<<<<`` in the merged file
    raw: bytes = field(default=b"", compare=False)  # the region as the merge wrote it

    @property
    def key(self) -> str:
        return key_of(self.ours, self.base, self.theirs)


def key_of(ours: bytes, base: bytes, theirs: bytes) -> str:
    """The hunk's key: its sides sorted (rerere's normalisation), its base, no label."""
    one, two = sorted((ours, theirs))
    text = b"\0".join((b"patchstack hunk", one, two, base))
    return hashlib.sha1(text).hexdigest()


Part = bytes | Hunk  # text the merge left alone, or a conflict hunk


def _marker(line: bytes, marker: bytes) -> bool:
    bare = line.rstrip(b"\r\n")
    return bare == marker or (marker != _SEP and bare.startswith(marker + b" "))


def split(data: bytes) -> list[Part] | None:
    """The merged file as text and diff3 conflict hunks; None when it has no hunk or its
    markers do not read as git writes them (a side holding marker lines of its own, no base
    part): such a file is settled only by a record of the whole file.

    Only the lines that start as a marker does are looked at one by one (found by a regular
    expression), the text between them taken whole: a stop of kernel-timers splits 91 files,
    548,590 lines, of which some hundreds are markers. Where a line may end in a
    lone carriage return (which `bytes.splitlines` cuts at), and with
    ``PATCHSTACK_NO_FAST_SPLIT=1``, line by line (`_split_lines`)."""
    if b"\r" in data or os.environ.get("PATCHSTACK_NO_FAST_SPLIT"):
        return _split_lines(data)
    found = [m.start() + 1 for m in _CANDIDATES.finditer(data)]
    starts = [0, *found] if data[:7] in _MARKERS else found
    return _split_at(data, ((at, data.find(b"\n", at) + 1 or len(data)) for at in starts))


# The newline before a line that may be a marker (it starts as one does; any other line is
# text wherever it is): a pattern that starts with a literal, which `re` searches for fast.
_MARKERS = (_OPEN, _BASE, _SEP, _CLOSE)
_CANDIDATES = re.compile(rb"\n(?=<<<<<<<|\|\|\|\|\|\|\||=======|>>>>>>>)")


def _split_lines(data: bytes) -> list[Part] | None:
    """`split`, line by line (the lines `bytes.splitlines` cuts)."""
    spans, at = [], 0
    for line in data.splitlines(keepends=True):
        spans.append((at, at + len(line)))
        at += len(line)
    return _split_at(data, spans)


def _split_at(data: bytes, spans: Iterable[tuple[int, int]]) -> list[Part] | None:
    """`split`, reading the lines at ``spans`` (in order) one by one as markers may be, and
    the text between them whole."""
    parts: list[Part] = []
    text: list[bytes] = []
    sides: list[list[bytes]] = []
    region: list[bytes] = []
    start = 0
    pos, lines = 0, 0  # where the text not yet read starts, and the lines before it
    for at, end in spans:
        gap = data[pos:at]
        if gap:
            lines += gap.count(b"\n")
            if sides:
                region.append(gap)
                sides[-1].append(gap)
            else:
                text.append(gap)
        line, pos = data[at:end], end
        lines += 1
        state = len(sides)  # 0: text, 1: ours, 2: base, 3: theirs
        if state or _marker(line, _OPEN):
            region.append(line)
        if _marker(line, _OPEN):
            if state:
                return None
            sides, start, region = [[]], lines, [line]
        elif _marker(line, _BASE):
            if state != 1:
                return None
            sides.append([])
        elif _marker(line, _SEP) and state:  # (alone, outside a hunk, it underlines a heading)
            if state != 2:
                return None
            sides.append([])
        elif _marker(line, _CLOSE):
            if state != 3:
                return None
            if text:
                parts.append(b"".join(text))
                text = []
            ours, base, theirs = (b"".join(s) for s in sides)
            parts.append(Hunk(ours, base, theirs, start, b"".join(region)))
            sides, region = [], []
        elif state:
            sides[-1].append(line)
        else:
            text.append(line)
    gap = data[pos:]
    if gap:
        if sides:
            return None  # (a hunk not closed)
        text.append(gap)
    if sides or not any(isinstance(p, Hunk) for p in parts):
        return None
    if text:
        parts.append(b"".join(text))
    return parts


def decompose(parts: Sequence[Part], resolved: bytes) -> list[tuple[Hunk, bytes]] | None:
    """Each hunk of ``parts`` with what ``resolved`` has in its place, when ``resolved`` keeps
    every text between the hunks as it is (whole lines, in order); None otherwise, and when
    two hunks touch (nothing tells where one's resolution ends)."""
    lines = resolved.splitlines(keepends=True)
    found: list[tuple[Hunk, bytes]] = []
    at = 0  # the next line of ``resolved`` not yet taken
    pending: Hunk | None = None
    for part in parts:
        if isinstance(part, Hunk):
            if pending is not None:
                return None
            pending = part
            continue
        want = part.splitlines(keepends=True)
        if pending is None:
            if lines[at : at + len(want)] != want:
                return None
        else:
            where = _find(lines, want, at)
            if where is None:
                return None
            found.append((pending, b"".join(lines[at:where])))
            at, pending = where, None
        at += len(want)
    if pending is not None:
        found.append((pending, b"".join(lines[at:])))
    elif at != len(lines):
        return None
    return found


def _find(lines: Sequence[bytes], want: Sequence[bytes], start: int) -> int | None:
    """The first index from ``start`` where ``want`` stands in ``lines``."""
    for i in range(start, len(lines) - len(want) + 1):
        if lines[i : i + len(want)] == want:
            return i
    return None


def apply(
    parts: Sequence[Part], resolutions: Mapping[str, bytes]
) -> tuple[bytes, list[int]] | None:
    """The file with each hunk replaced by its resolution (by key), and the line where each
    resolution starts in it; None when a hunk has none."""
    out, lines = [], []
    at = 1
    for part in parts:
        if isinstance(part, Hunk):
            found = resolutions.get(part.key)
            if found is None:
                return None
            lines.append(at)
            part = found
        out.append(part)
        at += part.count(b"\n")
    return b"".join(out), lines


def apply_known(parts: Sequence[Part], resolutions: Mapping[str, bytes]) -> tuple[bytes, list[int]]:
    """The file with each hunk that has a resolution (by key) replaced by it, the others left
    as the merge wrote them; and the line where each resolution starts in it."""
    out, lines = [], []
    at = 1
    for part in parts:
        if isinstance(part, Hunk):
            found = resolutions.get(part.key)
            if found is None:
                part = part.raw
            else:
                lines.append(at)
                part = found
        out.append(part)
        at += part.count(b"\n")
    return b"".join(out), lines


@dataclass(frozen=True)
class HunkRecord:
    """A recorded resolution of one conflict hunk, as read from its file."""

    key: str
    patch: str  # the patch it was recorded for (not in the key)
    path: str  # the file it was recorded in (not in the key)
    line: int
    hunk: Hunk
    data: bytes  # the resolution
    recorded: str
    file: str
    group: str = ""  # (a whole-file record's field; a hunk record is never part of a group)
    by: str = ""  # (a whole-file record's field; a machine-made resolution is recorded whole)


def render(patch: str, path: str, hunk: Hunk, resolution: bytes, when: str) -> bytes:
    """A record's bytes; ``patch`` and ``path`` are written as header values already."""
    sizes = (len(hunk.ours), len(hunk.base), len(hunk.theirs), len(resolution))
    head = [
        MAGIC,
        f"patch: {patch}",
        f"path: {path}",
        f"line: {hunk.line}",
        "sizes: " + " ".join(map(str, sizes)),
        f"recorded: {when}",
    ]
    body = hunk.ours + hunk.base + hunk.theirs + resolution
    return "\n".join(head).encode("utf-8", "surrogateescape") + b"\n\n" + body


class BadRecord(ValueError):
    """Why bytes are not a recorded resolution (``line``: of its header, when one is at fault)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def record(
    fields: Mapping[str, str],
    at: Mapping[str, int],
    body: bytes,
    names: tuple[str, str, str],
    name: str | None,
) -> HunkRecord:
    """The record of a hunk's resolution file: its header ``fields`` (each at its line, ``at``)
    and ``body`` checked, ``names`` its (patch, path, file); with ``name`` (its name in the
    folder), that it is named by its key. `BadRecord` says why they are not one."""
    missing = [k for k in ("patch", "path", "line", "sizes") if k not in fields]
    if missing:
        raise BadRecord("no " + ", ".join(missing) + " in its header")
    words = fields["sizes"].split(" ")
    if len(words) != 4 or not all(w.isdigit() and len(w) < 16 for w in words):
        why = f"'sizes: {fields['sizes'][:60]}' is not four sizes in bytes"
        raise BadRecord(why, at["sizes"])
    sizes = [int(w) for w in words]
    if sum(sizes) != len(body):
        why = f"its sizes add up to {sum(sizes)} bytes, its body holds {len(body)}"
        raise BadRecord(why, at["sizes"])
    line = fields["line"]
    if not (line.isdigit() and len(line) < 16):
        raise BadRecord(f"'line: {line[:60]}' is not a line number", at["line"])
    cuts, start = [], 0
    for size in sizes:
        cuts.append(body[start : start + size])
        start += size
    ours, base, theirs, resolution = cuts
    hunk = Hunk(ours, base, theirs, int(line))
    if name is not None and name != hunk.key:
        raise BadRecord(f"its name is not its key {hunk.key} (one file a conflict hunk)")
    patch, path, file = names
    return HunkRecord(
        hunk.key, patch, path, hunk.line, hunk, resolution, fields.get("recorded", ""), file
    )
