"""``bisect --matrix``: run it and print what it found. The lines are pure (`matrix_lines`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .bisecttext import short
from .output import echo, json_text, out, style

if TYPE_CHECKING:
    from ..commands.bisect import Hooks, Judge
    from ..commands.matrix import Blame, Cell, MatrixResult, Subset


def run_matrix(
    ctx: click.Context,
    good: str,
    bad: str,
    text: str,
    selection: tuple[str | None, str | None],
    command: tuple[str, ...],
    judge: Judge,
    reuse: bool,
    as_json: bool,
) -> None:
    from ..commands.matrix import Subset, matrix
    from ..errors import PatchstackError
    from .lab import progress_hooks

    if selection != (None, None):
        raise PatchstackError(
            "--matrix names its subsets itself: --only and --except do not go with it",
            "put them in the matrix: --matrix 'none;essential;except:diagnostic'",
        )
    subsets = Subset.parse(text)
    ws = ctx.obj.checkout(write=False)

    def hooks(s: Subset) -> Hooks:
        return progress_hooks(ctx, f" [{s.text}]", False)

    def measuring(commit: str, label: str) -> None:
        click.echo(f"matrix: measuring {short(commit)} and its parent with {label}", err=True)

    result = matrix(ws, good, bad, subsets, command, judge, hooks, measuring, reuse)
    if as_json:
        out(json_text(result.to_json()), verbatim=True)
    else:
        for line in matrix_lines(result):
            echo(ctx, line)
    if not result.ok:
        ctx.exit(1)


def _effect(c: Cell) -> str:
    if c.cost is not None:
        return f"{c.cost:.0f} %"
    if c.fails is None:
        return "cannot tell (" + (c.before[0] if c.before[0] == "skip" else c.after[0]) + ")"
    return f"{c.before[0]} -> {c.after[0]}"


def _with(c: Cell) -> str:
    return "with " + (c.subset if c.subset != "none" else "no patches")


def blame_line(b: Blame) -> str:
    """ "upstream 0be30d4 costs 35 % with essential and 2 % with no patches: it interacts
    with kimi-k25-eagle3-delegation.patch"."""
    figures = any(c.cost is not None for c in b.cells)
    fails = [c for c in b.cells if c.fails]
    passes = [c for c in b.cells if c.fails is False]
    if figures:
        parts = [f"{_effect(c)} {_with(c)}" for c in (*fails, *passes) if c.cost is not None]
        what = "costs " + _join(parts)
    else:
        what = "fails " + _join([_with(c) for c in fails])
        if passes:
            what += ", passes " + _join([_with(c) for c in passes])
    head = f"upstream {short(b.commit)} {what}"
    if b.verdict == "interacts":
        return f"{head}: it interacts with {_join(list(b.patches))}"
    if b.verdict == "upstream":
        return f"{head}: upstream's own change (it fails whatever is carried)"
    if b.patches:
        return f"{head}: not one patch explains it (among {_join(list(b.patches))})"
    return f"{head}: it does not fail when measured against its parent again"


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def matrix_lines(r: MatrixResult) -> list[str]:
    n = r.subsets[0][1].commits if r.subsets else 0
    out = [f"matrix over {n} commit(s) after {short(r.good)} up to {short(r.bad)}:"]
    width = max(len(s.text) for s, _r in r.subsets)
    counts = [f"({len(res.selected)} patch(es))" for _s, res in r.subsets]
    wide = max(len(c) for c in counts)
    for (s, res), count in zip(r.subsets, counts, strict=True):
        label = f"  {s.text.ljust(width)}  {count.ljust(wide)}"
        if res.outcome == "found" and res.culprit:
            out.append(f"{label}  first failing commit {short(res.culprit[0])} {res.culprit[1]}")
        elif res.outcome == "ambiguous":
            out.append(f"{label}  ambiguous: " + ", ".join(short(c) for c, _s in res.candidates))
        else:
            out.append(f"{label}  {res.outcome}")
        for stop in res.stops:
            where = short(res.at(stop.first)[0])
            out.append(f"  {' ' * width}  {stop.patch} does not apply from {where}")
    for b in r.blames:
        out += ["", style(blame_line(b), bold=True), *_cells(b)]
    if not r.blames:
        out += ["", style("no subset names a first failing commit", fg="yellow")]
    return out


def _cells(b: Blame) -> list[str]:
    rows = [("", "parent", "commit", "effect")]
    for c in (*b.cells, *b.left_out):
        rows.append((_with(c), _shown(c.before), _shown(c.after), _effect(c)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _shown(m: tuple[str, float | None]) -> str:
    return f"{m[1]:g}" if m[1] is not None else m[0]
