"""``bisect --matrix``: which (upstream commit, patch) pair a failure comes from.

A bisect with one subset carried names an upstream commit; whether that commit broke upstream's
own code or broke it only together with a patch of the fork takes the other subsets. The matrix
bisects with each subset (``none;essential;all``), then measures every first failing commit it
found against its parent with every subset: a commit that fails (or, with a relative threshold,
costs more than the threshold) with some subsets and not with others interacts with the patches
that are in each subset where it does and in none where it does not. When that leaves several,
each is left out of the smallest failing subset in turn: the one whose absence makes the commit
harmless is named. So "upstream 0be30d4 costs 35 % with essential and 2 % with none: it interacts
with kimi-k25-eagle3-delegation.patch".

COMMAND reports what it always reports to bisect: its exit status (0 passes, 1-127 fails, 125
cannot tell), and with ``--threshold N%`` a figure (the last number it prints on its standard
output, or ``--metric``'s); an absolute threshold cannot compare subsets whose figures differ
anyway, so the matrix takes a percentage. Every run is cached by tree (`runcache`): a tree that
two subsets share, or a rerun, costs nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model.ids import Oid
from ..model.selection import Selector, check_words
from .bisect import BAD, GOOD, BisectResult, Hooks, Judge, bisect, run_step
from .bisect_run import first_parent_line, session
from .runcache import RunCache

REFINE = 8  # patches at most tried one by one for an attribution
INTERACTS, UPSTREAM, UNCLEAR = "interacts", "upstream", "unclear"


@dataclass(frozen=True)
class Subset:
    text: str  # as given: none, all, essential, except:diagnostic
    sel: Selector

    @staticmethod
    def parse(text: str) -> tuple[Subset, ...]:
        found = []
        for word in (w.strip() for w in text.split(";")):
            if not word:
                continue
            if word == "none":
                sel = Selector(None, False, (), None)
            elif word == "all":
                sel = Selector(None, True, None, None)
            elif word.startswith("except:"):
                sel = Selector(None, False, None, _tags(word.removeprefix("except:"), word))
            else:
                sel = Selector(None, False, _tags(word, word), None)
            found.append(Subset(word, sel))
        if len(found) < 2:
            raise PatchstackError(
                f"--matrix needs two subsets or more, separated by ';' (got '{text}')",
                "e.g. --matrix 'none;essential;all' (none, all, TAGS as --only, except:TAGS)",
            )
        return tuple(found)


def _tags(text: str, word: str) -> tuple[str, ...]:
    tags = tuple(t.strip() for t in text.split(",") if t.strip())
    if not tags:
        raise PatchstackError(f"--matrix: no tags in '{word}'", "e.g. essential,diagnostic")
    return tags


@dataclass(frozen=True)
class Cell:
    """One selection at one commit and its parent."""

    subset: str
    patches: tuple[str, ...]
    before: tuple[str, float | None]  # (verdict, figure) at the parent
    after: tuple[str, float | None]  # at the commit
    cost: float | None  # percent worse at the commit than at the parent (with figures)
    fails: bool | None  # does the commit break it? None: cannot tell (skipped)

    def to_json(self) -> dict[str, Any]:
        return {
            "subset": self.subset,
            "patches": list(self.patches),
            "before": {"verdict": self.before[0], "figure": self.before[1]},
            "after": {"verdict": self.after[0], "figure": self.after[1]},
            "cost": self.cost,
            "fails": self.fails,
        }


@dataclass(frozen=True)
class Blame:
    commit: Oid
    subject: str
    cells: tuple[Cell, ...]  # one per subset
    verdict: str  # interacts, upstream, unclear
    patches: tuple[str, ...]  # interacts: the patches it interacts with
    left_out: tuple[Cell, ...] = ()  # the smallest failing subset without each candidate

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "verdict": self.verdict,
            "patches": list(self.patches),
            "subsets": [c.to_json() for c in self.cells],
            "left_out": [c.to_json() for c in self.left_out],
        }


@dataclass(frozen=True)
class MatrixResult:
    good: Oid
    bad: Oid
    subsets: tuple[tuple[Subset, BisectResult], ...]
    blames: tuple[Blame, ...]

    @property
    def ok(self) -> bool:
        return bool(self.blames) and all(b.verdict != UNCLEAR for b in self.blames)

    def to_json(self) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "subsets": [
                {"subset": s.text, "patches": list(r.selected), "bisect": r.to_json()}
                for s, r in self.subsets
            ],
            "blames": [b.to_json() for b in self.blames],
            "ok": self.ok,
        }


def matrix(
    ws: Checkout,
    good: str,
    bad: str,
    subsets: Sequence[Subset],
    command: Sequence[str],
    judge: Judge,
    hooks: Callable[[Subset], Hooks],
    measuring: Callable[[str, str], None],
    reuse: bool = True,
) -> MatrixResult:
    """Bisect with each subset, then attribute each first failing commit found.
    ``measuring(commit, subset)`` is told of each measurement after the bisects."""
    if judge.threshold is not None and not judge.relative:
        raise PatchstackError(
            "--matrix compares subsets whose figures differ anyway: give --threshold as a"
            " percentage",
            f"e.g. --threshold {judge.threshold:g}%: a step is bad when it is that much worse"
            " than GOOD with the same subset",
        )
    series = ws.load_series()
    for s in subsets:
        check_words(series, s.sel)
    line = first_parent_line(ws, good, bad)
    cache = RunCache(ws.git, "bisect")
    results = []
    for s in subsets:
        results.append((s, bisect(ws, good, bad, s.sel, command, judge, hooks(s), reuse, cache)))
    found = {r.culprit[0]: r.culprit[1] for _s, r in results if r.culprit}
    index = {oid: i for i, (oid, _subject) in enumerate(line.commits)}
    blames = []
    with session(ws, line.good, command, judge.reads, judge.figure, reuse, cache) as lab:
        refs: dict[tuple[str, ...], float | None] = {}

        def cell(label: str, names: tuple[str, ...], commit: Oid) -> Cell:
            measuring(commit, label)
            i = index[commit]
            if judge.relative and names not in refs:
                at = run_step(lab, names, 0, line.commits[0], judge, (), _quiet)
                refs[names] = at.figure
            ref = (refs.get(names),) if judge.relative else ()
            before = run_step(lab, names, i - 1, line.commits[i - 1], judge, ref, _quiet)
            after = run_step(lab, names, i, line.commits[i], judge, ref, _quiet)
            return _cell(
                judge, label, names, (before.verdict, before.figure), (after.verdict, after.figure)
            )

        for commit, subject in found.items():
            cells = tuple(cell(s.text, r.selected, commit) for s, r in results)
            measure = functools.partial(cell, commit=commit)
            blames.append(_blame(commit, subject, cells, measure))
    return MatrixResult(line.good, line.bad, tuple(results), tuple(blames))


def _quiet(line: str) -> None:
    """COMMAND's output while measuring: not shown (the bisects showed it)."""


