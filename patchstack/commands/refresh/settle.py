"""The two ends of a refresh's replay: `finish` publishes the new base, the rewritten patch
files and the branch; `stop` the patches replayed so far and, in the work tree, the conflicting
one with diff3 markers (labelled new base, old base, patch name; the index keeps the committed
version, so ``git diff`` shows the conflict), and records the stopped refresh in the journal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ...checkout import Checkout
from ...engine.chain import Engine
from ...engine.contract import forget_clean
from ...engine.merging import blame_first, unblamed
from ...engine.relocate import Relocator
from ...engine.replay import Done, commit_chain
from ...engine.verdicts import UPSTREAM, Classified, classify
from ...git import Git, MergeResult
from ...git.attributes import NAME as ATTRIBUTES
from ...model.conflict import Conflict, UpstreamCommit
from ...model.ids import Oid
from ...model.patchfile import parse_patch
from ...model.proposal import Proposal
from ...model.relocation import relocations_said
from ...model.series import Entry, Series
from ...transaction import FileWrite, Overlay, Plan, publish
from .kept import KeptLines
from .knockons import KnockOns, defer, deferrals_after, kept_on, triaged
from .resolutions import Resolutions
from .reuse import reuse_note, under
from .stopped import State, store, traced_from
from .taken import applied_fields, dropped_note, judge, no_op_deferrals, upstream_marks
from .taking import before_stop

if TYPE_CHECKING:
    from ...engine.lineprefetch import Prefetch


@dataclass(frozen=True)
class Verdict:
    name: str
    tag: str
    verdict: str  # unchanged offset merged conflict deferred, or `engine.verdicts.held`'s
    resolved: bool = False  # a conflict the user resolved (refresh --continue)
    recorded: bool = False  # a conflict settled by a recorded resolution
    reused_hunks: tuple[str, ...] = ()  # "path:line" of each hunk a hunk's record settled
    rewritten: bool = False  # the patch file was rewritten
    applied: bool = False  # applied after the command
    dropped: bool = False  # removed from the series (--drop-merged)
    evidence: UpstreamCommit | None = None  # upstream: the upstream commit that brought it
    note: str = ""  # why, where the verdict needs saying (a no-op, unknown)

    def to_json(self) -> dict[str, Any]:
        ev = self.evidence
        return asdict(self) | {
            "evidence": {"commit": ev.oid, "subject": ev.subject} if ev else None
        }


@dataclass(frozen=True)
class RefreshResult:
    route: str
    old_base: str | None
    new_base: Oid
    new_ref: str | None
    verdicts: tuple[Verdict, ...]
    head: Oid
    applied: tuple[str, ...]
    folded: tuple[str, ...] = ()  # paths folded into ``fold_into``
    fold_into: str | None = None
    stopped: Conflict | None = None
    aborted: bool = False
    deferred: tuple[Conflict, ...] = ()  # the conflicts this refresh deferred, triaged
    kept: tuple[tuple[str, str], ...] = ()  # aborted: (patch, path) of resolutions it recorded
    proposals: tuple[Proposal, ...] = ()  # what became of each resolver's proposal (--resolver)
    upstream_moved: str | None = None  # (route none) the series' upstream, past the base

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "old_base": self.old_base,
            "new_base": self.new_base,
            "new_ref": self.new_ref,
            "head": self.head,
            "applied": list(self.applied),
            "fold_into": self.fold_into,
            "folded": list(self.folded),
            "patches": [v.to_json() for v in self.verdicts],
            "stopped": self.stopped.to_json() if self.stopped else None,
            "aborted": self.aborted,
            "deferred": [c.to_json() for c in self.deferred],
            **({"kept_resolutions": [list(k) for k in self.kept]} if self.aborted else {}),
            "proposals": [p.to_json() for p in self.proposals],
            "upstream_moved": self.upstream_moved,
        }


def labels_of(state: State) -> tuple[str, str]:
    from ...engine.replay import labels

    return labels(state.old_base, state.new_base, state.new_ref)


def finish(
    ws: Checkout,
    state: State,
    engine: Engine,
    series: Series,
    done: Sequence[Done],
    src: tuple[Oid, Sequence[str]],
    current_head: Oid,
    reports: Sequence[Conflict] = (),
    inputs: str | None = None,
    trace: Callable[[list[Conflict]], list[Conflict]] | None = None,  # `defer`'s, late
) -> RefreshResult:
    """The refresh done; ``inputs``: `merge_inputs` as the replay found it (or None)."""
    git = ws.git
    new_base = Oid(state.new_base)
    _top, commits = commit_chain(engine, new_base, done)
    classified = classify(git, engine, state.steps, done, commits)
    resolved = {d.name for d in done if d.resolved}
    recorded = {d.name for d in done if d.recorded}
    reused = {d.name: tuple(d.reused_hunks) for d in done}
    held = {d.name for d in done if d.upstream}
    left_out = [d.name for d in deferrals_after(series, state)]
    judged = judge(ws, series, state, held, left_out, inputs)
    state = no_op_deferrals(state, judged, left_out)
    deferrals = deferrals_after(series, state)
    deferred = {d.name for d in deferrals}
    upstream = held - deferred  # kept in the series by a mark
    evidence = {n: e for n, h in judged.items() if h.verdict == UPSTREAM and (e := h.evidence)}
    marks = upstream_marks(series, state, upstream, evidence)
    line = state.new_ref if state.base_line is None else state.base_line
    new_series = series.with_base(new_base, line).with_marks(deferrals, marks)
    dropped = set()
    if state.drop_merged:  # only what an upstream commit is proven to have brought
        for name in sorted(upstream & evidence.keys(), key=series.index):
            new_series = new_series.remove(name)
            dropped.add(name)
    # a patch kept as upstream's is placed again; when the base no longer holds it (upstream
    # reverted it), it is applied again, as it was before the base took it: never lost
    applied_after = [
        n
        for n in new_series.names
        if (n in state.applied_before or n in state.undefer or n in series.upstream)
        and n not in upstream
        and n not in deferred
    ]
    head = _final_head(git, engine, new_series, new_base, done, commits, applied_after, classified)
    if state.publish_from:
        from .publish import published_head

        head = published_head(git, head, Oid(state.publish_from), new_base, state.new_ref)
    files = [FileWrite(ws.patch_path(n), data) for n, data in classified.data.items()]
    filled = applied_fields(ws, series, evidence)
    files += filled.values()
    text = new_series.format().encode("utf-8", "surrogateescape")
    if text != series.format().encode("utf-8", "surrogateescape"):
        files.append(FileWrite(ws.series_path, text))
    overlay = Overlay(src[0], tuple(src[1]))
    keep = tuple(Oid(d.commit) for d in deferrals) + tuple(Oid(u.commit) for u in marks)
    notes = tuple(f"{n}: {dropped_note(evidence.get(n))}" for n in sorted(dropped))
    # a reuse leaves nothing in the series folder: the log keeps it for the review
    notes += tuple(reuse_note(n, h) for n, h in sorted(reused.items()) if h)
    plan = Plan("refresh", current_head, head, tuple(files), overlay, keep=keep, notes=notes)
    reports = trace(list(reports)) if trace else reports  # before the work tree moves
    publish(ws, plan)
    from .proof import remember_refresh  # (not for a stop)

    remember_refresh(ws, engine, new_series, new_base, commits, classified)
    said = {**classified.verdicts, **dict.fromkeys(deferred, "deferred")}
    said |= {name: held.verdict for name, held in judged.items()}  # (held first, then deferred)
    verdicts = tuple(
        Verdict(
            e.name,
            e.tag,
            said[e.name],
            resolved=e.name in resolved,
            recorded=e.name in recorded,
            reused_hunks=reused.get(e.name, ()),
            rewritten=e.name in classified.data or e.name in filled,
            applied=e.name in applied_after,
            dropped=e.name in dropped,
            evidence=evidence.get(e.name),
            note=judged[e.name].note if e.name in judged else "",
        )
        for e in series.entries
    )
    return RefreshResult(
        state.route,
        state.old_base,
        new_base,
        state.new_ref,
        verdicts,
        head,
        tuple(applied_after),
        state.folded,
        state.fold_into,
        deferred=tuple(reports),
    )


def _final_head(
    git: Git,
    engine: Engine,
    new_series: Series,
    new_base: Oid,
    done: Sequence[Done],
    commits: dict[str, Oid],
    applied_after: list[str],
    classified: Classified,
) -> Oid:
    """The new base plus one commit per patch to keep applied."""
    chain_names = [d.name for d in done if not d.upstream]
    if applied_after == chain_names[: len(applied_after)]:
        return commits[applied_after[-1]] if applied_after else new_base

    from ...engine.loaded import LoadedPatch  # (not for a stop)

    def load(entry: Entry) -> LoadedPatch:
        data = classified.data.get(entry.name) or engine.patch(entry.name).data
        return LoadedPatch(entry, data, parse_patch(data, entry.name, entry.strip_level))

    trees = {d.name: d.tree for d in done}
    new_engine = Engine(git, new_series, load, new_base, engine.default_author, engine.store)
    chain = [git.tree_of(new_base)]
    for e in new_series.entries:
        chain.append(trees.get(e.name, chain[-1]))
    new_engine.seed(chain)
    from ...engine.build import build  # (not for a stop)

    try:
        built = build(new_engine, new_base, chain[0], [], applied_after)
    finally:
        new_engine.close()
    return built.head


def _later_owners(
    ws: Checkout, series: Series, state: State, name: str, paths: Sequence[str]
) -> list[str]:
    after = series.names[series.index(name) + 1 :]
    return [
        n
        for n in after
        if n in state.applied_before and set(ws.read_patch(series.entry(n))[1].paths) & set(paths)
    ]


def end(
    ws: Checkout,
    state: State,
    engine: Engine,
    series: Series,
    done: Sequence[Done],
    src: tuple[Oid, Sequence[str]],
    current_head: Oid,
    conflicts: Sequence[tuple[str, Oid, MergeResult]],
    knock_ons: KnockOns,
    records: Resolutions,
    note: Callable[[str], str],
    *,
    keep_going: bool = False,
    check: Callable[[list[Conflict]], None] = lambda found: None,
    lines: Prefetch | None = None,
) -> RefreshResult:
    """A replay's end: its ``conflicts`` split at the stop (each deferred with
    ``keep_going``), the rest `defer`red and ``check``ed; then the stop (its ``note`` for
    the stopped patch's name), or the finished refresh when nothing stopped it."""
    left, stopped = (conflicts, None) if keep_going else knock_ons.split(conflicts)
    state, found, trace = defer(ws, state, series, left, knock_ons, done, late=keep_going)
    check(found)
    inputs = knock_ons.inputs if kept_on() else None
    if stopped is None:
        return finish(ws, state, engine, series, done, src, current_head, found, inputs, trace)
    name = stopped[0]
    known, partial = knock_ons.known, records.at_stop(name, stopped[2])
    at = (ws, state, engine, series, done, stopped, src, current_head, found, note(name))
    return stop(*at, known, partial, inputs, lines)


def stop(
    ws: Checkout,
    state: State,
    engine: Engine,
    series: Series,
    done: Sequence[Done],
    conflict: tuple[str, Oid, MergeResult],
    src: tuple[Oid, Sequence[str]],
    current_head: Oid,
    deferred_now: Sequence[Conflict] = (),
    note: str = "",
    known: Mapping[str, Conflict] = {},
    partial: tuple[Oid, tuple[str, ...]] | None = None,
    inputs: str | None = None,
    lines: Prefetch | None = None,
) -> RefreshResult:
    """Stop at ``conflict``: the work tree shows the merge with its markers, or a relocation
    proposal, or (``partial``) the merge with the hunks recorded resolutions settle resolved.
    ``inputs``: `merge_inputs` as the replay found it, before the stop is published;
    ``lines``: the new base's candidates learnt as the replay merged (`lineprefetch`)."""
    git, (name, parent_tree, merged) = ws.git, conflict
    # The replay's triage (``known``) parsed this merge's files already: not parsed again.
    seen, parsed = known.get(name), None
    if seen and (seen.merged_tree, seen.files) == (merged.tree, merged.conflicted):
        parsed = Conflict(name, seen.files, seen.hunks, (), merged.messages.strip(), merged.tree)
    walk = KeptLines(ws, inputs) if kept_on() else None  # files printed earlier: kept
    old_base = traced_from(git, series, name, state)  # (upstream's commits: traced from there)
    if walk is not None and seen and parsed:  # begun now: walked while the stop is published
        walk.guess(parsed, seen, "" if state.resolution else note, old_base, state.new_base)
    stop_head, commits = commit_chain(engine, Oid(state.new_base), done)
    # A file upstream deleted: its hunks carried where their lines went, shown as a proposal
    step = next((s for s in state.steps if s.name == name), None)
    relocator = Relocator(git, state.old_base, state.new_base, ws.store, lines)
    proposal = step and relocator.propose_later(step.before, step.after, parent_tree, merged)
    relocator.index.keep_prefetched()  # (learnt for no relocation here: kept for a skip's)
    shown = proposal.tree if proposal else partial[0] if partial else merged.tree
    if proposal and partial:  # the hunks records settled, in the files it did not carry
        shown = under(git, merged.tree, partial[0], shown)
    # A conflicted file the merge left as it was (modify/delete) is the user's to resolve too.
    changed = git.changed_paths(parent_tree, shown)
    touched = tuple(dict.fromkeys([*changed, *merged.conflicted]))
    moved = {*git.changed_paths(src[0], shown), *src[1]}
    # The refresh starts here (state.before None): --abort goes back to this state.
    before, mine = before_stop(ws, state.before is None, current_head, moved)
    state = replace(
        state,
        before=state.before or before,
        at_stop=mine,
        done=tuple(done),
        stopped_at=name,
        stop_head=stop_head,
        stop_tree=parent_tree,
        merged_tree=merged.tree,
        touched=touched,
        conflicted=merged.conflicted,
    )
    overlay = Overlay(src[0], tuple(src[1]), shown)
    keep = tuple(Oid(c) for _n, c, _r in state.deferrals)
    plan = Plan(
        "refresh", current_head, stop_head, (), overlay, store(ws, state), before=before, keep=keep
    )
    publish(ws, plan)
    forget_clean(git)  # the merges after it are made under the work tree it wrote
    wrote = (moved, set(changed), src[0], parent_tree)
    if (inputs or walk and walk.digest) and _attributes_moved(git, wrote, current_head, stop_head):
        inputs = None  # what decides a merge (or a diff: binary or not) may have changed
        walk = walk and KeptLines(ws, None)  # the early walk's files walked again when traced
    ws.progress.step("reporting the conflict")
    report = parsed or unblamed(git, name, merged)
    triage = seen or triaged(ws, state, series, [conflict], attribute=False)[0]
    report = replace(report, kind=triage.kind, root=triage.root, note=note)
    if proposal:
        report = replace(report, relocations=proposal.named().relocations)
    if state.resolution:
        later = _later_owners(ws, series, state, name, merged.conflicted)
        report = replace(
            report,
            note=f"the merge commit's version of {', '.join(merged.conflicted)} also holds the"
            f" changes of {', '.join(later)} (applied after {name}), so it cannot be taken"
            " for this patch: resolve it here",
        )
    # Only the hunks the report prints are traced (`Checkout.printed`): a stop waits for no more.
    count = ws.printed(report) if ws.printed is not None else None
    ws.progress.step("tracing the conflicting lines upstream")
    report = blame_first(git, report, old_base, state.new_base, count, walk)
    ws.progress.step("judging the patches placed so far")
    so_far = classify(git, engine, state.steps, done, commits).verdicts
    left_out = [d.name for d in deferrals_after(series, state)]
    inputs = walk.digest if walk is not None else inputs
    held = judge(ws, series, state, {d.name for d in done if d.upstream}, left_out, inputs)
    so_far.update({n: h.verdict for n, h in held.items()} | dict.fromkeys(left_out, "deferred"))
    so_far[name] = "relocated" if report.relocated else "conflict"
    resolved = {d.name for d in done if d.resolved}
    recorded = {d.name for d in done if d.recorded}
    said = relocations_said(report.relocations)
    reused = {d.name: tuple(d.reused_hunks) for d in done}
    verdicts = tuple(
        Verdict(
            e.name,
            e.tag,
            so_far[e.name],
            e.name in resolved,
            e.name in recorded,
            note=said if e.name == name else "",
            reused_hunks=reused.get(e.name, ()),
        )
        for e in series.entries
        if e.name in so_far
    )
    return RefreshResult(
        state.route,
        state.old_base,
        Oid(state.new_base),
        state.new_ref,
        verdicts,
        stop_head,
        (),
        state.folded,
        state.fold_into,
        stopped=report,
        deferred=tuple(deferred_now),
    )


def _attributes_moved(
    git: Git, wrote: tuple[set[str], set[str], Oid, Oid], head: Oid, new_head: Oid
) -> bool:
    """Did a publish that wrote ``moved`` in the work tree and moved HEAD (and the index)
    from ``head`` to ``new_head`` change a ``.gitattributes``? Only those, of what
    `git.attributes.merge_inputs` digests, a publish changes. ``wrote``: (``moved``, the
    paths the shown tree changes from the stop's, the tree the work tree held, the stop's
    tree): a path HEAD's tree changes differs between HEAD's tree and the work tree's, or
    is written (``moved``), or differs between what is written and the stop's tree; so
    the move's whole diff is not walked (a superset: at worst merge_inputs is asked again)."""
    moved, changed, src, stop_tree = wrote
    if head == new_head:
        return _names_attributes(moved)
    old, new = git.trees_of([head, new_head])
    if new != stop_tree:
        return _names_attributes(moved | set(git.changed_paths(old, new)))
    return _names_attributes(moved | changed | set(git.changed_paths(old, src)))


def _names_attributes(paths: set[str]) -> bool:
    return any(p == ATTRIBUTES or p.endswith("/" + ATTRIBUTES) for p in paths)
