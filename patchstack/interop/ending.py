"""The ends of an ``import branch``: `finish` writes the series (after `verify` proved that
its files give the branch's tree), `stop` stops at a conflict the merge's own tree cannot
settle, `continue_import` and `abort_import` go on or back from there.

**A stop is a stopped refresh of the journal** (`commands.refresh.stopped.State`, route
``import``): the replay onto the merge's upstream commit, and the import on its way
(`model.branch.Walk`, in ``State.then``). As at a refresh's stop, the branch holds that
upstream commit plus the patches carried so far and the work tree the conflicting patch with
markers; every other command is refused until ``import branch --continue`` (which takes the
resolved files from the work tree, no ``git add``) or ``--abort``. When the import ends after
a stop, the branch and the work tree go back to where the import started: an import never
moves the branch. Each stop, and the end, is one entry of the operation log; ``undo`` of the
stop is ``--abort``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from shlex import quote as shell_quote

from ..checkout import Checkout
from ..commands.refresh import stopped
from ..commands.refresh.resume import abort, resolution
from ..engine.chain import Engine
from ..engine.loaded import LoadedPatch
from ..engine.merging import blame_first, unblamed
from ..engine.relocate import Relocator
from ..engine.replay import Done, commit_chain, labels
from ..errors import ConflictError, PatchstackError, RefusedError
from ..git import CommitMeta, MergeResult
from ..journal.snapshot import take_snapshot
from ..model.branch import Walk
from ..model.ids import Oid
from ..model.series import Entry, Series
from ..progress import QUIET, Progress
from ..transaction import Overlay, Plan, publish
from .branch import (
    BranchResult,
    Place,
    after_merge,
    carried,
    first_parent_commits,
    walk_on,
)
from .building import Built
from .carrying import Carrier
from .importing import ImportResult, Landing, _import
from .sources import Source


def finish(ws: Checkout, walk: Walk, last: CommitMeta, landing: Landing | None) -> ImportResult:
    """Write the series: the patch files from the chain (`importing._import`), proven first."""
    git = ws.git
    git.keep_reachable(walk.trees, [walk.base])  # the replays' other objects are throwaway
    if walk.trees[-1] != last.tree:  # the chain ends with the last commit's tree, always
        files = git.changed_paths(walk.trees[-1], last.tree)
        raise PatchstackError(
            f"the import does not end with {walk.rev_name}'s tree: {', '.join(files[:10])}",
            "nothing was changed; this is a bug, please report it",
        )
    sources = [
        Source(
            p.name,
            p.origin,
            p.message,
            p.author,
            p.date,
            # A fixup without a tag when every commit carried one: what the patches after
            # it need, so essential.
            p.tag or (None if walk.tag else "essential"),
            trees=(Oid(walk.trees[k]), Oid(walk.trees[k + 1])),
        )
        for k, p in enumerate(walk.pieces)
    ]
    whole = None if walk.append else last.tree

    def check(series: Series, built: Mapping[str, Built]) -> None:
        verify(ws, series, built, whole, walk.rev_name)

    return _import(
        ws,
        sources,
        list(walk.skipped),
        walk.tag,
        walk.append,
        None,
        Oid(walk.base),
        check=check,
        landing=landing,
        rebase_empty=True,
        base_ref=None if walk.ref.startswith(walk.ref_name) else walk.ref_name,  # not an id
    )


def verify(
    ws: Checkout, series: Series, built: Mapping[str, Built], whole: Oid | None, rev_name: str
) -> None:
    """Apply the patch files as ``push --all`` applies them (the engine's canonical chain)
    and compare each new patch's tree with the chain's; refuse at the first difference. The
    chain commits made are cached, so the ``push --all`` that follows does not make them
    again."""
    git = ws.git
    ws.progress.step(f"proving the patch files give {rev_name}'s tree")

    def load(entry: Entry) -> LoadedPatch:
        if entry.name not in built:  # a patch the series had (--append)
            body, _summary = ws.proven_bytes(entry)
            return LoadedPatch(entry, body, None, entry.name, lambda: ws.read_patch(entry)[1])
        new = built[entry.name]
        return LoadedPatch(entry, new.data, new.patch, entry.name)

    def default_author() -> tuple[str, str]:
        return git.ident()[0], git.commit_date(series.base or "HEAD")

    engine = Engine(git, series, load, Oid(series.base or ""), default_author, ws.store)
    try:
        n = len(series.entries)
        try:
            engine.canonical(n)
        except ConflictError as exc:
            name = getattr(exc.report, "patch", "")
            origin = f" (from {built[name].source.origin})" if name in built else ""
            raise PatchstackError(
                f"'push --all' would not give {rev_name}'s tree: {name}{origin} would not"
                f" apply: {exc.message}",
                "nothing was changed; this is a bug, please report it",
            ) from None
        for k, e in enumerate(series.entries, 1):
            if e.name in built and engine.canonical(k) != built[e.name].tree:
                files = git.changed_paths(engine.canonical(k), built[e.name].tree)
                raise PatchstackError(
                    f"'push --all' would not give {rev_name}'s tree: {e.name} (from"
                    f" {built[e.name].source.origin}) differs in " + ", ".join(files[:10]),
                    "nothing was changed; this is a bug, please report it",
                )
        if whole is not None and engine.canonical(n) != whole:
            files = git.changed_paths(engine.canonical(n), whole)
            raise PatchstackError(
                f"'push --all' would not give {rev_name}'s tree: " + ", ".join(files[:10]),
                "nothing was changed; this is a bug, please report it",
            )
    finally:
        engine.close()


def stop(
    ws: Checkout,
    walk: Walk,
    c: CommitMeta,
    onto: Oid,
    carrier: Carrier,
    done: list[Done],
    conflict: tuple[str, Oid, MergeResult],
    place: Place,
) -> BranchResult:
    """Publish the upstream commit plus the patches carried so far, the conflicting one with
    markers in the work tree, and the stopped import in the journal."""
    git = ws.git
    name, parent_tree, merged = conflict
    walk = replace(walk, whole=(*walk.whole, *carrier.whole))
    stop_head, _commits = commit_chain(carrier.engine, onto, done)
    # A file upstream deleted or moved code out of: its hunks carried where their lines went,
    # a proposal in the work tree, as a refresh's stop shows it
    step = next((s for s in carrier.steps if s.name == name), None)
    proposal = step and Relocator(git, walk.base, onto, ws.store).propose(
        step.before, step.after, parent_tree, merged
    )
    shown = proposal.tree if proposal else merged.tree
    first = place.before is None  # the import stops for the first time: --abort goes here
    before = take_snapshot(ws) if first else place.before
    state = stopped.State(
        old_base=walk.base,
        new_base=onto,
        new_ref=f"merged by {c.oid[:12]}",
        route="import",
        applied_before=(),
        drop_merged=False,
        steps=carrier.steps,
        before=before,
        resolution=c.tree,
        done=tuple(done),
        stopped_at=name,
        stop_head=stop_head,
        stop_tree=parent_tree,
        merged_tree=merged.tree,
        # a file the merge left as it was is conflicted all the same (modify/delete)
        touched=tuple(dict.fromkeys([*git.changed_paths(parent_tree, shown), *merged.conflicted])),
        conflicted=merged.conflicted,
        then=walk.to_json(),
    )
    overlay = Overlay(place.src, place.overlaid, shown)
    steps = [t for s in carrier.steps for t in (s.before, s.after)]
    git.keep_reachable([stop_head, merged.tree, shown, *steps, *(d.tree for d in done)], [onto])
    blob = stopped.store(ws, state)
    plan = Plan(
        "import", place.head, stop_head, (), overlay, blob, before=before if first else None
    )
    publish(ws, plan)
    ws.progress.step("tracing the conflicting lines upstream")
    report = unblamed(git, name, merged)
    report = replace(
        report,
        note=f"merge {c.oid[:12]} brought upstream {onto[:12]}; its own tree does not settle"
        f" this conflict of {name}: a later patch changes the file too, and the merge's version"
        " less the later patches' changes does not merge. Resolve it here; to take the"
        f" merge's version as it is (the later changes then come with this patch):"
        f" '{take_merge_command(ws, c.oid, merged.conflicted)}'. 'import branch --continue"
        " --take-merge' then takes the merge's version at every later conflict like it",
    )
    if proposal:
        report = replace(report, relocations=proposal.relocations)
    count = ws.printed(report) if ws.printed is not None else None  # only what is printed
    report = blame_first(git, report, walk.base, onto, count)
    return BranchResult(walk, None, 0, stopped=report, stopped_merge=c.oid)


def take_merge_command(ws: Checkout, merge: str, paths: Sequence[str]) -> str:
    """The shell command that puts merge ``merge``'s version of ``paths`` in the work tree:
    the files it has checked out from it, the others (the merge deleted them) removed."""
    held = ws.git.entries_at(ws.git.tree_of(merge), list(paths))
    kept = " ".join(shell_quote(p) for p in paths if held.get(p) is not None)
    gone = " ".join(shell_quote(p) for p in paths if held.get(p) is None)
    parts = [
        f"git checkout {merge[:12]} -- {kept}" if kept else "",
        f"rm -f -- {gone}" if gone else "",
    ]
    return " && ".join(p for p in parts if p)


def continue_import(
    ws: Checkout, progress: Progress = QUIET, take_merge: bool = False
) -> BranchResult:
    git = ws.git
    state = stopped.load(ws)
    if state.route != "import" or state.then is None:
        raise RefusedError(
            "the command stopped at a conflict is a refresh, not an import",
            "run 'patchstack refresh --continue' (or --abort)",
        )
    assert state.stopped_at and state.stop_head and state.stop_tree and state.resolution
    head, resolved = resolution(ws, state)
    walk = Walk.from_json(state.then)
    commits = first_parent_commits(git, walk.ref, walk.rev)
    c = commits[walk.at] if walk.at < len(commits) else None
    if c is None or f"merged by {c.oid[:12]}" != state.new_ref:
        raise PatchstackError(
            "the branch being imported is not the one the import stopped in",
            "'patchstack import branch --abort' goes back to the state before it",
        )
    onto = Oid(state.new_base)
    walk = replace(
        walk, by_hand=(*walk.by_hand, state.stopped_at), take_merge=walk.take_merge or take_merge
    )
    carrier = Carrier(git, walk, onto)
    try:
        k = [s.name for s in carrier.steps].index(state.stopped_at)
        parent = Oid(state.stop_head)
        if resolved != state.stop_tree:
            parent = carrier.commit(parent, resolved, state.stopped_at)
        mine = Done(state.stopped_at, Oid(state.stop_tree), resolved, True, commit=parent)
        done = [*state.done, mine]
        marks = labels(walk.base, onto, f"merged by {c.oid[:12]}")
        more, conflict = carrier.run(k + 1, resolved, parent, marks, Oid(state.resolution))
        done += more
        place = Place(head, resolved, state.touched, state.before)
        if conflict is not None:
            result = stop(ws, walk, c, onto, carrier, done, conflict, place)
            return replace(result, total=len(commits))
    finally:
        carrier.close()
    of_upstream = git.is_ancestor(c.parents[1], walk.ref)
    walk = carried(git, walk, c, onto, done, not of_upstream, carrier.whole)
    names = set(walk.names)
    walk = replace(after_merge(git, walk, c, names), names=tuple(names), at=walk.at + 1)
    return walk_on(ws, walk, commits, place, progress)


def abort_import(ws: Checkout) -> BranchResult:
    state = stopped.load(ws)
    if state.route != "import" or state.then is None:
        raise RefusedError(
            "the command stopped at a conflict is a refresh, not an import",
            "run 'patchstack refresh --abort' (or --continue)",
        )
    abort(ws, "import")
    walk = Walk.from_json(state.then)
    return BranchResult(walk, None, 0, aborted=True)
