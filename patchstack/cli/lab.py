"""bisect, worktree, doctor: the experiment commands."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from .app import cli
from .output import (
    complete_revisions,
    complete_tags,
    echo,
    json_text,
    out,
    render_conflict,
    selector,
    style,
)

if TYPE_CHECKING:
    from ..commands.bisect import BisectResult, Step
    from ..commands.doctor import DoctorReport
    from ..commands.worktree import Experiment
    from ..model.selection import Selector


def _selection_options(f: Any) -> Any:
    f = click.option(
        "--except",
        "except_",
        metavar="TAGS",
        shell_complete=complete_tags,
        help="Leave out patches with these tags (comma-separated).",
    )(f)
    return click.option(
        "--only",
        metavar="TAGS",
        shell_complete=complete_tags,
        help="Only patches with these tags (comma-separated, exact; default: every patch).",
    )(f)


def _selector(only: str | None, except_: str | None) -> Selector:
    found: Selector = selector(None, False, only, except_)
    return found


def _short(oid: str | None) -> str:
    return (oid or "?")[:10]


# -- bisect -----------------------------------------------------------------------------------


@cli.command("bisect")
@click.argument("good", shell_complete=complete_revisions)
@click.argument("bad", shell_complete=complete_revisions)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARG]...")
@_selection_options
@click.option(
    "--threshold",
    type=float,
    metavar="N",
    help="Judge a COMMAND that exits 0 by the figure it prints: good when it is at least N.",
)
@click.option(
    "--lower-is-better",
    is_flag=True,
    help="With --threshold: good when the figure is at most N (a latency, a memory size).",
)
@click.option(
    "--metric",
    metavar="REGEX",
    help="With --threshold: the figure is the first group of the last output line matching"
    " REGEX (default: the last number COMMAND prints on its standard output).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result on stdout.")
@click.pass_context
def bisect_cmd(
    ctx: click.Context,
    good: str,
    bad: str,
    command: tuple[str, ...],
    only: str | None,
    except_: str | None,
    threshold: float | None,
    lower_is_better: bool,
    metric: str | None,
    as_json: bool,
) -> None:
    """Find the first upstream commit after GOOD, up to BAD, at which COMMAND fails with the
    selected patches applied at every step.

    Each step builds the upstream commit plus the selected patches exactly as 'push --onto'
    would, checks it out in a scratch worktree (never yours; removed at the end, on error and
    on Ctrl-C), and runs COMMAND there, in the same subfolder as you are now. Exit statuses are
    read as 'git bisect run' reads them: 0 good, 125 skip, 1-127 bad, 128 and above abort. A
    commit where a selected patch does not apply is skipped and its conflict report shown.
    The history is followed by first parents; each step starts from a clean checkout.

    Exits 0 when it names the first failing commit, 1 when it cannot (skipped commits leave
    several candidates, BAD does not fail, GOOD fails, or COMMAND aborted).

    \b
    Example:
      patchstack bisect v1.2 origin/main --only essential -- ./run-tests.sh
      patchstack bisect v1.2 origin/main --only essential --threshold 80 \\
          --metric 'tokens/s: ([0-9.]+)' -- ~/bench.sh
    """
    import re

    from ..commands.bisect import Hooks, Judge, bisect
    from ..errors import PatchstackError

    if threshold is None and (lower_is_better or metric):
        raise PatchstackError(
            "--lower-is-better and --metric go with --threshold N",
            "add --threshold N: the figure that separates good from bad",
        )
    try:
        pattern = re.compile(metric) if metric else None
    except re.error as exc:
        raise PatchstackError(
            f"--metric: not a regular expression: {exc}",
            "give a Python regular expression whose first group is the figure: 'tok/s: ([0-9.]+)'",
        ) from exc
    judge = Judge(threshold, lower_is_better, pattern)
    ws = ctx.obj.checkout(write=False)
    seen: dict[tuple[object, ...], str] = {}  # a conflict report already shown -> where
    hooks = Hooks(
        testing=lambda i, commit, subject: click.echo(
            f"bisect: testing {_short(commit)} {subject}", err=True
        ),
        tested=lambda step: _print_step(ctx, step, seen),
        output=lambda line: click.echo(line, nl=False, err=True),
    )
    result = bisect(ws, good, bad, _selector(only, except_), command, judge, hooks)
    if as_json:
        out(json_text(result.to_json()), verbatim=True)
    else:
        _print_bisect(ctx, result)
    if result.outcome != "found":
        ctx.exit(1)


def _print_step(ctx: click.Context, step: Step, seen: dict[tuple[object, ...], str]) -> None:
    timing = f" ({step.seconds:.1f} s)" if step.status is not None else ""
    echo(ctx, f"  -> {step.verdict}: {step.why}{timing}", err=True)
    if step.conflict is not None:
        c = step.conflict
        key = (c.patch, c.files, c.hunks, c.detail)
        if key in seen:
            echo(ctx, f"     (the same conflict as at {seen[key]})", err=True)
            return
        seen[key] = _short(step.commit)
        for line in render_conflict(c):
            echo(ctx, "     " + line, err=True)


def _print_bisect(ctx: click.Context, r: BisectResult) -> None:
    carried = ", ".join(r.selected) if r.selected else "none"
    span = f"{r.commits} commit(s) after {_short(r.good)} up to {_short(r.bad)}"
    echo(ctx, f"{span}; carried patches ({len(r.selected)}): {carried}")
    if r.outcome == "found" and r.culprit:
        echo(ctx, style(f"first failing commit: {r.culprit[0]} {r.culprit[1]}", bold=True))
        if r.shared:
            echo(ctx, "  it changes files the carried patches touch:")
            for path, names in r.shared:
                echo(ctx, f"    {path}  ({', '.join(names)})")
        else:
            echo(ctx, "  it changes no file the carried patches touch")
    elif r.outcome == "ambiguous":
        note = "the first failing commit is one of these (skipped commits hide which):"
        echo(ctx, style(note, fg="yellow"))
        for oid, subject in r.candidates:
            echo(ctx, f"  {_short(oid)} {subject}")
    else:
        why = {
            "no-failure": f"COMMAND does not fail at BAD ({_short(r.bad)}) with these patches",
            "good-fails": f"COMMAND already fails at GOOD ({_short(r.good)}) with these patches",
            "aborted": "COMMAND aborted the bisect (exit status 128 or above, or a signal)",
        }[r.outcome]
        echo(ctx, style(why, fg="yellow"))
    echo(ctx, "")
    rows = [("commit", "result", "patches", "time", "figure", "subject")]
    for s in sorted(r.steps, key=lambda s: s.index):
        patches = str(len(s.applied)) if s.conflict is None else "conflict"
        rows.append(
            (
                _short(s.commit),
                s.verdict,
                patches,
                f"{s.seconds:.1f} s" if s.status is not None else "-",
                f"{s.figure:g}" if s.figure is not None else "-",
                s.subject[:60],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        echo(ctx, "  ".join([*cells, row[5]]))


# -- worktree ---------------------------------------------------------------------------------


@cli.command("worktree")
@click.argument("directory", required=False, metavar="[DIR]", type=click.Path(file_okay=False))
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Apply the patches onto REV (default: the base).",
)
@_selection_options
@click.option("--list", "list_", is_flag=True, help="List the worktrees made by this command.")
@click.option("--remove", is_flag=True, help="Remove the worktree DIR made by this command.")
@click.option("--force", is_flag=True, help="With --remove: even with edits or commits there.")
@click.option("--json", "as_json", is_flag=True, help="With --list: machine-readable.")
@click.pass_context
def worktree_cmd(
    ctx: click.Context,
    directory: str | None,
    onto: str | None,
    only: str | None,
    except_: str | None,
    list_: bool,
    remove: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Make a linked worktree at DIR with the selected patches applied onto REV, for
    side-by-side experiments; your own worktree is not touched.

    The patches in DIR are ordinary patch commits on a detached HEAD, so 'patchstack status',
    'push' and 'pop' work there, on the series this worktree uses. --list shows them all;
    --remove removes one, refusing when it holds what the series does not (edits, commits
    that differ from their patch files, patches not in the series, commits on no branch that
    are not patches) unless --force. Making and removing a worktree are entries of this
    checkout's operation log: 'patchstack undo' here removes the worktree it made, or makes
    the removed one again, commits, files and log included.

    \b
    Example:
      patchstack worktree ../essential-only --only essential
      patchstack worktree ../new-base --onto origin/main
      patchstack worktree --list
      patchstack worktree --remove ../essential-only
    """
    from ..commands import worktree
    from ..errors import PatchstackError

    making = bool(onto or only or except_)
    if list_ and (directory or remove or force or making):
        raise PatchstackError("--list takes no DIR and no other option")
    if not list_ and not directory:
        raise PatchstackError("give the worktree's folder DIR", "or --list to see them")
    if remove and making:
        raise PatchstackError("--remove takes only DIR (and --force)")
    if force and not remove:
        raise PatchstackError("--force goes with --remove")
    if as_json and not list_:
        raise PatchstackError("--json goes with --list")
    if list_:
        found = worktree.experiments(ctx.obj.checkout(write=False).git)
        if as_json:
            out(json_text([_experiment_json(e) for e in found]), verbatim=True)
        elif not found:
            out("no worktrees made by 'patchstack worktree'")
        for e in [] if as_json else found:
            out(_experiment_line(e))
        return
    assert directory is not None
    ws = ctx.obj.checkout()
    if remove:
        gone = worktree.remove(ws, directory, force)
        click.echo(f"removed {directory} ({len(gone.patches)} patch(es) on {_short(gone.base)})")
        click.echo("'patchstack undo' makes it again, with its commits and files")
        return
    made = worktree.create(ws, directory, onto, _selector(only, except_))
    on = f"{onto} ({_short(made.base)})" if onto else f"the series base {_short(made.base)}"
    click.echo(f"made {directory}: {len(made.patches)} patch(es) on {on}, HEAD {_short(made.head)}")
    for name in made.patches:
        click.echo(f"  + {name}")
    out(f"next: cd {directory} && patchstack status")


