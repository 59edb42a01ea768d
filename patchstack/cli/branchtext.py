"""What ``import branch`` prints: a summary that does not grow with the branch (counts, the
merges taken and the fixups made, capped), every patch with --verbose. Pure lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import style, tag_text

if TYPE_CHECKING:
    from ..interop.branch import BranchResult

SHOWN = 5


def _capped(rows: list[str], verbose: bool, what: str) -> list[str]:
    if verbose or len(rows) <= SHOWN:
        return rows
    return [*rows[:SHOWN], f"  ... and {len(rows) - SHOWN} more {what} (--verbose lists them)"]


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def branch_lines(result: BranchResult, verbose: bool) -> list[str]:
    """The summary of a finished (or stopped) import, before the shared tail (skipped,
    where the files went, the next step)."""
    from ..model.branch import COMMIT, FIXUP, SIDE

    walk = result.walk
    pieces = walk.pieces
    kinds = {k: sum(p.kind == k for p in pieces) for k in (COMMIT, SIDE, FIXUP)}
    out = []
    if result.stopped is None:
        out.append(
            f"imported {walk.rev_name} ({_plural(result.total, 'first-parent commit')} since"
            f" {walk.ref_name}) as {_plural(len(pieces), 'patch', 'patches')}: "
            f"{kinds[COMMIT]} from commits, {_plural(kinds[SIDE], 'side-branch merge')},"
            f" {_plural(kinds[FIXUP], 'fixup')}"
        )
    merges = walk.taken
    moved = [t for t in merges if t.upstream]
    ups = sum(not t.side for t in merges)
    out.append(
        f"merges: {len(merges)} ({ups} of upstream, {len(merges) - ups} of side branches);"
        f" carried onto upstream {_plural(len(moved), 'time')}"
        + (f", base {walk.base[:12]}" if moved else "")
    )
    rows = []
    for t in moved:
        what = "side branch, " if t.side else ""
        notes = [f"{what}{_plural(t.carried, 'patch', 'patches')} carried"]
        if t.settled:
            kept = [n for n in t.whole if n not in (*t.dropped, *t.emptied, *t.absorbed)]
            whole = f" ({len(kept)} taking its version)" if kept else ""
            notes.append(f"{_plural(t.settled, 'conflict')} settled by the merge's tree{whole}")
        if t.resolved:
            notes.append(f"{t.resolved} resolved by hand")
        if t.dropped:
            notes.append(f"{_plural(len(t.dropped), 'patch', 'patches')} upstream already held")
        if t.emptied:
            notes.append(f"{_plural(len(t.emptied), 'patch', 'patches')} resolved to nothing")
        if t.absorbed:
            notes.append(
                f"{_plural(len(t.absorbed), 'patch', 'patches')} already made by the patches before"
            )
        rows.append(f"  {t.merge[:12]} -> upstream {t.upstream[:12]}: " + ", ".join(notes))
    out += _capped(rows, verbose, "merge(s)")
    fixups = [t for t in merges if t.made and not t.side]
    if fixups:
        out.append(f"{_plural(len(fixups), 'fixup')}: what a merge changed beyond its conflicts")
        out += _capped([f"  {t.made} (merge {t.merge[:12]})" for t in fixups], verbose, "fixup(s)")
    # A patch left out at the merge is not in the series: nothing of it to review.
    taken_whole = [
        (n, t.merge)
        for t in merges
        for n in t.whole
        if n not in (*t.dropped, *t.emptied, *t.absorbed)
    ]
    if taken_whole:
        unique = len(dict.fromkeys(n for n, _m in taken_whole))
        times = f" ({len(taken_whole)} times)" if len(taken_whole) > unique else ""
        out.append(
            f"{_plural(unique, 'patch', 'patches')} took the merge's version{times} where"
            " the later patches' changes did not come apart from upstream's (--take-merge:"
            " those changes came along there); review them:"
        )
        rows = [f"  {n} (at merge {m[:12]})" for n, m in taken_whole]
        out += _capped(rows, verbose, "patch(es)")
    for said, left in (
        ("an upstream merge already held:", [(n, t.merge) for t in merges for n in t.dropped]),
        (
            "whose conflict at a merge was resolved to nothing (upstream does not hold it):",
            [(n, t.merge) for t in merges for n in t.emptied],
        ),
        (
            "the patches before it at a merge already made (one took the merge's version, this"
            " change with it; upstream does not hold it):",
            [(n, t.merge) for t in merges for n in t.absorbed],
        ),
    ):
        if left:
            out.append(f"left out {_plural(len(left), 'patch', 'patches')} {said}")
            out += _capped([f"  {n} (at merge {m[:12]})" for n, m in left], verbose, "patch(es)")
    if verbose:
        out += [f"  {p.name} [{tag_text(p.tag or walk.tag or '')}] from {p.origin}" for p in pieces]
    return out


def stop_lines(result: BranchResult) -> list[str]:
    """Where the import stopped, before the conflict report."""
    assert result.stopped is not None and result.stopped_merge
    return [
        style(
            f"import stopped at merge {result.stopped_merge[:12]} (commit {result.walk.at + 1}"
            f" of {result.total}): patch {result.stopped.patch} conflicts with the upstream"
            " commit it brought",
            fg="red",
        )
    ]


STOP_HINT = (
    "hint: edit the files to resolve the conflict markers, then run 'patchstack import branch"
    " --continue' (no git add needed), or 'patchstack import branch --abort' to go back"
)


def branch_doc(result: BranchResult, imported: dict[str, Any] | None) -> dict[str, Any]:
    """What ``import branch --json`` says (``schemas/import-branch.json``): the walk, and the
    import's own report once it is written (``imported``), or where it stopped."""
    walk = result.walk
    state = "aborted" if result.aborted else "stopped" if result.stopped else "done"
    stopped = None
    if result.stopped is not None and result.stopped_merge:
        stopped = {
            "merge": result.stopped_merge,
            "commit": walk.at + 1,
            "conflict": result.stopped.to_json(),
        }
    return {
        "state": state,
        "rev": walk.rev_name,
        "upstream": walk.ref_name,
        "first_parent_commits": result.total,
        "base": walk.base,
        "pieces": [
            {"name": p.name, "kind": p.kind, "origin": p.origin, "tag": p.tag or walk.tag}
            for p in walk.pieces
        ],
        "merges": [
            {
                "merge": t.merge,
                "upstream": t.upstream or None,
                "side": t.side,
                "carried": t.carried,
                "settled": t.settled,
                "resolved": t.resolved,
                "left_out": list(t.dropped),
                "resolved_to_nothing": list(t.emptied),
                "made_before": list(t.absorbed),
                "took_merge": list(t.whole),
                "made": t.made,
            }
            for t in walk.taken
        ],
        "stopped": stopped,
        "import": imported,
    }
