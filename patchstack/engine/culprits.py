"""The upstream commits behind a conflicting hunk, traced at the hunk's own place.

A conflict region's upstream side ("there now") is lines of the tree the patch was merged
onto; its place in the new base's file is found by aligning that file with the merged file's
upstream side (the regions are lines of the new base; an earlier patch's lines are not).
From there the region is followed back through what each first-parent commit of
``old_base..new_base`` did to the file (one ``log -p -U0`` walk for every file), as ``git log
-L`` follows a range: a commit whose change meets the region changed those lines, and the
region grows to what that change replaced. A commit that created the file (a move or copy
from another file, or a new file) brought the lines there; the trace ends with it. The
commits found are ranked oldest first (the one that changed the patch's lines first), at
most `SHOWN`; a region that cannot be placed (binary, or only an earlier patch's lines) has
none: "unknown", never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from difflib import SequenceMatcher

from ..git import Git
from ..git.history import LineChanges
from ..model import trailers
from ..model.conflict import ConflictHunk, UpstreamCommit, marked_regions

SHOWN = 5  # culprits kept per hunk, oldest first
SLIDE = 1  # how far apart two diffs may place the same deletion, next to a point
Region = tuple[int, int]  # 1-based lines [start, end) of the new base's file; start == end: a point


def _ours(
    lines: Sequence[str], marked: Sequence[tuple[ConflictHunk, int]]
) -> tuple[list[str], list[Region]]:
    """The merged file's upstream side, and each conflict region's 0-based span in it
    (``marked``: its regions, `marked_regions`)."""
    ours: list[str] = []
    spans: list[Region] = []
    i = 0
    for hunk, end in marked:
        ours += lines[i : hunk.line - 1]
        spans.append((len(ours), len(ours) + len(hunk.now)))
        ours += hunk.now
        i = end
    ours += lines[i:]
    return ours, spans


def regions(
    base: Sequence[str], merged: Sequence[str], marked: Sequence[tuple[ConflictHunk, int]]
) -> list[Region | None]:
    """Where each conflict region of ``merged`` (``marked``: its regions) lies in ``base``
    (the new base's file), or None where its upstream side is no line of it."""
    ours, spans = _ours(merged, marked)
    to_base = [-1] * len(ours)
    head = 0
    while head < min(len(base), len(ours)) and base[head] == ours[head]:
        to_base[head] = head
        head += 1
    tail = 0
    while tail < min(len(base), len(ours)) - head and base[-1 - tail] == ours[-1 - tail]:
        to_base[len(ours) - 1 - tail] = len(base) - 1 - tail
        tail += 1
    left, right = base[head : len(base) - tail], ours[head : len(ours) - tail]
    middle = SequenceMatcher(None, left, right, autojunk=False)
    for a, b, n in middle.get_matching_blocks():
        for k in range(n):
            to_base[head + b + k] = head + a + k
    out: list[Region | None] = []
    for start, end in spans:
        if end > start:
            mapped = [to_base[i] for i in range(start, end) if to_base[i] >= 0]
            out.append((min(mapped) + 1, max(mapped) + 2) if mapped else None)
        elif start == 0:
            out.append((1, 1))
        elif to_base[start - 1] >= 0:
            out.append((to_base[start - 1] + 2,) * 2)
        elif start < len(ours) and to_base[start] >= 0:
            out.append((to_base[start] + 1,) * 2)
        else:
            out.append(None)
    return out


def _back(hunks: Sequence[tuple[int, int, int, int]], region: Region) -> tuple[bool, Region]:
    """Whether a commit's hunks meet ``region`` (lines of the commit's version), and where
    the region was in its parent's version."""
    s, e = region
    spans = []  # (old start, old end, new start, new end), half-open
    for a, alen, c, clen in hunks:
        a0, c0 = (a if alen else a + 1), (c if clen else c + 1)
        spans.append((a0, a0 + alen, c0, c0 + clen))

    def meets(c0: int, c1: int) -> bool:
        if c1 > c0:
            return c0 < s < c1 if s == e else c0 < e and s < c1
        # lines taken out inside or next to the region; next to a point (upstream's side
        # empty) also a line apart, where two diffs may place the same deletion (a blank line
        # at either end of the lines taken out is the same either side). Not a line apart from a
        # region of lines: the line between, which stayed, keeps them apart (label seed 1106)
        if s == e:
            return s - SLIDE <= c0 <= e + SLIDE
        return s <= c0 <= e

    def where(line: int) -> int | None:  # a line (or point) outside every hunk, in the parent
        if any(c0 <= line < c1 for _a0, _a1, c0, c1 in spans):
            return None
        return line + sum((a1 - a0) - (c1 - c0) for a0, a1, c0, c1 in spans if c1 <= line)

    met = [sp for sp in spans if meets(sp[2], sp[3])]
    if s == e:  # a point between lines s - 1 and s
        if not met:
            at = s + sum((a1 - a0) - (c1 - c0) for a0, a1, c0, c1 in spans if c1 <= s)
            return False, (at, at)
        starts, ends = [sp[0] for sp in met], [sp[1] for sp in met]
    else:
        first, last = where(s), where(e - 1)
        starts = [sp[0] for sp in met] + ([first] if first is not None else [])
        ends = [sp[1] for sp in met] + ([last + 1] if last is not None else [])
    return bool(met), (min(starts), max(ends))


def trace(changes: Sequence[LineChanges], path: str, region: Region) -> tuple[UpstreamCommit, ...]:
    """The commits of ``changes`` (newest first) that changed ``region`` of ``path``, oldest
    first, at most `SHOWN`; none when a binary change is met (it cannot be told). Commits
    that together change nothing (the file before the oldest is the file after the newest:
    a change and its revert) changed no line: none of them is named, and the trace goes on
    from the region as it was after them."""
    found: list[UpstreamCommit] = []
    seen: dict[str, tuple[int, Region]] = {}  # a version of the file: what was found, where
    for change in changes:
        lines = change.files.get(path)
        if lines is None:
            continue
        if lines.hunks is None:
            return ()
        if lines.after.strip("0"):
            seen.setdefault(lines.after, (len(found), region))
        met, region = _back(lines.hunks, region)
        if met and not change.flagged:  # a patch commit of the fork's is not upstream's
            found.append(UpstreamCommit(change.oid, change.subject))
        if lines.created:
            break
        if lines.before in seen:
            count, region = seen[lines.before]
            del found[count:]
    return tuple(reversed(found))[:SHOWN]


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "surrogateescape").split("\n") if data is not None else []


