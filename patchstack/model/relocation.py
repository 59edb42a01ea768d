"""Following the code: where a hunk of a patch goes when upstream deleted its file (moved it,
split it, or moved its functions elsewhere). Pure values and the one location rule; the git
work is `engine.relocate`'s.

The rule: a hunk goes where its whole old side (its context lines and the lines it removes,
in order) occurs **exactly once** among the files the drift changed, compared line for line,
byte for byte (a line's end and indentation included), and holds at least one line with a
letter or digit. Re-indented or edited code is not relocated, nor a block of ``}`` and blank
lines: a wrong relocation is worse than none, so such a hunk stays a conflict, with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .diff import Hunk

_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Moved:
    """One hunk of the patch's file ``path``: where it went (``dest``, the 1-based line of
    its block there), or why it did not (``reason``)."""

    hunk: int  # 1-based, in the patch's diff of the file
    old_start: int  # where the hunk was in the old file
    dest: str | None = None
    line: int = 0
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "hunk": self.hunk,
            "old_start": self.old_start,
            "dest": self.dest,
            "line": self.line,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Relocation:
    """The patch's hunks of ``path``, a file upstream deleted (``commit``: the newest upstream
    commit that deleted it, empty when not found), each carried or not."""

    path: str
    commit: str
    hunks: tuple[Moved, ...]

    @property
    def carried(self) -> tuple[Moved, ...]:
        return tuple(m for m in self.hunks if m.dest is not None)

    @property
    def dests(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.dest for m in self.carried if m.dest is not None))

    @property
    def whole(self) -> bool:
        return bool(self.hunks) and len(self.carried) == len(self.hunks)

    def summary(self) -> str:
        """``relocated a.py -> b/c.py by 1a2b3c4d5e6f (3 of 4 hunks)``; ``not relocated: ...``
        when no hunk was carried."""
        n, total = len(self.carried), len(self.hunks)
        by = f" by {self.commit[:12]}" if self.commit else ""
        if not n:  # no deleting commit found: an older upstream, say, that never had it
            gone = f"deleted upstream{by}" if self.commit else "not in the new base"
            return f"{self.path}: {gone}; no hunk relocated"
        return f"relocated {self.path} -> {', '.join(self.dests)}{by} ({n} of {total} hunks)"

    def hunk_said(self, m: Moved) -> str:
        """One hunk under the `summary` that names its paths: ``hunk 4 (line 281) -> line
        148``; the destination's path only when the hunks went to more than one file."""
        if m.dest is None:
            return f"hunk {m.hunk} (line {m.old_start}) not relocated: {m.reason}"
        where = f"line {m.line}" if len(self.dests) == 1 else f"{m.dest}:{m.line}"
        return f"hunk {m.hunk} (line {m.old_start}) -> {where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "commit": self.commit or None,
            "summary": self.summary(),
            "hunks": [m.to_json() for m in self.hunks],
        }


SAID = 3  # relocations a verdict's note names; the stop's report and --json name every one


def relocations_said(relocations: Sequence[Relocation]) -> str:
    """A verdict's note on the files a stop followed: the first `SAID` summaries, then a
    count (kernel-timers' first stop named 12 on one line of 1,700 characters)."""
    said = [r.summary() for r in relocations]
    rest = len(said) - SAID
    if rest <= 1:
        return "; ".join(said)
    return "; ".join(said[:SAID]) + f"; and {rest} more file(s) (the report names each)"


def sides(hunk: Hunk) -> tuple[list[str], list[str]] | None:
    """(old side, new side) of a hunk, each line without its end; None when a side has no
    final newline (the hunk's place at a file's end is part of its meaning)."""
    if any(ln.startswith("\\") for ln in hunk.lines):
        return None
    old = [ln[1:] for ln in hunk.lines if ln[:1] in (" ", "-", "")]
    new = [ln[1:] for ln in hunk.lines if ln[:1] in (" ", "+", "")]
    return old, new


def occurrences(
    block: Sequence[str], lines: Sequence[str], starts: Sequence[int] | None = None
) -> list[int]:
    """0-based starts of ``block`` as a run of whole lines of ``lines``; ``starts``: the
    places of its first line, when known (`line_index`)."""
    n = len(block)
    if not n or n > len(lines):
        return []
    if starts is None:
        starts = [i for i, ln in enumerate(lines) if ln == block[0]]
    return [i for i in starts if list(lines[i : i + n]) == list(block)]


def line_index(lines: Sequence[str]) -> dict[str, list[int]]:
    """Each line of ``lines`` -> where it is (0-based)."""
    index: dict[str, list[int]] = {}
    for i, ln in enumerate(lines):
        index.setdefault(ln, []).append(i)
    return index


def _anchored(
    block: Sequence[str], lines: Sequence[str], where: Mapping[str, Sequence[int]]
) -> list[int]:
    """`occurrences` of ``block`` found from its rarest line in ``lines`` (``where``: their
    `line_index`): every occurrence holds that line at the same offset, so the same starts,
    in the same order, from fewer places tried."""
    n = len(block)
    if n > len(lines):
        return []
    at, rarest = min(
        ((j, where.get(ln, ())) for j, ln in enumerate(block)), key=lambda e: len(e[1])
    )
    wanted = list(block)
    return [i - at for i in rarest if i >= at and list(lines[i - at : i - at + n]) == wanted]


def locate(
    block: Sequence[str],
    files: Mapping[str, Sequence[str]],
    index: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
) -> tuple[str, int] | str:
    """(file, 0-based start) of the one place ``block`` occurs among ``files`` (path -> its
    lines; ``index``: path -> its `line_index`), or the reason there is none."""
    if not block:
        return "the hunk has no old lines to find"
    if not any(_WORD.search(ln) for ln in block):
        return "its lines hold no letter or digit (braces, blank lines): too common to follow"
    found = []
    for path, lines in files.items():
        if index is None:
            found += [(path, i) for i in occurrences(block, lines)]
        elif block[0] in index[path]:
            found += [(path, i) for i in _anchored(block, lines, index[path])]
    if not found:
        return "its context lines are in no file upstream changed (deleted, or changed too)"
    if len(found) > 1:
        where = sorted({p for p, _i in found})
        return f"its context lines occur {len(found)} times ({', '.join(where[:3])})"
    return found[0]


def replaced(lines: Sequence[str], edits: Sequence[tuple[int, int, Sequence[str]]]) -> list[str]:
    """``lines`` with each (start, length, new lines) edit made; the edits do not overlap."""
    out: list[str] = []
    at = 0
    for start, length, new in sorted(edits, key=lambda e: e[0]):
        out += lines[at:start]
        out += new
        at = start + length
    return out + list(lines[at:])


def overlapping(edits: Sequence[tuple[int, int]]) -> set[int]:
    """Indexes of the (start, length) spans that overlap or touch another."""
    bad: set[int] = set()
    for i, (s1, n1) in enumerate(edits):
        for j, (s2, n2) in enumerate(edits):
            if i < j and s1 <= s2 + n2 and s2 <= s1 + n1:
                bad |= {i, j}
    return bad


def file_lines(data: bytes) -> list[str]:
    """A file's lines as the rule compares them (a last line with no newline matches none)."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        lines[-1] += "\0"  # no newline at its end: the last line matches no hunk's line
    return lines


def file_bytes(lines: Sequence[str]) -> bytes:
    """Lines (as `file_lines` reads them) back to bytes."""
    text = "".join(ln + "\n" for ln in lines)
    if text.endswith("\0\n"):
        text = text[:-2]
    return text.encode("utf-8", "surrogateescape")
