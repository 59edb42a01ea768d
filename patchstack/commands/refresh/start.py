"""``refresh``: make the patch files match reality after upstream moved, or fold edits into a
patch.

**Where the new base comes from.** ``refresh`` recognises how the user's base moved:

1. the series is popped and the branch was fast-forwarded (``git pull``): the new base is HEAD;
2. ``refresh --onto REV``: the new base is REV, whatever is applied;
3. the stack is applied and ``git pull`` merged upstream into it: HEAD is a merge whose one
   parent carries the stack and whose other parent is the new base; after ``git pull --rebase``
   the stack already sits on the new base (git replayed the patch commits).

In every route the result is the same: the branch is the new base plus one commit per patch
that was applied before, linear, and every patch file and the ``# base:`` line describe it.
With no move and uncommitted edits in files of an applied patch, the edits are folded into the
top applied patch (or ``--patch NAME``) and the patches above it are re-applied (route 4).

The replay itself is `engine.replay`, the verdicts `engine.verdicts`; a conflict stops the
refresh (`settle.stop`, `resume` goes on or back). ``upstream`` patches (already contained in
the new base) are kept, unapplied, unless ``--drop-merged``; their files are never deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...checkout import Checkout
from ...engine.merging import merge
from ...engine.replay import (
    Done,
    Resolver,
    Step,
    merge_resolver,
    old_chain,
    real_changes,
    replay,
    steps,
)
from ...errors import PatchstackError, RefusedError
from ...git import DirtyState, Git, MergeResult
from ...model.ids import Oid
from ...model.series import Series
from ...model.stack import Stack
from ..state import (
    is_ancestor,
    make_engine,
    pulled_merge,
    read_stack,
    require_movable,
    resolve_rev,
)
from .knockons import KnockOns
from .relocating import Relocating, relocating_of
from .resolutions import Resolutions
from .resolver import Proposer, Setting, notes, proposer_of
from .settle import RefreshResult, end, labels_of
from .stopped import State

if TYPE_CHECKING:
    from ...engine.chain import Engine
    from ...engine.lineprefetch import Prefetch

_HEX_RE = re.compile(r"[0-9a-f]{7,64}\Z")


@dataclass(frozen=True)
class _Target:
    route: str
    new_base: Oid
    new_ref: str | None
    stack: Stack  # the stack whose patches were applied (the patch side of a merge)


def _target(git: Git, series: Series, stack: Stack, onto: str | None) -> _Target:
    real = stack
    merged_upstream = None
    if stack.on_top:
        # ``git pull`` merged upstream into the applied stack (`pulled_merge`); anything else
        # on top of the patches is the user's own work, never taken for upstream.
        pulled = pulled_merge(git, stack)
        if pulled is None:
            require_movable(stack)
        else:
            real, merged_upstream = pulled
    if onto:
        new = resolve_rev(git, onto)
        ref = None if _HEX_RE.match(onto) else onto
        return _Target("onto", new, ref, real)
    if merged_upstream:
        return _Target("merge", merged_upstream, None, real)
    if stack.base == series.base:
        return _Target("none", stack.base, None, stack)
    return _Target("rebased" if stack.applied else "pull", stack.base, None, stack)


def _base_line(ws: Checkout, series: Series, onto: str | None, new_base: Oid) -> str | None:
    """The REF the base line names after ``--onto`` (`tracked.base_line_ref`); None without
    one (the series' own is kept)."""
    if not onto:
        return None
    from ..tracked import base_line_ref  # (not for a resumed refresh)

    return base_line_ref(ws, series, onto, new_base)


def refresh(
    ws: Checkout,
    onto: str | None = None,
    drop_merged: bool = False,
    patch: str | None = None,
    discard: bool = False,
    progress: Callable[[int, int], None] | None = None,
    defer_conflicts: bool = False,
    resolver_setting: Setting | None = None,
    publish: str | None = None,
    probe_seconds: float | None = None,
) -> RefreshResult:
    """``defer_conflicts``: leave every conflicting patch out, deferred, instead of stopping
    at the first (each later patch placed without it, as ``git rebase --skip`` places it);
    ``resolver_setting``: hand each conflict no record settles to a command (`resolver`);
    ``publish``: "ff", the refreshed fork published as a fast-forward (`publish`);
    ``probe_seconds`` (``--probes``): a whole relocation its patch's probe proves is taken
    (`relocating`)."""
    from .proof import DIFFERS, EDITED, prove, refuse_dropping  # (not for a resumed refresh)

    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    target = _target(git, series, stack, onto)
    missing = [n for n in target.stack.names if n not in series]
    if missing:
        raise PatchstackError(
            f"applied patch '{missing[0]}' is not in the series",
            "put it back into the series file, or pop it first",
        )
    git.refresh_index()
    dirty = git.dirty(exclude=ws.in_tree)
    if dirty.unmerged:
        raise RefusedError(
            "unmerged files: " + ", ".join(dirty.unmerged), "finish or abort the git merge first"
        )
    moved = target.new_base != target.stack.base
    if moved:  # (before the seconds of planning and replay a long series takes)
        from .inway import refuse_edits_early  # (not for a resumed refresh)

        refuse_edits_early(ws, series, target.stack, stack.head, target.new_base, dirty)
    # The canonical chain first: an applied commit the engine makes from its patch file is
    # `exact` by it (`proof._built`), not proven a second time hunk by hunk where no cache
    # knew either. What it cannot build is said after the proof's refusal, as before.
    built, chain, unbuilt = _built_chain(ws, series, target.stack)
    lines: Prefetch | None = None
    try:
        proof = prove(ws, series, target.stack)
        if moved and not discard:
            refuse_dropping(proof, proof.named(DIFFERS), "patchstack refresh")
        if unbuilt is not None:
            raise unbuilt
        assert built is not None
        engine = built
        # A patch file edited by hand wins over its old commit (a refresh never reverts it); a
        # commit changed by hand wins over its file (it is adopted), unless --discard-changes.
        ignore = set(proof.named(EDITED)) | (set(proof.named(DIFFERS)) if discard else set())
        real = {n: c for n, c in real_changes(target.stack).items() if n not in ignore}
        head = stack.head
        src: tuple[Oid, tuple[str, ...]] = (git.tree_of(head), ())
        fold_into: str | None = None
        folded: tuple[str, ...] = ()
        if patch and moved:
            raise PatchstackError(
                "--patch folds uncommitted edits, and the base moved",
                "refresh onto the new base first (commit or capture the edits meanwhile)",
            )
        if not moved and target.stack.applied:
            plan = _fold_plan(ws, series, target.stack, dirty, patch)
            if plan is not None:
                fold_into, folded, (tree, worktree) = plan
                real[fold_into] = (real[fold_into][0], tree)
                src = (worktree, folded)
        elif patch:
            raise PatchstackError("no patch is applied", "--patch folds edits into an applied one")
        from ...engine.claims import upstream_changes  # (not for a resumed refresh: --skip)
        from ...engine.placer import Placer

        if moved and not defer_conflicts:  # a patch's file upstream deleted: its stop's
            # candidates learnt meanwhile (deferred, a conflict follows no code)
            lines = prefetch_lines(ws, engine, series, target.new_base)

        state = State(
            old_base=series.base,
            new_base=target.new_base,
            new_ref=target.new_ref,
            route=target.route if not fold_into else "fold",
            applied_before=target.stack.names,
            drop_merged=drop_merged,
            steps=steps(
                series,
                chain,
                real,
                [engine.canonical_commit(k) for k in range(len(chain))],
                upstream_changes(engine, series, ws.display(ws.series_path)),
            ),
            fold_into=fold_into,
            folded=folded,
            resolution=git.tree_of(stack.head) if target.route == "merge" else None,
            resolver=resolver_setting.command if resolver_setting else None,
            resolver_seconds=resolver_setting.seconds if resolver_setting else None,
            publish_from=stack.head if publish else None,
            base_line=_base_line(ws, series, onto, target.new_base),
            probe_seconds=probe_seconds,
        )
        placer = Placer(engine, Oid(target.new_base), [s.name for s in state.steps])
        knock_ons = KnockOns(ws, state, series, placer)
        records = Resolutions(ws)
        proposer = proposer_of(ws, series, state, knock_ons)
        moving = relocating_of(ws, series, state, knock_ons)
        done, conflicts = replay(
            git,
            state.steps,
            0,
            git.tree_of(target.new_base),
            labels_of(state),
            placer=placer,
            progress=progress,
            resolve=resolver(ws, series, state, records, proposer, moving),
            keep_going=defer_conflicts,
            go_on=knock_ons,
            hold=knock_ons.needs,
        )
        done = marked(done, records)
        note = lambda name: notes(records.note(name), proposer, name)  # noqa: E731
        result = end(
            ws,
            state,
            engine,
            series,
            done,
            src,
            head,
            conflicts,
            knock_ons,
            records,
            note,
            keep_going=defer_conflicts,
            lines=lines,
        )
        result = with_proposals(result, moving, proposer)
        if target.route == "none" and result.stopped is None:
            result = replace(result, upstream_moved=_upstream_moved(ws, series))
        return result
    finally:
        if lines is not None:
            lines.close()
        if built is not None:
            built.close()


def _upstream_moved(ws: Checkout, series: Series) -> str | None:
    """The series' upstream (`tracked`), where it moved past the base a refresh that follows
    HEAD left in place: 'refresh --onto' it carries the series there."""
    from ..tracked import upstream_target  # (not for a --skip: a stop's route is never none)

    up = upstream_target(ws, series)
    base = series.base
    if up.name is None or up.oid is None or not base or up.oid == base:
        return None
    return up.name if is_ancestor(ws, base, up.oid) else None


def prefetch_lines(
    ws: Checkout, engine: Engine, series: Series, new_base: str, lazy: bool = False
) -> Prefetch | None:
    """`lineprefetch.start` for the files the series' patches change (from the summaries
    the proof keeps: no patch file parsed for it): a refresh's and (``lazy``) a check's."""
    from ...engine import lineprefetch

    paths = [p for e in series.entries for p in engine.patch(e.name).head.paths]
    return lineprefetch.start(ws.git, ws.store, series.base, new_base, paths, lazy)


def _built_chain(
    ws: Checkout, series: Series, stack: Stack
) -> tuple[Engine | None, list[Oid], PatchstackError | None]:
    """The engine and the old canonical chain ``C[0..n]`` (`replay.old_chain`), or the error
    that made them (raised by the caller after the proof's refusals)."""
    engine = None
    try:
        engine = make_engine(ws, series, stack)
        return engine, old_chain(ws.git, engine, series), None
    except PatchstackError as e:
        if engine is not None:
            engine.close()
        return None, [], e


def with_proposals(result: RefreshResult, *hooks: Relocating | Proposer | None) -> RefreshResult:
    """``result`` saying what became of the relocations and proposals tried."""
    made = tuple(p for h in hooks if h is not None for p in h.proposals)
    return replace(result, proposals=made) if made else result


def resolver(
    ws: Checkout,
    series: Series,
    state: State,
    records: Resolutions | None = None,
    proposer: Proposer | None = None,
    moving: Relocating | None = None,
) -> Resolver | None:
    """What settles a conflict without asking: after ``git pull`` merged upstream into the
    stack, the user's merge resolution, for the conflicts whose file the conflicting patch is
    the last applied one to change; else a recorded resolution of exactly those versions;
    else a whole relocation its probe proves (``moving``, `relocating`); else a verified
    proposal of the user's resolver (``proposer``)."""
    pull: Resolver | None = None
    if state.resolution:
        owners: dict[str, str] = {}
        for entry in series.entries:
            if entry.name in state.applied_before:
                for path in ws.read_patch(entry)[1].paths:
                    owners[path] = entry.name
        pull = merge_resolver(ws.git, Oid(state.resolution), owners)
    if pull is None and records is None:
        return None

    def resolve(step: Step, tree: Oid, merged: MergeResult) -> Oid | None:
        found = pull(step, tree, merged) if pull is not None else None
        if found is None and records is not None:
            found = records.settle(step.name, step.before, tree, step.after, merged)
        if found is None and records is not None and moving is not None:
            found = moving.accept(records, step, tree, merged)
        if found is None and records is not None and proposer is not None:
            found = proposer.propose(records, step, tree, merged)
        return found

    return resolve


def marked(done: list[Done], records: Resolutions) -> list[Done]:
    """``done`` with the patches settled by a recorded resolution said so."""
    return [
        replace(d, recorded=True, reused_hunks=records.reused.get(d.name, ()))
        if d.name in records.used
        else d
        for d in done
    ]


def owners_of_edits(
    ws: Checkout, series: Series, stack: Stack, dirty: DirtyState
) -> list[tuple[str, str]]:
    """(path, patch) for edited files of applied patches: the patch whose commit last changed
    the edited lines (``git blame`` through the stack), else the last applied patch that
    touches the file."""
    git = ws.git
    by_commit = {ap.commit: (i, ap.name) for i, ap in enumerate(stack.applied)}
    found = []
    for path in dirty.modified:
        touching = [
            ap.name
            for ap in stack.applied
            if ap.name in series and path in ws.read_patch(series.entry(ap.name))[1].paths
        ]
        if not touching:
            continue
        blamed = sorted(
            by_commit[c]
            for c in git.blame_commits(stack.head, path, git.edited_lines(path))
            if c in by_commit
        )
        found.append((path, blamed[-1][1] if blamed else touching[-1]))
    return found


def _fold_plan(
    ws: Checkout, series: Series, stack: Stack, dirty: DirtyState, patch: str | None
) -> tuple[str, tuple[str, ...], tuple[Oid, Oid]] | None:
    """Which applied patch takes which edits, and its new tree: (name, paths, (tree, W))
    where W is HEAD's tree with the edited files as they are in the work tree."""
    git = ws.git
    if patch:
        from ...model.selection import resolve_name

        name = resolve_name(series, patch)
        if stack.find(name) is None:
            raise PatchstackError(
                f"patch '{name}' is not applied", "push it first, or fold into an applied one"
            )
    else:
        name = stack.applied[-1].name
    own = set(ws.read_patch(series.entry(name))[1].paths)
    paths = tuple(p for p in dirty.modified if p in own)
    if not paths:
        owners = owners_of_edits(ws, series, stack, dirty)
        if owners:
            path, owner = owners[0]
            raise PatchstackError(
                f"the uncommitted edits in {path} change lines of '{owner}', not of '{name}'",
                f"fold them with 'patchstack refresh --patch {owner}'",
            )
        return None
    if any(p in dirty.partly_staged for p in paths):
        raise RefusedError(
            "staged changes differ from the work tree in: "
            + ", ".join(p for p in paths if p in dirty.partly_staged),
            "stage or unstage them fully (git add / git restore --staged), then try again",
        )
    with git.temp_index() as idx:
        idx.read_tree(stack.head)
        idx.add_paths(list(paths))
        worktree = idx.write_tree()
    ap = stack.find(name)
    assert ap is not None
    if ap.commit == stack.head:
        tree = worktree
    else:
        merged = merge(git, stack.top_tree, ap.tree, worktree, ("patch", "edits"))
        if not merged.clean:
            raise RefusedError(
                f"the edits in {', '.join(paths)} do not fold cleanly into '{name}'",
                "patches above it change the same lines: fold into the top patch instead",
            )
        tree = merged.tree
    return name, paths, (tree, worktree)
