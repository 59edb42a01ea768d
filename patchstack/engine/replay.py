"""Carrying a whole series onto a new base: the replay behind ``refresh`` and ``check``.

The old patch files define the old canonical chain ``C[0..n]`` (the series base plus each
patch, exactly, as in `chain`). Each patch k is the change ``C[k-1] -> C[k]``; it is carried
onto the new tree ``T[k-1]`` by a three-way merge (``merge-tree``), giving ``T[k]``. Reality
wins where it exists: when an applied commit's parent tree is already ``T[k-1]`` (the rebase
route, a stack that did not move, a folded patch), its tree is ``T[k]``. A patch whose files
upstream did not touch is committed in one fast-import stream with the old chain's blob ids,
with no merge at all (`Placer`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..git import Git, MergeResult
from ..model.ids import Oid
from ..model.series import Series
from ..model.stack import Stack
from .chain import Engine
from .contract import place_fast

if TYPE_CHECKING:
    from .needs import Needs
    from .placer import Placer
    from .renames import RenameProof

# (the step, the tree it was merged onto, the merge) -> a tree that settles the conflict
Resolver = Callable[["Step", Oid, MergeResult], Oid | None]


@dataclass(frozen=True)
class Step:
    """Patch ``name``: the old change ``before -> after`` and, when applied, its real one;
    ``commit``: a commit whose parent's tree is ``before`` and whose tree is ``after`` (the
    old chain's), kept when the patch is deferred; ``deferred``: the patch is left out (a
    refresh deferred it: its change is ``commit``'s)."""

    name: str
    before: Oid
    after: Oid
    real: tuple[Oid, Oid] | None = None  # (parent tree, tree) of its applied commit
    commit: Oid | None = None
    deferred: bool = False


@dataclass(frozen=True)
class Done:
    """A replayed patch: the tree it was carried onto (``parent``) and the result."""

    name: str
    parent: Oid
    tree: Oid
    resolved: bool = False
    commit: str | None = None  # the commit made for it on the new base, when already made
    recorded: bool = False  # settled by a recorded resolution
    reused_hunks: tuple[str, ...] = ()  # "path:line" of each hunk a hunk's record settled

    @property
    def upstream(self) -> bool:
        return self.tree == self.parent


def old_chain(git: Git, engine: Engine, series: Series) -> list[Oid]:
    """C[0..n] from the patch files: the engine's canonical chain (a patch already contained
    in its base adds nothing, see `Engine._extend`)."""
    n = len(series.entries)
    engine.canonical(n)
    return [engine.canonical(k) for k in range(n + 1)]


def steps(
    series: Series,
    chain: Sequence[Oid],
    real: dict[str, tuple[Oid, Oid]],
    commits: Sequence[Oid] = (),
    marked: Mapping[str, tuple[Oid, Oid]] | None = None,
) -> tuple[Step, ...]:
    """The replay's steps: each patch's change on the old chain (``commits``: its commits,
    ``K[0..n]``, when known); a deferred patch's step is left out of the replay, and a patch
    kept as upstream's (`model.marks.Upstream`) is placed again with its recorded change, which
    ``marked`` (`claims.upstream_changes`) gives."""
    deferred, upstream = series.deferred, series.upstream
    out = []
    for i, e in enumerate(series.entries):
        d, u = deferred.get(e.name), upstream.get(e.name)
        mark = d or u
        commit = Oid(mark.commit) if mark else (commits[i + 1] if commits else None)
        before, after = (marked or {}).get(e.name, (chain[i], chain[i + 1]))
        out.append(Step(e.name, before, after, real.get(e.name), commit, d is not None))
    return tuple(out)


def real_changes(stack: Stack) -> dict[str, tuple[Oid, Oid]]:
    real = {}
    for i, ap in enumerate(stack.applied):
        real[ap.name] = (stack.applied[i - 1].tree if i else stack.base_tree, ap.tree)
    return real


def labels(old_base: str | None, new_base: str, new_ref: str | None) -> tuple[str, str]:
    ours = f"new base {new_base[:12]}" + (f" ({new_ref})" if new_ref else "")
    base = f"old base {old_base[:12]}" if old_base else "old base"
    return ours, base


