"""Which left-out patch made a line a patch removes (a verdict's ``no-op`` when no upstream
version had that line: `verdicts.held`), from ``-U0`` diffs: those of every patch a command
judges asked of one ``diff-tree --stdin`` (`prefetched`, `git.hunks.pairs_hunks`, kept for the
command by the pair of trees) instead of one process a question (`Listings.line_hunks`; nine
for one weight-sync skip). ``PATCHSTACK_NO_PAIR_HUNKS=1``: one process a question."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence

from ..git import Git, RawDiff
from ..git.hunks import Hunks, only, pairs_hunks
from .replay import Step

Raws = Mapping[tuple[str, str], list[RawDiff]]


def removes_made_by(
    git: Git,
    steps: Sequence[Step],
    step: Step,
    missing: Collection[str],
    raws: Raws | None = None,
) -> dict[str, set[tuple[str, bytes]]]:
    """The patches left out before ``step`` that made a line it removes, with those lines
    (path, text): where they stand in ``step.before``, followed there by ``-U0`` diffs. Only a
    change on this chain counts (one deferred earlier made no line of ``step.before``).
    ``raws``: the raw diffs `prefetched` asked."""
    before, mine_paths = _touching(git, steps, step, missing, raws)
    if not before:
        return {}
    line_hunks = _line_hunks(git, step, before, mine_paths)
    mine = line_hunks(step.before, step.after, sorted(mine_paths))
    removed = {p: {n for o, c, _, _ in hs for n in range(o, o + c)} for p, hs in mine.items()}
    removed = {p: lines for p, lines in removed.items() if lines}
    texts: dict[str, list[bytes]] = {}
    out: dict[str, set[tuple[str, bytes]]] = {}
    for other in before:
        made = line_hunks(other.before, other.after, sorted(removed))
        added = {p: [(o, c) for _, _, o, c in hs if c] for p, hs in made.items()}
        added = {p: spans for p, spans in added.items() if spans}
        moves = line_hunks(other.after, step.before, sorted(added))
        for p, spans in added.items():
            for n in (n for o, c in spans for n in range(o, o + c)):
                at = _carried(n, moves.get(p, ()))
                if at in removed[p]:
                    if p not in texts:
                        texts[p] = (git.show_file(step.before, p) or b"").split(b"\n")
                    out.setdefault(other.name, set()).add((p, texts[p][at - 1]))
    return out


def _left_out(steps: Sequence[Step], step: Step, missing: Collection[str]) -> list[Step]:
    k = next(i for i, s in enumerate(steps) if s.name == step.name)
    return [s for s in steps[:k] if (s.name in missing or s.deferred) and s.before != s.after]


def _touching(
    git: Git,
    steps: Sequence[Step],
    step: Step,
    missing: Collection[str],
    raws: Raws | None,
) -> tuple[list[Step], set[str]]:
    """(the patches left out before ``step`` with a change of their own to one of its files,
    its files)."""
    before = _left_out(steps, step, missing)
    if not before:
        return [], set()
    pairs = [(step.before, step.after)] + [(s.before, s.after) for s in before]
    got = [raws[p] for p in pairs] if raws is not None else git.raw_diffs(pairs)
    paths = [{d[4] for d in raw} for raw in got]
    return [s for s, theirs in zip(before, paths[1:], strict=True) if theirs & paths[0]], paths[0]


def prefetched(
    git: Git, steps: Sequence[Step], todo: Sequence[Step], missing: Collection[str]
) -> dict[tuple[str, str], list[RawDiff]] | None:
    """The raw diffs `removes_made_by` reads for each of ``todo``, asked of one process, and
    its ``-U0`` hunks of another (`pairs_hunks`, kept for the command): two processes for a
    command's verdicts, not two a patch. None with ``PATCHSTACK_NO_PAIR_HUNKS=1``."""
    if os.environ.get("PATCHSTACK_NO_PAIR_HUNKS"):
        return None
    lefts = [(s, _left_out(steps, s, missing)) for s in todo]
    wanted: list[tuple[str, str]] = [
        (o.before, o.after) for s, before in lefts if before for o in (s, *before)
    ]
    pairs = list(dict.fromkeys(wanted))
    raws = dict(zip(pairs, git.raw_diffs(pairs), strict=True))
    hunks: list[tuple[str, str]] = []
    paths: set[str] = set()  # a patch's hunks are read for its own files alone
    for s in todo:
        before, mine = _touching(git, steps, s, missing, raws)
        hunks += _hunk_pairs(s, before)
        paths |= mine if before else set()
    pairs_hunks(git, hunks, paths)
    return raws


def _hunk_pairs(step: Step, before: Sequence[Step]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = [(step.before, step.after)] if before else []
    return pairs + [p for s in before for p in ((s.before, s.after), (s.after, step.before))]


def _line_hunks(
    git: Git, step: Step, before: Sequence[Step], paths: Collection[str]
) -> Callable[[str, str, Sequence[str]], Hunks]:
    """`Git.line_hunks` of the pairs `removes_made_by` asks for ``step``, all asked of one
    process (`pairs_hunks`, kept for the command) before the first is read;
    ``PATCHSTACK_NO_PAIR_HUNKS=1``: one process a question, as before."""
    if os.environ.get("PATCHSTACK_NO_PAIR_HUNKS"):
        return git.line_hunks
    pairs = _hunk_pairs(step, before)
    found = dict(zip(pairs, pairs_hunks(git, pairs, paths), strict=True))

    def asked(a: str, b: str, wanted: Sequence[str]) -> Hunks:
        return only(found[a, b], wanted) if wanted else {}

    return asked


def _carried(n: int, hunks: Sequence[tuple[int, int, int, int]]) -> int | None:
    """Where line ``n`` of a diff's old side stands on its new side (None: changed)."""
    shift = 0
    for old, count, _new, new_count in hunks:
        if count and old <= n < old + count:
            return None
        if (count and old + count <= n) or (not count and old < n):
            shift += new_count - count
    return n + shift