def _experiment_line(e: Experiment) -> str:
    where = os.path.relpath(e.path) if not os.path.relpath(e.path).startswith("../..") else e.path
    sel = f" ({' '.join(e.selection)})" if e.selection else ""
    gone = "  [folder missing: 'patchstack worktree --remove' unregisters it]" if e.missing else ""
    moved = "" if e.base == e.made_on else f" (made on {_short(e.made_on)})"
    return f"{where}  {len(e.patches)} patch(es) on {_short(e.base)}{moved}{sel}{gone}"


def _experiment_json(e: Experiment) -> dict[str, object]:
    return {
        "path": e.path,
        "head": e.head,
        "base": e.base,
        "made_on": e.made_on,
        "onto": e.onto,
        "patches": list(e.patches),
        "selection": list(e.selection),
        "missing": e.missing,
    }


# -- doctor -----------------------------------------------------------------------------------


@cli.command("doctor")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="The interpreter that runs the service (default: python on PATH).",
)
@click.option(
    "--module",
    metavar="NAME",
    help="The top-level package it imports (default: guessed from pyproject.toml/setup.py).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def doctor_cmd(ctx: click.Context, python: str | None, module: str | None, as_json: bool) -> None:
    """Is what runs what the series says? Where the interpreter imports the package from, and
    whether that matches this work tree and its patches.

    Reports, one line per finding with the next step: an installed copy instead of this work
    tree (and which patched files differ, which installed files carry edits in no patch),
    compiled files shadowing changed sources, uncommitted edits in no patch, commits that no
    longer match their patch files, a base that moved. The interpreter runs isolated ('python
    -I', started outside the repository, so no file of the repository runs) and is asked what
    a service started in the current folder would import (that folder, PYTHONPATH, the user
    site, then its own path, as 'python -m NAME' would see them); the package is found, not
    imported.

    Exits 0 when everything agrees, 1 when something differs.

    \b
    Example:
      patchstack doctor --python /opt/venv/bin/python --module sglang
    """
    from ..commands.doctor import doctor

    report = doctor(ctx.obj.checkout(write=False), python, module)
    if as_json:
        out(json_text(report.to_json()), verbatim=True)
    else:
        _print_doctor(ctx, report)
    if not report.ok:
        ctx.exit(1)


def _print_doctor(ctx: click.Context, r: DoctorReport) -> None:
    for line in r.facts:
        echo(ctx, line)
    for f in r.findings:
        mark = (
            style("differs", fg="red") if f.severity == "differs" else style("note   ", fg="cyan")
        )
        echo(ctx, f"{mark} {f.message}; next: {f.next}")
    if r.ok:
        echo(ctx, style("everything agrees", fg="green"))
