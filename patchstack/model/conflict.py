"""Conflicts: the one report type every command raises and the CLI renders, and the rules for
reading and labelling diff3-style conflict markers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UnresolvedMerge
from .ids import Oid

if TYPE_CHECKING:  # (a conflict's reader, such as the series file's, needs no diff model)
    from .relocation import Relocation

_MARKER_RE = re.compile(r"(<<<<<<<|>>>>>>>|\|\|\|\|\|\|\|)( |\Z)|=======\Z")


@dataclass(frozen=True)
class UpstreamCommit:
    oid: str
    subject: str


@dataclass(frozen=True)
class ConflictHunk:
    """One conflicting region: where, what the patch expected there (its own base), what is
    there now, and what the patch wants; with the upstream commits that changed these lines
    (``traced``) or, failing that, touched the file."""

    path: str
    line: int  # 1-based line of the region in the merged file
    expected: tuple[str, ...]
    now: tuple[str, ...]
    wanted: tuple[str, ...]
    upstream: tuple[UpstreamCommit, ...] = ()
    traced: bool = False


@dataclass(frozen=True)
class Conflict:
    """A patch that could not be applied or merged."""

    patch: str
    files: tuple[str, ...]
    hunks: tuple[ConflictHunk, ...] = ()
    culprits: tuple[str, ...] = ()  # unselected patches that touch the same lines
    detail: str = ""  # git's own words, when there are no hunks to show
    merged_tree: Oid | None = None  # the merge result, conflict markers included
    note: str = ""  # why it stops, when patchstack could not take a resolution it knows of
    kind: str = "primary"  # or "knock-on": it conflicts only because ``root`` is missing
    root: str | None = None  # the earlier conflicting or deferred patch it waits for
    # Upstream's side of every conflicting hunk holds the patch's lines: it may have taken
    # the patch its own way (this commit made those lines; an empty id: not known).
    superseded: UpstreamCommit | None = None
    # Never placed: without ``root`` it would lose or alter its change (it changes lines
    # ``root`` makes), so it waits for it (`engine.needs`); a knock-on of it, or primary when
    # with ``root`` in place it still conflicts (its hunks are of that merge).
    held: bool = False
    # A file upstream deleted: where each of its hunks went (`engine.relocate`), a proposal
    relocations: tuple[Relocation, ...] = ()

    @property
    def relocated(self) -> bool:
        """Some hunk was carried to where upstream moved its lines: a proposal stands."""
        return any(r.carried for r in self.relocations)

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "files": list(self.files),
            "hunks": [
                {
                    "path": h.path,
                    "line": h.line,
                    "expected": list(h.expected),
                    "now": list(h.now),
                    "wanted": list(h.wanted),
                    "upstream_commits": [
                        {"commit": u.oid, "subject": u.subject} for u in h.upstream
                    ],
                    "traced_lines": h.traced,
                }
                for h in self.hunks
            ],
            "culprits": list(self.culprits),
            "detail": self.detail,
            "note": self.note,
            "kind": self.kind,
            "root": self.root,
            "superseded_by": (
                {"commit": self.superseded.oid, "subject": self.superseded.subject}
                if self.superseded
                else None
            ),
            "held": self.held,
            "relocations": [r.to_json() for r in self.relocations],
        }


def parse_markers(path: str, text: str) -> list[ConflictHunk]:
    """Conflict regions of a diff3-style merged file."""
    return [hunk for hunk, _end in marked_regions(path, text)]


def marked_regions(path: str, text: str) -> list[tuple[ConflictHunk, int]]:
    """`parse_markers`' regions, each with the (0-based) line after its closing marker (its
    opening marker's is ``hunk.line - 1``). Only the regions' lines are split (kernel-timers'
    first stop reads 91 conflicted files, most of each outside its regions)."""
    hunks = []
    i = 0
    for at, offset in _openings(text):
        if at < i:  # a line of the region before
            continue
        end = text.find("\n", offset)
        close = -1 if end == -1 else text.find("\n>>>>>>>", end)
        if end == -1:
            region = []
        else:
            region = text[end + 1 : close if close != -1 else len(text)].split("\n")
            region = region if close != end else []
        i = at + 1 + len(region) + 1
        now: list[str] = []
        expected: list[str] = []
        wanted: list[str] = []
        part = now
        for line in region:
            if line.startswith("|||||||"):
                part = expected
            elif line == "=======":
                part = wanted
            else:
                part.append(line)
        hunks.append((ConflictHunk(path, at + 1, tuple(expected), tuple(now), tuple(wanted)), i))
    return hunks


def _openings(text: str) -> list[tuple[int, int]]:
    """The (0-based) lines of ``text`` that may open a conflict region, and where each
    starts, found with ``str.find`` (a large merged file has few): `parse_markers` reads the
    regions only."""
    found = []
    line = last = 0
    at = text.find("<<<<<<<")
    while at != -1:
        if at == 0 or text[at - 1] == "\n":
            line += text.count("\n", last, at)
            last = at
            end = text.find("\n", at)
            head = text[at : end if end != -1 else len(text)]
            if head[:8] == "<<<<<<< " or head == "<<<<<<<":
                found.append((line, at))
        at = text.find("<<<<<<<", at + 1)
    return found


def ours_side(data: bytes) -> bytes | None:
    """A diff3-style merged file with each conflict region replaced by its first side
    ("ours"), or None when its markers do not read as git writes them (the caller makes sure
    that no side held marker lines of its own)."""
    return one_side(data, "ours")


def one_side(data: bytes, side: str) -> bytes | None:
    """A diff3-style merged file with each conflict region replaced by one side: ``"ours"``
    (the first) or ``"theirs"`` (after ``=======``: the patch's, when a patch was merged); None
    when its markers do not read as git writes them."""
    if b"\r" not in data:
        return _one_side_lf(data, side)
    out, state = [], "out"
    for line in data.splitlines(keepends=True):
        new = _after(line.rstrip(b"\r\n"), state)
        if new is None:
            return None
        if new:
            state = new
        elif state in ("out", side):
            out.append(line)
    return b"".join(out) if state == "out" else None


def _after(bare: bytes, state: str) -> str | None:
    """The state after line ``bare`` (without its end) in state ``state``: the new state at a
    marker, "" for a line of text, None for a marker out of place."""
    if bare == b"<<<<<<<" or bare.startswith(b"<<<<<<< "):
        return "ours" if state == "out" else None
    if bare == b"|||||||" or bare.startswith(b"||||||| "):
        return "base" if state == "ours" else None
    if bare == b"=======" and state in ("ours", "base"):
        return "theirs"
    if bare == b">>>>>>>" or bare.startswith(b">>>>>>> "):
        return "out" if state == "theirs" else None
    return ""


# Where a line may be a marker: only such lines are read one by one (`_one_side_lf`).
_MAYBE_MARKER = re.compile(rb"^(?:<<<<<<<|\|\|\|\|\|\|\||=======|>>>>>>>)", re.MULTILINE)


def _one_side_lf(data: bytes, side: str) -> bytes | None:
    """`one_side` of a text whose lines all end in ``\n`` (no ``\r``, which splits lines
    too): the same state machine, fed only the lines that start like a marker; the lines
    between two markers are in one state, and are kept or dropped together."""
    out, state, at = [], "out", 0
    for found in _MAYBE_MARKER.finditer(data):
        start = found.start()
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        new = _after(data[start:end].rstrip(b"\n"), state)
        if new is None:
            return None
        if not new:
            continue  # a line of the text that only starts like a marker
        if state in ("out", side):
            out.append(data[at:start])
        state, at = new, end
    if state != "out":
        return None
    out.append(data[at:])
    return b"".join(out)


_STARTS = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")
_MERGE_HINT = (
    "a merge (a 'git pull' of the series) left its markers: keep one side of each"
    " '<<<<<<<' ... '>>>>>>>' region, delete the markers, and run the command again;"
    " nothing was changed"
)


def is_marker(line: str, bare_separator: bool = True) -> bool:
    """Whether ``line`` (at column 0) is one of git's conflict markers; ``bare_separator``:
    ``=======`` counts (alone, it is also a heading's underline)."""
    line = line.rstrip("\r")
    return bool(_MARKER_RE.match(line)) and (bare_separator or line != "=======")


def unresolved_in_patch(lines: Sequence[str], diff_start: int, path: str) -> None:
    """Refuse a patch file that holds a merge's markers: a marker line in the header (a
    ``=======`` there only along with a ``<<<<<<<``, ``|||||||`` or ``>>>>>>>`` line, since
    alone it underlines a heading), or any marker where a diff line was due (column 0: an
    added, removed or context line that looks like one starts with ``+``, ``-`` or a
    space, and is the file's own content)."""
    found = [i for i, ln in enumerate(lines) if ln.startswith(_STARTS) and is_marker(ln)]
    if not found:
        return
    conflict = any(i >= diff_start or is_marker(lines[i], False) for i in found)
    if conflict:
        raise UnresolvedMerge(path, found[0] + 1, _MERGE_HINT)


def unresolved_in_series(lines: Sequence[str], path: str) -> None:
    """Refuse a series file that holds a merge's markers (no series line looks like one)."""
    for i, line in enumerate(lines):
        if line.startswith(_STARTS) and is_marker(line):
            raise UnresolvedMerge(path, i + 1, _MERGE_HINT)


def marker_lines(text: str) -> list[int]:
    """1-based numbers of the lines of ``text`` that are conflict markers."""
    return [i for i, line in enumerate(text.split("\n"), start=1) if _MARKER_RE.match(line)]


def relabel(data: bytes, names: Mapping[str, str], base_label: str) -> bytes:
    """``data`` with the labels of its conflict markers renamed: ``names`` maps what git wrote
    after ``<<<<<<<``/``>>>>>>>`` (a throwaway commit's id) to a readable label, and the
    ``|||||||`` line of the merge base gets ``base_label``."""
    base = b"||||||| " + base_label.encode("utf-8", "surrogateescape")

    def label(m: re.Match[bytes]) -> bytes:
        if m[1] is None:
            return base
        was = m[2].decode("ascii", "replace").strip()
        return m[1] + names.get(was, was).encode("utf-8", "surrogateescape")

    # (one search of the file: a line by line reading cost 0.3 s on kernel-timers' 91 files)
    return _LABELLED.sub(label, data)


_LABELLED = re.compile(rb"^(?:(<<<<<<< |>>>>>>> )(.*)|\|{7} [0-9a-f]{4,64})$", re.MULTILINE)
