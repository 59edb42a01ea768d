"""A conflict hunk whose upstream side already holds the patch's change (issue 36, item 1's
built-in rule): upstream took the patch's lines, then extended them.

Proof, by lines: upstream's side is the patch's side with lines inserted only (every line of
the patch's side stands in it, in order), and no inserted line is one the patch took out of
the base (for each inserted line, the patch's side holds at least as many copies of it as the
base does). Then upstream's side keeps everything the patch's change wrote and brings back
nothing it removed: it is the union of both changes, as a person writes it. A patch's side
with no text is never taken as held (a deletion against an edit is a choice, not a union),
nor one whose only lines are blank.

Only this direction: the other (the patch's side holds upstream's change, so the patch's side
would be taken) was refuted once by the engineers' own merges of the SGLang fork (the bigger
side kept a line that used what the other side had removed elsewhere in the tree), where this
one never was (docs/benchmarks.md, issue 36 item 5). A proposal only: the stop shows it in
place of the hunk and says so, and the person confirms it at ``--continue``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .hunks import Hunk, Part

UPSTREAM_HOLDS = "upstream's side already holds the patch's change"


def _inserted(small: Sequence[bytes], big: Sequence[bytes]) -> Counter[bytes] | None:
    """The lines ``big`` adds to ``small`` when it is ``small`` with lines inserted only."""
    at = 0
    for line in big:
        if at < len(small) and line == small[at]:
            at += 1
    if at != len(small):
        return None
    return Counter(big) - Counter(small)


def _holds(small: bytes, big: bytes, base: bytes) -> bool:
    if not small.strip() or big == base:
        return False
    mine, theirs = small.splitlines(keepends=True), big.splitlines(keepends=True)
    extra = _inserted(mine, theirs)
    if extra is None:
        return False
    had, kept = Counter(base.splitlines(keepends=True)), Counter(mine)
    return all(had[line] <= kept[line] for line in extra)


def resolve(hunk: Hunk) -> tuple[bytes, str] | None:
    """The hunk's resolution and the rule that proves it, or None."""
    if hunk.ours == hunk.theirs:
        return None
    if _holds(hunk.theirs, hunk.ours, hunk.base):
        return hunk.ours, UPSTREAM_HOLDS
    return None


def proposals(parts: Sequence[Part]) -> dict[str, tuple[bytes, str]]:
    """By key, each hunk of a merged file that the rule resolves."""
    found: dict[str, tuple[bytes, str]] = {}
    for part in parts:
        if isinstance(part, Hunk):
            got = resolve(part)
            if got is not None:
                found[part.key] = got
    return found
