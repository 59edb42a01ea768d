"""import and export."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .app import cli
from .output import JSON_VERSION, complete_revisions, echo, json_text, out, style, tag_text

if TYPE_CHECKING:
    from ..interop import ImportResult

F = TypeVar("F", bound=Callable[..., Any])

# -- import / export --------------------------------------------------------------------------


def _import_options(f: F) -> F:
    f = click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")(f)
    f = click.option(
        "--verbose", "-v", is_flag=True, help="List every imported and skipped patch."
    )(f)
    f = click.option(
        "--base",
        metavar="REV",
        shell_complete=complete_revisions,
        help="Base of a new series (default: HEAD below any applied patches; for commits, the"
        " parent of the first one).",
    )(f)
    f = click.option(
        "--append", is_flag=True, help="Add the patches after those already in the series."
    )(f)
    return click.option(
        "--tag",
        "-t",
        metavar="TAG[,LABEL...]",
        help="Tag for every imported patch that does not carry one.",
    )(f)


SHOWN = 5  # imported, skipped or merged patches named without --verbose


def _capped(rows: list[str], verbose: bool, what: str) -> list[str]:
    if verbose or len(rows) <= SHOWN:
        return rows
    return [*rows[:SHOWN], f"  ... and {len(rows) - SHOWN} more {what} (--verbose lists them)"]


def _print_import(ctx: click.Context, result: ImportResult, verbose: bool, as_json: bool) -> None:
    """A summary that does not grow with the import: counts, the first few names, and every
    name with --verbose; then where the files went and the next step (or, with --json, the
    whole report)."""
    if as_json:
        out(json_text(import_doc(result)), verbatim=True)
        return
    _print_summary(ctx, result, verbose)


def import_doc(result: ImportResult) -> dict[str, Any]:
    """What ``--json`` says of an import (``schemas/import.json``)."""
    return {
        "series": result.series_path,
        "base": result.base,
        "created": result.created,
        "patches": [
            {
                "name": p.name,
                "tag": p.tag,
                "labels": list(p.labels),
                "origin": p.origin,
                "method": p.method,
                "notes": list(p.notes),
            }
            for p in result.patches
        ],
        "skipped": [{"what": what, "why": why} for what, why in result.skipped],
        "warnings": list(result.warnings),
    }


def _print_summary(ctx: click.Context, result: ImportResult, verbose: bool) -> None:
    merged = result.merged
    n = len(result.patches)
    counts = f" ({n - len(merged)} exact, {len(merged)} merged three-way)" if merged else ""
    echo(ctx, f"imported {n} patch(es){counts}:")
    rows = []
    for p in result.patches:
        labels = (", " + ", ".join(p.labels)) if p.labels else ""
        how = "" if p.method == "exact" else style(f"  ({p.method})", fg="yellow")
        rows.append(f"  {p.name} [{tag_text(p.tag)}{labels}] from {p.origin}{how}")
    for line in _capped(rows, verbose, "patch(es)"):
        echo(ctx, line)
    _print_tail(ctx, result, verbose)


def _print_tail(
    ctx: click.Context, result: ImportResult, verbose: bool, elsewhere: bool = False
) -> None:
    """What was skipped or merged, where the files went, and the next step; ``elsewhere``:
    HEAD is neither the series base nor the imported history (check out the base first)."""
    ws_dir = result.series_path.rsplit("/", 1)[0]
    merged = result.merged
    if result.skipped:
        echo(ctx, f"skipped {len(result.skipped)}:")
        skipped = [f"  {what}: {why}" for what, why in result.skipped]
        for line in _capped(skipped, verbose, "skipped"):
            echo(ctx, line)
    for warning in getattr(result, "warnings", ()):
        echo(ctx, f"patchstack: warning: {warning}", err=True)
    if merged:
        echo(
            ctx,
            style(
                f"{len(merged)} patch(es) did not apply exactly (quilt would need fuzz);"
                " each was merged three-way and written in exact form:",
                fg="yellow",
            ),
        )
        notes = [f"  {p.name}" + "".join(f"\n    {note}" for note in p.notes) for p in merged]
        for line in _capped(notes, verbose, "merged"):
            echo(ctx, line)
    verb = "created" if result.created else "updated"
    echo(ctx, f"written to {ws_dir}; {verb} the series (base {result.base[:12]})")
    if result.plain_head:
        step = (
            f"HEAD already carries them as {result.plain_head} plain commit(s):"
            " 'patchstack push --all' makes them the applied patches (the same tree: the"
            " work tree does not change)"
        )
    elif elsewhere:
        base = result.base[:12]
        step = (
            f"check out the series base ('git switch -c NAME {base}', or 'git switch --detach"
            f" {base}'), then 'patchstack push --all' applies them"
        )
    else:
        step = "'patchstack push --all' applies them"
    echo(ctx, style("next: " + step, bold=True))


@cli.group("import")
def import_cmd() -> None:
    """Import patches from a quilt series, a range of commits, a branch or an mbox.

    Only the series directory is written: the work tree and the branch are not touched
    ('patchstack push --all' applies the patches). A series that already has patches is
    extended only with --append. A name that is taken (a repeated subject, a patch of the
    series, or one that differs from either only by case) is numbered: fix-2.patch. The output
    is a summary; --verbose names every patch.

    \b
    Example:
      patchstack import quilt debian/patches --tag essential
      patchstack import commits origin/main..my-fixes --tag optimization
      patchstack import branch origin/my-fork --upstream origin/main --tag essential
    """


@import_cmd.command("quilt")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@_import_options
@click.pass_context
def import_quilt_cmd(
    ctx: click.Context,
    directory: str,
    tag: str | None,
    append: bool,
    base: str | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Import the quilt series in DIR (its 'series' file and patches).

    Guards ('#+essential') and patchstack tag comments set tags. A patch quilt would apply
    only with fuzz is merged three-way and reported.

    \b
    Example:
      patchstack import quilt debian/patches --tag essential
    """
    from ..interop import import_quilt

    _print_import(
        ctx, import_quilt(ctx.obj.checkout(), directory, tag, append, base), verbose, as_json
    )


