"""Stacks in the object database: patches placed one on the other (`contract`), as ``push``,
``pop`` and every rebuild of the applied stack make them.

Where a patch's parent is its canonical one, its commit is the canonical chain's; elsewhere it
is carried by ids in one fast-import stream when `fastpath.ProvenStream.carry` can prove the
merge, else placed by the merge (`Engine.place`) and committed. A patch whose placement
changes nothing gets no commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..git import RawDiff
from ..model.ids import Oid
from ..model.stack import AppliedPatch
from .chain import Engine
from .fastpath import ProvenStream


@dataclass(frozen=True)
class Built:
    """What `Engine.build` made: a commit per patch placed, in order, and the patches whose
    placement changed nothing (the tree already held them: left unapplied, as rebase drops a
    commit that becomes empty)."""

    commits: tuple[tuple[str, Oid, Oid], ...]  # (name, commit, tree)
    upstream: tuple[str, ...]
    head: Oid
    tree: Oid

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _c, _t in self.commits)


def build(
    engine: Engine,
    base: Oid,
    base_tree: Oid,
    keep: Sequence[AppliedPatch],
    names: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
) -> Built:
    """Commits for ``names`` on top of ``keep`` (on ``base``), each patch placed on the
    tree of the one before it (`contract`); a patch whose placement changes nothing gets
    no commit (`Built.upstream`). ``progress(done, total)`` is called as patches are
    made."""
    parent = keep[-1].commit if keep else base
    tree = keep[-1].tree if keep else base_tree
    selected = [p.name for p in keep] + list(names)
    last = max((engine.series.index(n) + 1 for n in names), default=0)
    total = max(0, last + 1 - len(engine._commits)) + len(names)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], total)

    # Every placement needs the canonical chain up to its patch: made in one stream.
    engine.extend(last, tick)
    built: list[tuple[str, Oid, Oid]] = []
    upstream: list[str] = []
    session: ProvenStream | None = None  # off the canonical chain: carried by ids
    pending: list[int] = []  # entries of `built` made by the stream, trees not known yet
    diffs = _chain_diffs(engine, names) if engine.shortcuts else {}

    def settle() -> Oid:
        """Close the stream and fill in the trees of its commits; the current tree."""
        nonlocal session
        if session is not None:
            session.close()
            session = None
        for i, t in zip(pending, engine.git.trees_of([built[i][1] for i in pending]), strict=True):
            built[i] = (built[i][0], built[i][1], t)
        pending.clear()
        return built[-1][2] if built else tree

    for name in names:
        k = engine.series.index(name) + 1
        if parent == engine.canonical_commit(k - 1):
            settle()
            if engine.contained(k):
                upstream.append(name)
                tick()
                continue
            parent, tree = engine.canonical_commit(k), engine.canonical(k)
        else:
            commit = None
            if name in diffs:
                if session is None:
                    session = ProvenStream(engine.git, parent)
                    session.look_up(p for d in diffs.values() for _m, _n, _o, _i, p in d)
                commit = session.carry(
                    parent,
                    engine.patch(name),
                    engine.committer,
                    diffs[name],
                    engine.canonical(k - 1),
                )
            if commit is not None:
                parent, tree = commit, Oid("")
                pending.append(len(built))
            else:
                current = settle()
                tree = engine.place(current, name, selected)
                if tree == current:
                    upstream.append(name)
                    tick()
                    continue
                parent = engine.commit(parent, tree, name)
        built.append((name, parent, tree))
        tick()
    final = settle()
    return Built(tuple(built), tuple(upstream), parent, final)


def _chain_diffs(engine: Engine, names: Sequence[str]) -> dict[str, list[RawDiff]]:
    """The canonical chain's raw diff of each patch of ``names`` that changes something
    (``C[k-1] -> C[k]``), for carrying by ids: read in one process."""
    ks = [engine.series.index(n) + 1 for n in names]
    pairs = [(engine.canonical(k - 1), engine.canonical(k)) for k in ks]
    wanted = [(n, pair) for n, pair in zip(names, pairs, strict=True) if pair[0] != pair[1]]
    raws = engine.git.raw_diffs([pair for _n, pair in wanted])
    return {n: raw for (n, _pair), raw in zip(wanted, raws, strict=True)}
