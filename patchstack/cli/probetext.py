"""What ``check --probes``, ``refresh --probes`` and ``check --require-status`` print. Pure:
values in, lines out."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..commands.probes import BROKEN, EFFECTIVE, INEFFECTIVE, NOT_RUN, ProbeReport, Run
from ..commands.upstream import Standing
from .output import some_names, style

_COLOURS = {EFFECTIVE: "green", INEFFECTIVE: "yellow", BROKEN: "red", NOT_RUN: "red"}
_MEANS = {
    INEFFECTIVE: "passes without it too (upstream absorbed it, or it no longer matters)",
    BROKEN: "fails with it",
}
SHOWN = 10


def _run(label: str, run: Run) -> str:
    cached = ", cached" if run.cached else ""
    return (
        f"    {label} {run.why} ({run.seconds:.1f} s{cached}), commit {run.commit[:12]},"
        f" tree {run.tree[:12]}"
    )


def probe_lines(report: ProbeReport, verbose: bool = False) -> list[str]:
    n = len(report.selected)
    out = [f"probes on {report.target[:12]} + {n} patch(es):"]
    width = max((len(r.verdict) for r in report.results), default=0)
    for r in report.results:
        word = style(r.verdict.ljust(width), fg=_COLOURS[r.verdict])
        why = _MEANS.get(r.verdict, r.why if r.verdict == NOT_RUN else "")
        out.append(f"  {word}  {r.name}" + (f": {why}" if why else ""))
        if r.with_run is None or r.without_run is None:
            continue
        if r.verdict == EFFECTIVE and not verbose:
            continue
        out.append(_run("with it:   ", r.with_run))
        out.append(_run("without it:", r.without_run) + f"  ({r.without})")
        shown = r.with_run if r.verdict == BROKEN else r.without_run
        if r.verdict != EFFECTIVE and shown.output:
            out += ["      | " + line for line in shown.output.split("\n")]
        if r.verdict != EFFECTIVE:
            out.append(
                f"    reproduce:  git worktree add --detach ../probe {shown.commit[:12]}"
                f" && cd ../probe && sh -c {shlex.quote(r.probe)}"
            )
    if report.without_probe:
        names = list(report.without_probe)
        out.append(f"  no probe ({len(names)}): " + some_names(names, verbose, SHOWN))
    counts: dict[str, int] = {}
    for r in report.results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    told = ", ".join(
        f"{counts[v]} {v}" for v in (EFFECTIVE, INEFFECTIVE, BROKEN, NOT_RUN) if v in counts
    )
    out.append(f"{len(report.results)} probe(s)" + (f": {told}" if told else ""))
    return out


def missing_status_lines(found: Sequence[Standing]) -> list[str]:
    """``check --require-status``: the patches with no upstream status."""
    if not found:
        return ["upstream status: every patch has one"]
    lines = [style(f"no upstream status ({len(found)}):", fg="red")]
    lines += [f"  {s.name}" for s in found]
    lines.append(
        "hint: record one with 'patchstack upstream NAME submitted URL' (or applied COMMIT,"
        " not-needed REASON, pending)"
    )
    return lines
