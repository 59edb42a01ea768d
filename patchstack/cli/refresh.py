"""refresh and check."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .app import cli
from .output import (
    complete_patch_names,
    complete_revisions,
    complete_tags,
    echo,
    json_text,
    listed_verdicts,
    out,
    render_conflict,
    selector,
    verdict,
    verdict_counts,
)

if TYPE_CHECKING:
    from ..commands.refresh.settle import RefreshResult

# -- refresh / check --------------------------------------------------------------------------


@cli.command()
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Replay the series onto REV (e.g. origin/main).",
)
@click.option(
    "--patch",
    "patch_name",
    metavar="NAME",
    shell_complete=complete_patch_names,
    help="Fold edits into NAME (default: the top one).",
)
@click.option(
    "--drop-merged", is_flag=True, help="Remove patches already contained in the new base."
)
@click.option(
    "--discard-changes",
    "discard",
    is_flag=True,
    help="Rebuild applied commits that differ from their patch files from the files.",
)
@click.option("--continue", "continue_", is_flag=True, help="Go on after resolving a conflict.")
@click.option("--abort", "abort_", is_flag=True, help="Restore the state before the refresh.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (complete).")
@click.option(
    "--verbose", "-v", is_flag=True, help="List the unchanged patches, and every offset one, too."
)
@click.pass_context
def refresh(
    ctx: click.Context,
    onto: str | None,
    patch_name: str | None,
    drop_merged: bool,
    discard: bool,
    continue_: bool,
    abort_: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Make the patch files match reality after upstream moved, or fold edits into a patch.

    After 'git pull' (series popped, or a merge, or --rebase) or with --onto REV, every patch
    is replayed onto the new base by three-way merge; each gets a verdict: unchanged (file
    keeps its bytes), offset, merged, conflict, or upstream (already in the new base). With no
    move, uncommitted edits in files of the top applied patch (or --patch NAME) are folded
    into it. A conflict stops with markers in the work tree and exit status 1.

    \b
    Example:
      git fetch && patchstack refresh --onto origin/main
      patchstack refresh --continue     # after editing the conflict markers away
      patchstack refresh --abort        # back to exactly the state before
    """
    from ..commands.refresh.resume import abort
    from ..commands.refresh.resume import continue_ as do_continue
    from ..commands.refresh.start import refresh as do_refresh
    from ..errors import PatchstackError

    if sum(map(bool, (continue_, abort_, onto or patch_name or drop_merged or discard))) > 1:
        raise PatchstackError(
            "--continue and --abort take no other option", "see 'patchstack refresh --help'"
        )
    ws = ctx.obj.checkout(while_stopped=continue_ or abort_)
    bar = ws.progress
    try:
        if not abort_:
            bar.step("replaying the series")
        if abort_:
            result = abort(ws)
        elif continue_:
            result = do_continue(ws, bar)
        else:
            result = do_refresh(ws, onto, drop_merged, patch_name, discard, bar)
    finally:
        bar.close()
    if as_json:
        out(json_text(result.to_json()), verbatim=True)
    else:
        _print_refresh(ctx, result, verbose)
    if result.stopped:
        ctx.exit(1)


def _print_refresh(ctx: click.Context, result: RefreshResult, verbose: bool = False) -> None:
    if result.aborted:
        echo(ctx, f"refresh aborted: HEAD {result.head[:12]}, everything as before")
        return
    old = (result.old_base or "?")[:12]
    new = result.new_base[:12] + (f" ({result.new_ref})" if result.new_ref else "")
    if result.old_base != result.new_base:
        echo(ctx, f"base {old} -> {new}")
    if result.fold_into:
        echo(ctx, f"folded {', '.join(result.folded)} into {result.fold_into}")
    shown, more = listed_verdicts(result.verdicts, verbose)
    for v in shown:
        notes = []
        if v.resolved:
            notes.append("resolved")
        if v.verdict == "upstream":
            notes.append(
                "dropped from the series (file kept)"
                if v.dropped
                else "already in the new base; not applied ('--drop-merged' removes it)"
            )
        echo(ctx, f"  {verdict(v)} {v.name}" + (f"  ({'; '.join(notes)})" if notes else ""))
    if more:
        echo(ctx, more)
    if result.stopped:
        for line in render_conflict(result.stopped):
            echo(ctx, line, err=True)
        echo(
            ctx,
            "hint: edit the files to resolve the conflict markers, then run"
            " 'patchstack refresh --continue' (no git add needed),"
            " or 'patchstack refresh --abort' to go back",
            err=True,
        )
        return
    rewritten = sum(v.rewritten for v in result.verdicts)
    echo(
        ctx,
        f"{verdict_counts(result.verdicts)}; rewrote {rewritten} patch file(s);"
        f" applied: {len(result.applied)} patch(es), HEAD {result.head[:12]}",
    )


@cli.command()
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Target (default: @{upstream}, else HEAD).",
)
@click.option(
    "--only", metavar="TAGS", shell_complete=complete_tags, help="Only patches with these tags."
)
@click.option(
    "--except",
    "except_",
    metavar="TAGS",
    shell_complete=complete_tags,
    help="Leave out patches with these tags.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (complete).")
@click.option(
    "--verbose", "-v", is_flag=True, help="List the unchanged patches, and every offset one, too."
)
@click.pass_context
def check(
    ctx: click.Context,
    onto: str | None,
    only: str | None,
    except_: str | None,
    as_json: bool,
    verbose: bool,
) -> None:
    """Dry run: would the series apply on REV? Per-patch verdicts; nothing is touched.

    Exits 1 when any patch conflicts (for a nightly CI job against upstream's main).

    \b
    Example:
      git fetch && patchstack check --onto origin/main --except diagnostic
    """
    from ..commands.check import check as do_check
    from ..model.series import case_clashes

    ws = ctx.obj.checkout(write=False)
    try:
        ws.progress.step("replaying the series")
        result = do_check(ws, onto, selector(None, False, only, except_), ws.progress)
    finally:
        ws.progress.close()
    series = ws.load_series()
    warnings = [
        f"{series.path}:{b.lineno}: '{b.name}' and '{a.name}' (line {a.lineno}) differ only by"
        " case: one file on macOS and Windows, so the series is not portable there"
        for a, b in case_clashes(series)
    ]
    if as_json:
        out(json_text({**result.to_json(), "warnings": warnings}), verbatim=True)
    else:
        for warning in warnings:
            echo(ctx, f"patchstack: warning: {warning}", err=True)
        echo(ctx, f"check against {result.target_name} ({result.target[:12]}):")
        shown, more = listed_verdicts(result.verdicts, verbose)
        for v in shown:
            echo(ctx, f"  {verdict(v)} {v.name}")
        if more:
            echo(ctx, more)
        for c in result.conflicts:
            for line in render_conflict(c):
                echo(ctx, line)
        counts = verdict_counts(result.verdicts)
        n = len(result.conflicts)
        echo(ctx, f"{counts}: " + ("all patches apply" if result.ok else f"{n} conflict(s)"))
    if not result.ok:
        ctx.exit(1)