def attribute(
    git: Git,
    old_base: str | None,
    new_base: str,
    files: Sequence[tuple[str, bytes | None, bytes]],
) -> list[list[ConflictHunk]]:
    """The conflict regions of each merged file (``files``: (path, the new base's version, the
    merged version)), each with the upstream commits that changed its lines, traced: one
    walk of the range for all of them."""
    out: list[list[ConflictHunk]] = []
    places: list[list[Region | None]] = []
    for path, base, merged in files:
        text = merged.decode("utf-8", "surrogateescape")
        marked = marked_regions(path, text)
        out.append([hunk for hunk, _end in marked])
        lines = text.split("\n")
        places.append(regions(_lines(base), lines, marked) if base is not None else [])
    paths = sorted({f[0] for f, found in zip(files, places, strict=True) if any(found)})
    if not old_base or old_base == new_base or not paths:
        return out
    changes = git.line_changes(f"{old_base}..{new_base}", paths, trailers.PATCH)
    for k, (path, _base, _merged) in enumerate(files):
        found = places[k] + [None] * (len(out[k]) - len(places[k]))
        traced = [trace(changes, path, place) if place else () for place in found]
        out[k] = [
            replace(h, upstream=up, traced=bool(up)) for h, up in zip(out[k], traced, strict=True)
        ]
    return out
