"""The one next step ``status`` advises, from the status and the drift: a command that works in
that state wherever there is one."""

from __future__ import annotations

from ..model.marks import Deferral
from .refresh.drift import Drift
from .status import StatusResult


def submodule_step(paths: tuple[str, ...] | list[str]) -> str:
    """What to do with changes inside a submodule, which no patch can hold."""
    sub = paths[0]
    return (
        f"commit them in the submodule ('git -C {sub} add -A && git -C {sub} commit'), then"
        f" 'patchstack new NAME --tag TAG {sub}' captures the commit it is at; or drop them"
        f" ('git -C {sub} checkout -- . && git -C {sub} clean -fd')"
    )


def next_step(st: StatusResult, drift: Drift | None) -> str:
    """The one thing to do next, as a command where there is one."""
    if st.operation:
        return f"finish or abort the git {st.operation[0]} first"
    if st.refresh_stopped:
        command = st.stopped.command if st.stopped else "patchstack refresh"
        return (
            f"resolve the conflict markers, then '{command} --continue'"
            f" (or '{command} --abort' to go back)"
        )
    if st.stepping:
        return (
            "'patchstack refresh --continue' goes on with the next step"
            " ('patchstack refresh --abort' goes back to before the first)"
        )
    applied = [p for p in st.patches if p.applied]
    if st.plain_series:
        return (
            f"'patchstack push --all' makes HEAD's {st.plain_series} plain commit(s) the applied"
            " patches (the same tree: the work tree does not change)"
        )
    if st.on_top:
        if st.on_top_problem:
            return str(st.on_top_problem[1])
        return (
            "make the commits on top patches ('patchstack import commits'), or move them off"
            " ('git reset --keep')"
        )
    if applied and st.series_base and st.stack_base != st.series_base:
        if st.built_on:  # a refresh here would rewrite the series everyone shares
            return (
                f"nothing to do: this worktree carries the patches on {st.built_on} on purpose;"
                " the series keeps its own base (edit and refresh it in the main checkout)"
            )
        return "'patchstack refresh' rewrites the series for the stack's new base"
    differs = [p.name for p in st.patches if p.matches == "differs"]
    if differs:
        return (
            f"adopt the commit's change with 'patchstack refresh --patch {differs[0]}', or drop"
            " it with '--discard-changes'"
        )
    if st.differs:  # only edited patch files
        return "'patchstack push', 'pop' and 'refresh' apply the edited patch files"
    if st.out_of_order and not st.unknown_applied:
        return (
            "'patchstack refresh' rebuilds the applied commits in the series order"
            " ('patchstack undo' takes back a series edit)"
        )
    if st.renamed and not st.unknown_applied:
        old, new = st.renamed[0]
        return (
            f"'patchstack push --all' gives the applied commits their patches' new names"
            f" ({old} is now {new}: a rename merged with the series; the same trees)"
        )
    if st.unknown_applied:
        return "'patchstack log' shows what changed the stack; 'patchstack undo' goes back"
    if st.tags_differ:
        p = st.tags_differ[0]
        return f"'patchstack tag {p.name} {p.tag}' makes its commit say the series' tag"
    if drift is not None and drift.commits:
        if drift.target_name == "HEAD":  # the series is popped and upstream is checked out
            return "'patchstack check', then 'patchstack refresh'"
        onto = drift.target_name
        return f"'patchstack check --onto {onto}', then 'patchstack refresh --onto {onto}'"
    if st.edits_in_patches and st.fold_into:
        return (
            f"'patchstack refresh --patch {st.fold_into}' folds the edits into the patch whose"
            " lines they change (a plain refresh folds only the top patch's files)"
        )
    if st.edits_in_patches:
        return "'patchstack refresh' folds the edits into the top patch (or --patch NAME)"
    if st.edits:
        return "'patchstack new NAME --tag TAG PATH...' makes the edits a patch"
    if st.in_base:
        shown = ", ".join(st.in_base[:3]) + (" ..." if len(st.in_base) > 3 else "")
        return (
            f"'patchstack refresh --drop-merged' drops the {len(st.in_base)} patch(es) the base"
            f" already holds from the series ({shown}; their files stay)"
        )
    if st.submodules:
        return submodule_step(st.submodules)
    deferred = [m for m in st.marks if isinstance(m, Deferral)]
    marked = {m.name for m in st.marks}
    unapplied = len([p for p in st.patches if not p.applied and p.name not in marked])
    if unapplied:
        return f"nothing required; 'patchstack push --all' applies the {unapplied} unapplied"
    roots = [m.name for m in deferred if not m.root]
    if roots:
        primaries = len([m for m in deferred if m.root and m.primary])
        no_ops = len([m for m in deferred if m.root and m.no_op and not m.primary])
        waiting = len(deferred) - len(roots) - primaries - no_ops
        counts = f"{len(roots)} deferred" + (f", {waiting} knock-on(s) waiting" if waiting else "")
        counts += f", {primaries} primary conflict(s) waiting" if primaries else ""
        counts += f", {no_ops} no-op(s) waiting" if no_ops else ""
        return f"'patchstack push {roots[0]}' brings a deferred patch back ({counts})"
    return "nothing to do: the stack agrees with the series"