def replay(
    git: Git,
    steps: Sequence[Step],
    start: int,
    tree: Oid,
    labels: tuple[str, str],
    keep_going: bool = False,
    skip: frozenset[str] = frozenset(),
    placer: Placer | None = None,
    progress: Callable[[int, int], None] | None = None,
    resolve: Resolver | None = None,
    go_on: Callable[[str, Oid, MergeResult], bool] | None = None,
    hold: Needs | None = None,
    renames: RenameProof | None = None,
    relabel: bool = True,
) -> tuple[list[Done], list[tuple[str, Oid, MergeResult]]]:
    """Carry steps[start:] onto ``tree``. Stops at the first conflict unless ``keep_going``
    (then the conflicting patch is left out). Returns the done patches and the conflicts as
    (name, the tree it was carried onto, merge result).

    ``resolve(step, tree, merge result)``: a tree that settles a conflict the user already
    resolved elsewhere (the merge commit of a ``git pull``, a recorded resolution), or None.
    ``go_on(name, tree, merge)``: whether to leave this conflicting patch out and go on (a
    knock-on of a deferred patch) when not ``keep_going``. ``hold``: leaves out a patch whose
    change needs a patch left out before it (`needs.Needs`, which keeps the list).

    With a ``placer`` (commits on the new base), a patch whose files upstream did not touch is
    committed in one fast-import stream with the old chain's blob ids, with no merge; the
    others are merged with git's merge-ort, as without one (``renames``: the rename proof of
    a replay without one, `renames.RenameProof`). ``progress(done, total)`` is called after
    each step. ``relabel=False``: a conflicting merge's markers keep git's labels (the
    throwaway commits'), for a command that shows no merged file (`check`: its report is the
    regions' lines, which no label changes).
    """
    done: list[Done] = []
    base_label = labels[1] if relabel else None
    conflicts: list[tuple[str, Oid, MergeResult]] = []
    if placer is not None:
        placer.begin(steps, start, tree, skip, background=keep_going)
        placer.watching = hold.touches if hold is not None else None
    for i, step in enumerate(steps[start:], start):
        if progress is not None:
            progress(i, len(steps))
        if placer is not None and (placed := placer.placed(i)) is not None:
            done.append(placed)  # merged with a patch before it
            tree = Oid("")
            continue
        if step.name in skip or step.deferred or (hold is not None and hold.held_at(i)):
            if placer is not None:
                placer.broken()
            continue
        reuse = step.real is not None and step.real[0] == tree  # its applied commit fits
        if placer is not None and step.before != step.after and not reuse:
            commit = placer.place(step.name)
            if commit is not None:
                done.append(Done(step.name, tree, Oid(""), commit=commit))
                tree = Oid("")
                continue
            run = placer.merge_run(i, tree, (labels[0], step.name))
            if run is not None:  # merged with the patches after it, committed in the stream
                done.append(run)
                tree = Oid("")
                continue
        if placer is not None and not tree:
            tree = placer.tree()
        settled: Oid | None = None
        if step.real and step.real[0] == tree:
            new = step.real[1]
        elif tree == step.before:
            new = step.after
        elif step.before == step.after:
            new = tree
        else:
            name_labels = (labels[0], step.name)
            merged = (
                placer.merge(i, step, tree, name_labels, base_label)
                if placer is not None
                else place_fast(
                    git, step.before, tree, step.after, name_labels, base_label, renames
                )
            )
            if resolve is not None and not merged.clean:
                settled = resolve(step, tree, merged)
            if not merged.clean and settled is None:
                conflicts.append((step.name, tree, merged))
                if hold is not None:
                    hold.left_out(i)
                if placer is not None:
                    placer.broken()
                if keep_going or (go_on is not None and go_on(step.name, tree, merged)):
                    continue
                break
            new = settled or merged.tree
        commit = None
        if placer is not None:
            if new != tree:
                commit = placer.commit(i, step.name, new)
            elif step.before != step.after:
                placer.broken()  # upstream has the patch already: T stops following C
        done.append(Done(step.name, tree, new, resolved=settled is not None, commit=commit))
        tree = new
    if placer is not None:
        placer.resolve(done)
    return done, conflicts


def merge_resolver(git: Git, resolution: Oid, owners: dict[str, str]) -> Resolver:
    """Take the user's resolution from ``resolution`` (the tree of the merge commit ``git pull``
    made) for conflicted paths whose last applied patch is the one being carried: that commit
    holds upstream plus every applied patch's change to such a path, as the user settled it.
    Where a later patch also changes the path, the merge commit's version is not this patch's:
    the conflict stands (truly ambiguous)."""

    def resolve(step: Step, _tree: Oid, merged: MergeResult) -> Oid | None:
        paths = list(merged.conflicted)
        if not paths or any(owners.get(p) != step.name for p in paths):
            return None
        listing = git.entries_at(resolution, paths)
        return git.edit_tree(merged.tree, {p: listing.get(p) for p in paths})

    return resolve


def commit_chain(engine: Engine, base: Oid, done: Sequence[Done]) -> tuple[Oid, dict[str, Oid]]:
    parent = base
    commits = {}
    for d in done:
        if d.upstream:
            continue
        parent = Oid(d.commit) if d.commit else engine.commit(parent, d.tree, d.name)
        commits[d.name] = parent
    return parent, commits
