"""The upstream commits behind a conflicting hunk, traced at the hunk's own place.

A conflict region's upstream side ("there now") is lines of the tree the patch was merged
onto; its place in the new base's file is found by aligning that file with the merged file's
upstream side (the regions are lines of the new base; an earlier patch's lines are not).
From there the region is followed back through what each first-parent commit of
``old_base..new_base`` did to the file (one ``log -p -U0`` walk for every file), as ``git log
-L`` follows a range: a commit whose change meets the region changed those lines (lines it
took out: inside the region, where it is empty, or where a diff may place the same deletion
so, the lines at its ends repeated beside it; next to it only when they are of the hunk's
base side, as the merge met them), and the region grows to what that change replaced.
Where the region is empty (its lines taken out, or inserted by a later commit) only a change
that took out lines of the hunk's base side meets it, and it grows to those alone: lines
inserted around it, or other lines taken out (or replaced) there, are none of the hunk's.
A commit that created the file (a move or copy from another file, or a new file) brought
the lines there; the trace ends with it (a point there has no lines it brought). The
commits found are ranked oldest first (the one that changed the patch's lines first), at
most `SHOWN`; a region that cannot be placed (binary, or only an earlier patch's lines) has
none: "unknown", never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..git import Git
from ..git.history import LineChanges
from ..model import trailers
from ..model.conflict import ConflictHunk, UpstreamCommit, marked_regions

SHOWN = 5  # culprits kept per hunk, oldest first
BARE = ("", "{", "}")  # lines that align anywhere: no sign of the hunk's own lines
MOVES = 3  # how far from a region a deletion is looked at, to see if a diff may place it there
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
    from difflib import SequenceMatcher

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


def slides(parent: Sequence[str], a0: int, a1: int) -> tuple[int, int]:
    """How many lines a deletion of ``parent``'s lines [a0, a1) (1-based) can move up and
    down and still take out the same lines (a blank line or ``}`` at either end of them that
    the lines beside repeat): where else a diff may place it."""
    up = 0
    while a0 - 1 - up >= 1 and parent[a0 - 2 - up] == parent[a1 - 2 - up]:
        up += 1
    down = 0
    while a1 + down <= len(parent) and parent[a0 - 1 + down] == parent[a1 - 1 + down]:
        down += 1
    return up, down


Walk = Callable[[str, Sequence[str], str | None], list[LineChanges]]  # `Git.line_changes`
Slides = Callable[[int, int], tuple[int, int]]  # a deletion's [a0, a1) -> `slides`
Beside = Callable[[int, int], bool]  # the parent's lines [a0, a1) are of the hunk's base
Own = Callable[[int, int], Region | None]  # where in the parent's [a0, a1) the hunk's base is


def _back(
    hunks: Sequence[tuple[int, int, int, int]],
    region: Region,
    slid: Slides | None = None,
    beside: Beside | None = None,
    own: Own | None = None,
) -> tuple[bool, Region]:
    """Whether a commit's hunks meet ``region`` (lines of the commit's version), and where
    the region was in its parent's version (``slid``: how far each deletion may move, `slides`
    of the parent's lines; None: it stays where the diff put it; ``beside``: whether lines a
    deletion next to the region took out are the hunk's own, None: they are not; ``own``:
    where among the lines a change took out the hunk's base side stands, None: all are)."""
    s, e = region
    spans = []  # (old start, old end, new start, new end), half-open
    for a, alen, c, clen in hunks:
        a0, c0 = (a if alen else a + 1), (c if clen else c + 1)
        spans.append((a0, a0 + alen, c0, c0 + clen))

    def meets(a0: int, a1: int, c0: int, c1: int) -> int | None:
        """None, or how far the change moves to meet the region (a deletion only)."""
        if c1 > c0:
            hit = c0 < s < c1 if s == e else c0 < e and s < c1
            return 0 if hit else None
        if s < c0 < e or s == c0 == e:  # lines taken out inside it, or where it is empty
            return 0
        # or where a diff may place them as well (two diffs of the same change: a blank line
        # at either end); not a line apart when a line between stayed (label seed 1106)
        shift = s - c0 if c0 <= s else e - c0
        if shift:
            if slid is None or abs(shift) > MOVES:
                return None
            up, down = slid(a0, a1)
            if not -up <= shift <= down:
                return None
        # next to lines that are there: only lines of the hunk's own base (the merge met
        # them); not a deletion the patch's base made too (seed 7981786: upstream took p1's)
        if s < e and (beside is None or not beside(a0 + shift, a1 + shift)):
            return None
        return shift

    def where(line: int) -> int | None:  # a line (or point) outside every hunk, in the parent
        if any(c0 <= line < c1 for _a0, _a1, c0, c1 in spans):
            return None
        return line + sum((a1 - a0) - (c1 - c0) for a0, a1, c0, c1 in spans if c1 <= line)

    met = []  # the parent's lines each change that meets the region replaced (moved to meet)
    for sp in spans:
        shift = meets(*sp)
        if shift is None:
            continue
        took = (sp[0] + shift, sp[1] + shift)
        if s == e and own is not None:
            # where the region is empty (its lines were inserted later, or upstream took them
            # out) a change is the hunk's only as far as what it took out holds the hunk's
            # base lines: lines inserted around the point, or a deletion or a replacement of
            # none of them, did not change them, and the region grows to them alone, not to
            # all the change replaced (kernel-timers: a class taken out there named the
            # commits that changed its other methods; an insertion of lines around a fork
            # line named its commit; evo-v3: lines written in place of others none of the
            # hunk's, where a later commit inserted its lines, named an edit of those others)
            mine = own(*took) if took[1] > took[0] else None
            if mine is None:
                continue
            took = mine
        met.append(took)
    if s == e:  # a point between lines s - 1 and s
        if not met:
            inside = [sp for sp in spans if sp[2] < s < sp[3]]  # an insertion around it
            if inside:
                return False, (inside[0][0],) * 2
            at = s + sum((a1 - a0) - (c1 - c0) for a0, a1, c0, c1 in spans if c1 <= s)
            return False, (at, at)
        starts, ends = [m[0] for m in met], [m[1] for m in met]
    else:
        first, last = where(s), where(e - 1)
        starts = [m[0] for m in met] + ([first] if first is not None else [])
        ends = [m[1] for m in met] + ([last + 1] if last is not None else [])
    return bool(met), (min(starts), max(ends))


