"""Where ``refresh --steps`` stops on its way to the target: a pure plan from upstream's
first-parent commits (oldest first, the target last) to the commits each step ends at.

- ``culprits`` (the default): the upstream commits that cause the conflicts (`engine.culprits`,
  the same trace ``check`` names per hunk), ranked by the conflict hunks each causes, are taken
  until they cover `COVER` of them (at most `MOST` - 1); each step ends just after one, so the
  conflicts of a step meet that one change, and the culprits not taken fall into the step of
  the next one taken (clustered). No conflict: one step, the one-shot refresh.
- ``tags``: each commit of the range that upstream tagged ends a step.
- ``N``: every N commits.

The last step always ends at the target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import PatchstackError

CULPRITS = "culprits"
TAGS = "tags"
MOST = 8  # culprit steps at most, the last one included
COVER = 0.8  # the share of the conflict hunks the culprits taken cause


@dataclass(frozen=True)
class StepEnd:
    commit: str  # the upstream commit the step ends at (included)
    why: str  # "culprit", "tag NAME", "every N", "target"
    conflicts: int = 0  # culprit steps: the conflict hunks this commit causes


def parse_mode(text: str) -> str | int:
    """``culprits``, ``tags`` or a positive number of commits; anything else is refused."""
    word = text.strip().lower()
    if word in (CULPRITS, TAGS):
        return word
    if word.isdigit() and int(word) > 0:
        return int(word)
    raise PatchstackError(
        f"--steps: '{text}' is not 'culprits', 'tags' or a number of commits",
        "e.g. 'patchstack refresh --onto origin/main --steps' (culprits), '--steps tags',"
        " '--steps 100'",
    )


def _closed(commits: Sequence[str], ends: list[StepEnd]) -> tuple[StepEnd, ...]:
    """``ends`` in upstream order, one per commit, the target last."""
    if not commits:
        return ()
    order = {c: i for i, c in enumerate(commits)}
    by_commit: dict[str, StepEnd] = {}
    for end in ends:
        if end.commit in order and end.commit != commits[-1]:
            by_commit.setdefault(end.commit, end)
    inner = sorted(by_commit.values(), key=lambda e: order[e.commit])
    counts = {e.commit: e.conflicts for e in ends}
    return (*inner, StepEnd(commits[-1], "target", counts.get(commits[-1], 0)))


def every(commits: Sequence[str], n: int) -> tuple[StepEnd, ...]:
    """A step every ``n`` commits."""
    if n <= 0:
        raise ValueError(n)
    return _closed(
        commits, [StepEnd(commits[i], f"every {n}") for i in range(n - 1, len(commits), n)]
    )


def at_tags(commits: Sequence[str], tags: Mapping[str, Sequence[str]]) -> tuple[StepEnd, ...]:
    """A step ending at each commit of ``commits`` that ``tags`` (commit -> tag names) names."""
    return _closed(
        commits, [StepEnd(c, "tag " + ", ".join(sorted(tags[c]))) for c in commits if tags.get(c)]
    )


def at_culprits(
    commits: Sequence[str], counts: Mapping[str, int], most: int = MOST, cover: float = COVER
) -> tuple[StepEnd, ...]:
    """Steps ending just after the commits that cause most conflict hunks (``counts``: commit
    -> hunks; commits outside ``commits`` are not counted)."""
    order = {c: i for i, c in enumerate(commits)}
    found = {c: n for c, n in counts.items() if c in order and n > 0}
    total = sum(found.values())
    ranked = sorted(found, key=lambda c: (-found[c], order[c]))
    taken: list[StepEnd] = []
    covered = 0
    for commit in ranked:
        if covered >= cover * total or len(taken) >= most - 1:
            break
        taken.append(StepEnd(commit, "culprit", found[commit]))
        covered += found[commit]
    ends = _closed(commits, taken)
    if ends and ends[-1].commit in found and not ends[-1].conflicts:
        ends = (*ends[:-1], StepEnd(ends[-1].commit, "target", found[ends[-1].commit]))
    return ends


def plan(
    mode: str | int,
    commits: Sequence[str],
    counts: Mapping[str, int] | None = None,
    tags: Mapping[str, Sequence[str]] | None = None,
) -> tuple[StepEnd, ...]:
    """The step ends for ``mode`` (see the module's docstring)."""
    if isinstance(mode, int):
        return every(commits, mode)
    if mode == TAGS:
        return at_tags(commits, tags or {})
    return at_culprits(commits, counts or {})
