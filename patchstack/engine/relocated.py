"""What a relocation proposes (`relocate`): the proposal, named once the walks answer
(`Unnamed`: a stop publishes its tree while git walks for the commits it names); and the
hunks of a file upstream kept that it lost, with that file merged without them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..git import Git, MergeResult
from ..model.diff import FileDiff
from ..model.ids import Oid
from ..model.relocation import Relocation, file_bytes, file_lines, occurrences, replaced, sides


def _places(lines: list[str], line: str) -> list[int]:
    """Where ``line`` is in ``lines``, 0-based, in order (`line_index`'s answer for it)."""
    found, at = [], -1
    try:
        while True:
            at = lines.index(line, at + 1)
            found.append(at)
    except ValueError:
        return found


def _wordy(line: str) -> bool:
    return any(c.isalnum() for c in line)


@dataclass(frozen=True)
class Proposal:
    """The conflicting merge's tree with the relocated hunks carried (``tree``), the paths it
    changed from that tree, and each deleted file's relocation."""

    tree: Oid
    relocations: tuple[Relocation, ...]
    paths: tuple[str, ...]

    @property
    def carried(self) -> bool:
        return any(r.carried for r in self.relocations)

    def summary(self) -> str:
        return "; ".join(r.summary() for r in self.relocations)


@dataclass(frozen=True)
class Unnamed:
    """A proposal whose tree and paths are known, the upstream commits its relocations name
    (the walks' answers) not yet: `named` waits for them, then ends the walks; `close` ends
    them unasked."""

    tree: Oid
    paths: tuple[str, ...]
    answer: Callable[[], Proposal]
    close: Callable[[], None]

    def named(self) -> Proposal:
        try:
            return self.answer()
        finally:
            self.close()

    def answered(self) -> Unnamed:
        """This proposal named now (the plain order: before a stop is published)."""
        named = self.named()
        return replace(self, answer=lambda: named, close=lambda: None)


@dataclass(frozen=True)
class Asked:
    """A proposal asked for, its files' hunks read and their blocks expected."""

    before: Oid
    after: Oid
    onto: Oid
    merged: MergeResult
    gone: list[str]
    diffs: dict[str, FileDiff]
    missing: dict[str, list[tuple[int, list[str], list[str], str]]]


def lost_hunks(
    git: Git, path: str, fd: FileDiff | None, onto: Oid
) -> list[tuple[int, list[str], list[str], str]]:
    """The hunks of ``path`` whose old lines ``onto``'s version of it no longer holds:
    (hunk, old side, new side, one of those lines it lost); none when one of them cannot
    be followed (no such line, or a side without its final newline)."""
    entry = git.entries_at(onto, [path]).get(path)
    if entry is None or fd is None:
        return []
    here = file_lines(git.read_blob(entry[1]))
    at = set(here)  # (a hunk's first line is looked for only where the file has it)
    found = []
    for k, h in enumerate(fd.hunks, start=1):
        pair = sides(h)
        if pair is None:
            return []
        old, new = pair
        if occurrences(old, here, _places(here, old[0]) if old and old[0] in at else ()):
            continue  # still here
        lost = next((ln for ln in old if ln not in at and _wordy(ln)), "")
        if not lost:
            return []
        found.append((k, old, new, lost))
    return found


def merged_without(
    git: Git, before: Oid, after: Oid, onto: Oid, path: str, fd: FileDiff, moved: list[int]
) -> bytes | None:
    """``path`` merged as the patch changes it but for the ``moved`` hunks (1-based):
    the file upstream kept with the rest of the patch, or None when that conflicts."""
    ids = [git.entries_at(t, [path])[path][1] for t in (onto, before, after)]
    ours, base, theirs = (git.read_blob(b) for b in ids)
    lines = file_lines(theirs)
    undo = []
    for k in moved:
        h = fd.hunks[k - 1]
        pair = sides(h)
        assert pair is not None
        start = h.new_start - 1 if h.new_len else h.new_start
        undo.append((start, len(pair[1]), pair[0]))
    result, clean = git.merge_file(ours, base, file_bytes(replaced(lines, undo)))
    return result if clean else None