@import_cmd.command("commits")
@click.argument("rng", metavar="RANGE", shell_complete=complete_revisions)
@_import_options
@click.pass_context
def import_commits_cmd(
    ctx: click.Context,
    rng: str,
    tag: str | None,
    append: bool,
    base: str | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Import each commit of RANGE (A..B) as a patch: message, author and date kept.

    A 'Patchstack-Tag:' trailer sets a commit's tag. The branch is not moved. When HEAD is
    those very commits (a branch importing its own history), 'patchstack push --all' then
    puts the patch commits in their place, with the same tree.

    \b
    Example:
      patchstack import commits origin/main..my-fork --tag essential
    """
    from ..interop import import_commits

    _print_import(ctx, import_commits(ctx.obj.checkout(), rng, tag, append, base), verbose, as_json)


@import_cmd.command("branch")
@click.argument("rev", metavar="[REV]", required=False)
@click.option(
    "--upstream",
    "-u",
    metavar="REF",
    help="The upstream branch REV merges (default: the current branch's upstream).",
)
@click.option(
    "--tag",
    "-t",
    metavar="TAG[,LABEL...]",
    help="Tag for every patch whose commit carries no 'Patchstack-Tag:' trailer.",
)
@click.option("--append", is_flag=True, help="Add the patches after those already in the series.")
@click.option(
    "--take-merge",
    is_flag=True,
    help="Where the merge's tree does not say how a conflicted file splits among the patches,"
    " give the conflicting patch the merge's version of the lines that do not come apart"
    " instead of stopping (with --continue: from there on).",
)
@click.option("--continue", "continue_", is_flag=True, help="Go on after resolving a conflict.")
@click.option("--abort", "abort_", is_flag=True, help="Go back to the state before the import.")
@click.option("--verbose", "-v", is_flag=True, help="List every merge, fixup and patch.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_context
def import_branch_cmd(
    ctx: click.Context,
    rev: str | None,
    upstream: str | None,
    tag: str | None,
    append: bool,
    take_merge: bool,
    continue_: bool,
    abort_: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Import a branch, upstream merges and all, as a series whose 'push --all' gives REV's tree.

    REV's first-parent history since it left REF's becomes the series: each commit of a
    linear segment a patch (message, author, date, trailers kept); at a merge of upstream the
    patches so far are carried onto that upstream commit as 'refresh' carries them, with the
    merge's own resolution settling the conflicts, and what the merge changed beyond them
    becomes a fixup patch; a merge of a side branch becomes one patch. The series base is the
    last upstream commit REV merged (its merge base with REF). The patch files are proven to
    give REV's tree before anything is written; the branch is not moved. A conflict the
    merge's tree cannot settle stops, as a refresh does: --continue or --abort.

    \b
    Example:
      patchstack import branch origin/dflash --upstream origin/main --tag essential
      patchstack import branch --continue     # after editing the conflict markers away
    """
    from ..errors import PatchstackError
    from ..interop.branch import import_branch
    from ..interop.ending import abort_import, continue_import
    from .branchtext import STOP_HINT, branch_doc, branch_lines, stop_lines
    from .conflicttext import render_conflict, tracer

    if continue_ or abort_:
        if continue_ and abort_ or rev or upstream or tag or append or abort_ and take_merge:
            raise PatchstackError(
                "--continue and --abort take no other argument",
                "see 'patchstack import branch --help'",
            )
    elif not rev:
        raise PatchstackError(
            "import branch needs REV, the branch to import",
            "e.g. 'patchstack import branch origin/my-fork --upstream origin/main'",
        )
    ws = ctx.obj.checkout(while_stopped=continue_ or abort_)
    ws.printed = tracer(verbose or as_json)
    try:
        if abort_:
            result = abort_import(ws)
        elif continue_:
            result = continue_import(ws, ws.progress, take_merge)
        else:
            assert rev is not None
            result = import_branch(ws, rev, upstream, tag, append, ws.progress, take_merge)
    finally:
        ws.progress.close()
    if as_json:
        imported = None
        if result.imported is not None:  # the import's own report, as import --json gives it
            imported = {"version": JSON_VERSION, **import_doc(result.imported)}
        out(json_text(branch_doc(result, imported)), verbatim=True)
        if result.stopped is not None:
            ctx.exit(1)
        return
    if result.aborted:
        echo(ctx, "import aborted: everything is as before it")
        return
    if result.stopped is not None:
        for line in stop_lines(result) + branch_lines(result, verbose):
            echo(ctx, line)
        for line in render_conflict(result.stopped, full=verbose):
            echo(ctx, line, err=True)
        echo(ctx, STOP_HINT, err=True)
        ctx.exit(1)
    assert result.imported is not None
    for line in branch_lines(result, verbose):
        echo(ctx, line)
    if result.walk.append:
        echo(ctx, "appended after the patches already in the series")
    else:
        echo(
            ctx,
            f"checked: the patch files applied on the base give exactly {result.walk.rev_name}'s"
            " tree",
        )
    elsewhere = not result.at_base and not result.imported.plain_head
    _print_tail(ctx, result.imported, verbose, elsewhere)
    if result.upstream and not elsewhere:
        echo(ctx, result.upstream)


@import_cmd.command("mbox")
@click.argument("file", metavar="FILE", type=click.Path(dir_okay=False))
@_import_options
@click.pass_context
def import_mbox_cmd(
    ctx: click.Context,
    file: str,
    tag: str | None,
    append: bool,
    base: str | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Import the mails of FILE as 'git am' reads them (git mailsplit, git mailinfo).

    \b
    Example:
      patchstack import mbox fixes.mbox --tag diagnostic
    """
    from ..interop import import_mbox

    _print_import(ctx, import_mbox(ctx.obj.checkout(), file, tag, append, base), verbose, as_json)


@cli.group("export")
def export_cmd() -> None:
    """Export the series as a quilt tree or an mbox.

    \b
    Example:
      patchstack export quilt ../for-quilt && patchstack export mbox - | git am
    """


@export_cmd.command("quilt")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.pass_context
def export_quilt_cmd(ctx: click.Context, directory: str) -> None:
    """Write the series and its patch files to DIR (new or empty) for 'quilt push -a'.

    Every patch is first proven to apply exactly (no fuzz) on the base plus the patches
    before it; tags stay in the series comments, which quilt ignores.

    \b
    Example:
      patchstack export quilt debian/patches
    """
    from ..interop import export_quilt

    ws = ctx.obj.checkout(write=False)
    result = export_quilt(ws, directory)
    echo(ctx, f"exported {len(result.names)} patch(es) to {ws.display(result.path)}")


@export_cmd.command("mbox")
@click.argument("file", metavar="FILE", type=click.Path(dir_okay=False))
@click.pass_context
def export_mbox_cmd(ctx: click.Context, file: str) -> None:
    """Write the series as one mail per patch to FILE ('-': standard output) for 'git am'.

    The mails carry the Patchstack-Patch and Patchstack-Tag trailers, so importing them
    again (or the commits 'git am' makes) keeps names and tags.

    \b
    Example:
      patchstack export mbox series.mbox && git am series.mbox
    """
    from ..interop import export_mbox

    ws = ctx.obj.checkout(write=False)
    result, data = export_mbox(ws, file)
    if file == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        echo(ctx, f"exported {len(result.names)} patch(es) to {ws.display(result.path)}")
