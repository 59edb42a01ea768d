"""A conflict hunk whose one side already holds the other side's change (issue 36, item 1's
built-in resolver): the patch's change is in upstream's ("upstream took the patch, then
extended it"), or upstream's change is in the patch's ("upstream took part of the patch").

Proof, by lines: the bigger side is the smaller side with lines inserted only (every line of
the smaller side stands in it, in order), and no inserted line is one the smaller side took out
of the base (for each inserted line, the smaller side holds at least as many copies of it as
the base does). Then the bigger side keeps everything the smaller side's change wrote and
brings back nothing it removed, and it is the other side's own result: it is the union of both
changes, as a person writes it. A side with no text is never the smaller one (a deletion
against an edit is a choice, not a union), nor a side whose only lines are blank.

Counted on the real drifts of docs/benchmarks.md (issue 36, item 5); a proposal only: the stop
shows it in place of the hunk and says so, and the person confirms it at ``--continue``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .hunks import Hunk, Part

UPSTREAM_HOLDS = "upstream's side already holds the patch's change"
PATCH_HOLDS = "the patch's side already holds upstream's change"


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
    if _holds(hunk.ours, hunk.theirs, hunk.base):
        return hunk.theirs, PATCH_HOLDS
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
