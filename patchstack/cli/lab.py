"""bisect, worktree, doctor: the experiment commands."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from .app import cli
from .output import (
    complete_revisions,
    echo,
    json_text,
    out,
    selector,
    style,
    tag_filter_options,
)

if TYPE_CHECKING:
    from ..commands.bisect import Hooks, Step
    from ..commands.doctor import DoctorReport
    from ..commands.worktree import Experiment
    from ..model.selection import Selector


def _selection_options(f: Any) -> Any:
    return tag_filter_options(
        f, "Only patches with these tags (comma-separated, exact; default: every patch)."
    )


def _selector(only: str | None, except_: str | None) -> Selector:
    found: Selector = selector(None, False, only, except_)
    return found


def _short(oid: str | None) -> str:
    return (oid or "?")[:10]


# -- bisect -----------------------------------------------------------------------------------


def _threshold(text: str | None) -> tuple[float | None, bool]:
    """--threshold N (a figure) or N% (a percentage of the figure at GOOD)."""
    from ..errors import PatchstackError

    if text is None:
        return None, False
    relative = text.strip().endswith("%")
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise PatchstackError(
            f"--threshold: not a number: '{text}'",
            "give a figure (--threshold 80) or a percentage of GOOD's figure (--threshold 10%)",
        ) from None
    return value, relative


@cli.command("bisect")
@click.argument("good", shell_complete=complete_revisions)
@click.argument("bad", shell_complete=complete_revisions)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARG]...")
@_selection_options
@click.option(
    "--threshold",
    metavar="N|N%",
    help="Judge a COMMAND that exits 0 by the figure it prints: good when it is at least N;"
    " N%: good when it is at most N percent worse than at GOOD (GOOD is tested first).",
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
@click.option(
    "--matrix",
    metavar="SUBSETS",
    help="Bisect with each subset of the series ('none;essential;all': none, all, TAGS as"
    " --only, except:TAGS) and say which (upstream commit, patch) pair the failure comes from.",
)
@click.option(
    "--no-cache", is_flag=True, help="Run COMMAND again where it ran in the very same tree."
)
@click.option(
    "--verbose", "-v", is_flag=True, help="Show the whole conflict report of a skipped step."
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
    threshold: str | None,
    lower_is_better: bool,
    metric: str | None,
    matrix: str | None,
    no_cache: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Find the first upstream commit after GOOD, up to BAD, at which COMMAND fails with the
    selected patches applied at every step.

    Each step builds the upstream commit plus the selected patches exactly as 'push --onto'
    would, checks it out in a scratch worktree (never yours; removed at the end, on error and
    on Ctrl-C), and runs COMMAND there, in the same subfolder as you are now. Each patch is
    taken in the version whose base is nearest that commit (the series now, or an earlier one
    from the operation log or the series folder's git history: a bisect crosses a refresh),
    and the step says which. Exit statuses are read as 'git bisect run' reads them: 0 good,
    125 skip, 1-127 bad, 128 and above abort. A commit where a selected patch does not apply
    is skipped; the answer says from which commit on which patch does not apply (--verbose:
    each conflict report). The history is followed by first parents; each step starts from a
    clean checkout; a run in the very same tree is taken from the cache.

    Exits 0 when it names the first failing commit, 1 when it cannot (skipped commits leave
    several candidates, BAD does not fail, GOOD fails, or COMMAND aborted).

    \b
    Example:
      patchstack bisect v1.2 origin/main --only essential -- ./run-tests.sh
      patchstack bisect v1.2 origin/main --only essential --threshold 80 \\
          --metric 'tokens/s: ([0-9.]+)' -- ~/bench.sh
      patchstack bisect v1.2 origin/main --matrix 'none;essential;all' \\
          --threshold 10% -- ~/bench.sh
    """
    import re

    from ..commands.bisect import Judge
    from ..errors import PatchstackError

    value, relative = _threshold(threshold)
    if value is None and (lower_is_better or metric):
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
    judge = Judge(value, lower_is_better, pattern, relative)
    if matrix is not None:
        from .matrixtext import run_matrix

        run_matrix(ctx, good, bad, matrix, (only, except_), command, judge, not no_cache, as_json)
        return
    from ..commands.bisect import bisect

    ws = ctx.obj.checkout(write=False)
    hooks = progress_hooks(ctx, "", verbose)
    sel = _selector(only, except_)
    result = bisect(ws, good, bad, sel, command, judge, hooks, not no_cache)
    if as_json:
        out(json_text(result.to_json()), verbatim=True)
    else:
        from .bisecttext import result_lines

        for line in result_lines(result, verbose):
            echo(ctx, line)
    if result.outcome != "found":
        ctx.exit(1)


def progress_hooks(ctx: click.Context, label: str, verbose: bool) -> Hooks:
    """What a bisect says on stderr while it runs: each step, its verdict, COMMAND's output,
    the builds that pin where a patch stops applying."""
    from ..commands.bisect import Hooks
    from .bisecttext import step_lines, testing_line

    seen: dict[tuple[object, ...], str] = {}  # a conflict already shown -> where

    def testing(i: int, commit: str, subject: str, k: int, left: tuple[int, int]) -> None:
        click.echo(testing_line(label, commit, subject, k, left), err=True)

    def tested(step: Step) -> None:
        for line in step_lines(step, seen, verbose):
            echo(ctx, line, err=True)

    def locating(patch: str) -> None:
        click.echo(f"bisect{label}: finding where {patch} stops applying (builds only)", err=True)

    return Hooks(
        testing=testing,
        tested=tested,
        output=lambda line: click.echo(line, nl=False, err=True),
        locating=locating,
    )


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
