"""What ``refresh`` prints (and ``push NAME`` of a deferred patch, and each step of ``refresh
--steps``): the base move, a line per patch with its notes, the deferred summary, a stop's
conflict report and hint, the counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .conflicttext import (
    REPORT_FLOOR,
    STOP_BUDGET,
    conflict_summary,
    evidence_note,
    proposal_hint,
    recorded_note,
    render_conflict,
)
from .output import earlier_deferred, echo, listed_verdicts, verdict, verdict_counts
from .resolvertext import accepted_note, refused_lines

if TYPE_CHECKING:
    from ..commands.refresh.settle import RefreshResult


def print_refresh(
    ctx: click.Context, result: RefreshResult, verbose: bool = False, brought_back: bool = False
) -> None:
    """``brought_back`` (``push NAME`` of a deferred patch): the others deferred, one line."""
    if result.aborted:
        but = " but" if result.kept else ""
        echo(ctx, f"refresh aborted: HEAD {result.head[:12]}, everything as before{but}")
        for patch, path in result.kept:
            echo(ctx, f"  kept the resolution its --continue recorded: {patch}  {path}")
        if result.kept:
            echo(ctx, f"hint: 'patchstack resolutions {result.kept[0][0]} --forget' removes it")
        return
    head = _lines_above(result, verbose, brought_back)
    for line in head:
        echo(ctx, line)
    if result.stopped:
        c = result.stopped
        below = proposal_hint(c) + STOP_HINT
        left = max(REPORT_FLOOR, STOP_BUDGET - len(head) - len(below))
        for line in render_conflict(c, verbose, budget=left) + below:
            echo(ctx, line, err=True)
        return
    rewritten = sum(v.rewritten for v in result.verdicts)
    echo(
        ctx,
        f"{verdict_counts(result.verdicts)}; rewrote {rewritten} patch file(s);"
        f" applied: {len(result.applied)} patch(es), HEAD {result.head[:12]}",
    )
    if result.upstream_moved:
        up = result.upstream_moved
        echo(
            ctx,
            f"upstream {up} has moved past the series base: 'patchstack refresh --onto {up}'"
            " carries the series there ('patchstack status' lists the commits)",
        )


STOP_HINT = [
    "hint: edit the files to resolve the conflict markers, then run"
    " 'patchstack refresh --continue' (no git add needed);"
    " 'patchstack refresh --skip' leaves the patch out, deferred;"
    " 'patchstack refresh --abort' goes back"
]
VERDICTS_AT_STOP = 8  # patch lines above a stop's report without --verbose: the latest ones


def _lines_above(result: RefreshResult, verbose: bool, brought_back: bool) -> list[str]:
    """The base move, a line per patch with its notes, the deferred summary. At a stop (not
    --verbose) at most `VERDICTS_AT_STOP` patch lines, the latest, and the stopped patch's
    without notes (its report follows), so that the whole screen keeps to `STOP_BUDGET`."""
    lines: list[str] = []
    old = (result.old_base or "?")[:12]
    new = result.new_base[:12] + (f" ({result.new_ref})" if result.new_ref else "")
    if result.old_base != result.new_base:
        lines.append(f"base {old} -> {new}")
    if result.fold_into:
        lines.append(f"folded {', '.join(result.folded)} into {result.fold_into}")
    summarized = {c.patch for c in result.deferred}
    at_stop = result.stopped is not None and not verbose
    verdicts, earlier = list(result.verdicts), None
    if at_stop and not brought_back:
        # (push NAME counts the deferred ones that stay in one line of its own)
        verdicts, earlier = earlier_deferred(verdicts, summarized)
    shown, more = listed_verdicts(verdicts, verbose)
    staying = [v for v in shown if brought_back and not verbose and v.verdict == "deferred"]
    listed = [v for v in shown if not ((v.name in summarized and not verbose) or v in staying)]
    stopped = result.stopped.patch if at_stop and result.stopped is not None else None
    hidden = len(listed) - VERDICTS_AT_STOP if at_stop else 0
    if earlier:
        lines.append(earlier)
    if hidden > 0:
        lines.append(
            f"  ... {hidden} more patch(es) placed before these (--verbose lists them;"
            " 'patchstack status' shows where each stands)"
        )
        listed = listed[hidden:]
    for v in listed:
        if v.name == stopped:  # its report below says what a note would
            lines.append(f"  {verdict(v)} {v.name}")
            continue
        notes = []
        if said := accepted_note(result, v.name):
            notes.append(said)
        elif v.recorded:
            notes.append(recorded_note(v.reused_hunks, verbose))
        elif v.resolved:
            notes.append("resolved")
        if v.verdict == "upstream":
            if v.evidence:
                notes.append(evidence_note(v, verbose))
            notes.append(
                "dropped from the series (file kept)"
                if v.dropped
                else "already in the new base; not applied ('--drop-merged' removes it)"
            )
        elif v.note:  # no-op, unknown: never advised away
            notes.append(v.note)
        lines.append(f"  {verdict(v)} {v.name}" + (f"  ({'; '.join(notes)})" if notes else ""))
    if more:
        lines.append(more)
    if staying:
        them = f"{len(staying)} other {'patches stay' if len(staying) > 1 else 'patch stays'}"
        lines.append(f"  {them} deferred: 'patchstack status' lists them")
    for line in conflict_summary(result.deferred, verbose) if result.deferred else []:
        lines.append(line.replace("conflicts:", "deferred:", 1))
    lines += refused_lines(result)
    return lines