def trace(
    changes: Sequence[LineChanges],
    path: str,
    region: Region,
    read: Callable[[str], Sequence[str]] | None = None,
    expected: Sequence[str] = (),
) -> tuple[UpstreamCommit, ...]:
    """The commits of ``changes`` (newest first) that changed ``region`` of ``path``, oldest
    first, at most `SHOWN`; none when a binary change is met (it cannot be told). Commits
    that together change nothing (the file before the oldest is the file after the newest:
    a change and its revert) changed no line: none of them is named, and the trace goes on
    from the region as it was after them. ``read``: a version's lines by blob id, to tell
    where else a deletion near the region may be placed (None: where the diff put it) and
    whether what it took out next to the region is of ``expected``, the hunk's base side."""
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
        slid, beside, own = None, None, None
        if read is not None and lines.before.strip("0"):
            slid, beside = _slider(read, lines.before), _beside(read, lines.before, expected)
            own = _own(read, lines.before, expected)
        lines_there = region[1] > region[0]
        met, region = _back(lines.hunks, region, slid, beside, own)
        if lines.created:  # it brought every line of the file; a point has none
            met = lines_there
        if met and not change.flagged:  # a patch commit of the fork's is not upstream's
            found.append(UpstreamCommit(change.oid, change.subject))
        if lines.created:
            break
        if lines.before in seen:
            count, region = seen[lines.before]
            del found[count:]
    return tuple(reversed(found))[:SHOWN]


def _slider(read: Callable[[str], Sequence[str]], blob: str) -> Slides:
    return lambda a0, a1: slides(read(blob), a0, a1)


def _beside(read: Callable[[str], Sequence[str]], blob: str, expected: Sequence[str]) -> Beside:
    def beside(a0: int, a1: int) -> bool:
        gone = list(read(blob)[a0 - 1 : a1 - 1])
        n = len(gone)
        return n > 0 and any(list(expected[i : i + n]) == gone for i in range(len(expected)))

    return beside


def _own(read: Callable[[str], Sequence[str]], blob: str, expected: Sequence[str]) -> Own:
    def own(a0: int, a1: int) -> Region | None:
        """The span of the parent's lines [a0, a1) that aligns with the hunk's base side: all
        of them when they stand in it so (as `_beside` asks), else the blocks that hold a
        line other than a blank or a brace, where it has one; None: no such line."""
        from difflib import SequenceMatcher

        gone = list(read(blob)[a0 - 1 : a1 - 1])
        n = len(gone)
        if any(list(expected[i : i + n]) == gone for i in range(len(expected))):
            return a0, a1
        blocks = SequenceMatcher(None, gone, list(expected), autojunk=False)
        bare = all(line.strip() in BARE for line in expected)
        held = [
            (a, a + n)
            for a, _b, n in blocks.get_matching_blocks()
            if n and (bare or any(line.strip() not in BARE for line in gone[a : a + n]))
        ]
        if not held:
            return None
        return a0 + min(a for a, _ in held), a0 + max(b for _, b in held)

    return own


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "surrogateescape").split("\n") if data is not None else []


def attribute(
    git: Git,
    old_base: str | None,
    new_base: str,
    files: Sequence[tuple[str, bytes | None, bytes]],
    walk: Walk | None = None,
) -> list[list[ConflictHunk]]:
    """The conflict regions of each merged file (``files``: (path, the new base's version, the
    merged version)), each with the upstream commits that changed its lines, traced: one
    walk of the range for all of them (``walk``: `Git.line_changes` or what stands for it,
    each file's commits kept from an earlier command)."""
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
    changes = (walk or git.line_changes)(f"{old_base}..{new_base}", paths, trailers.PATCH)
    versions: dict[str, list[str]] = {}

    def read(blob: str) -> list[str]:  # a version's lines, each read once
        if blob not in versions:
            text = _lines(git.read_blob(blob))
            versions[blob] = text[:-1] if text and not text[-1] else text
        return versions[blob]

    for k, (path, _base, _merged) in enumerate(files):
        found = places[k] + [None] * (len(out[k]) - len(places[k]))
        traced = [
            trace(changes, path, place, read, hunk.expected) if place else ()
            for hunk, place in zip(out[k], found, strict=True)
        ]
        out[k] = [
            replace(h, upstream=up, traced=bool(up)) for h, up in zip(out[k], traced, strict=True)
        ]
    return out