def _cell(
    judge: Judge,
    label: str,
    names: tuple[str, ...],
    before: tuple[str, float | None],
    after: tuple[str, float | None],
) -> Cell:
    cost = None
    if before[1] is not None and after[1] is not None:
        cost = judge.cost(before[1], after[1])
    if before[0] not in (GOOD, BAD) or after[0] not in (GOOD, BAD):
        fails = None
    elif judge.relative and judge.threshold is not None and cost is not None:
        fails = cost > judge.threshold
    else:
        fails = before[0] == GOOD and after[0] == BAD
    return Cell(label, names, before, after, cost, fails)


def _blame(
    commit: Oid,
    subject: str,
    cells: tuple[Cell, ...],
    measure: Callable[[str, tuple[str, ...]], Cell],
) -> Blame:
    """Which patches the commit interacts with, from the subsets where it fails and those
    where it does not; several left by that are left out one by one."""
    yes = [c for c in cells if c.fails]
    no = [c for c in cells if c.fails is False]
    if not yes:
        return Blame(commit, subject, cells, UNCLEAR, ())
    if not no:
        return Blame(commit, subject, cells, UPSTREAM, ())
    common = set.intersection(*(set(c.patches) for c in yes))
    common -= {p for c in no for p in c.patches}
    smallest = min(yes, key=lambda c: len(c.patches))
    candidates = tuple(p for p in smallest.patches if p in common)
    if len(candidates) == 1:
        return Blame(commit, subject, cells, INTERACTS, candidates)
    if not candidates or len(candidates) > REFINE:
        return Blame(commit, subject, cells, UNCLEAR, candidates)
    left_out = []
    for p in candidates:
        names = tuple(n for n in smallest.patches if n != p)
        found = measure(f"{smallest.subset} without {p}", names)
        if found.fails is None:  # a later patch cannot go without it: the patches before it
            before = smallest.patches[: smallest.patches.index(p)]
            found = measure(f"{smallest.subset} up to {p}, without it", before)
        left_out.append(found)
    needed = tuple(p for p, c in zip(candidates, left_out, strict=True) if c.fails is False)
    verdict = INTERACTS if needed else UNCLEAR
    return Blame(commit, subject, cells, verdict, needed or candidates, tuple(left_out))
