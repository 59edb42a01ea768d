"""refresh and check."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .app import cli
from .conflicttext import (
    REPORT_FLOOR,
    STOP_BUDGET,
    conflict_summary,
    evidence_note,
    recorded_note,
    render_conflict,
    tracer,
)
from .output import (
    CONFLICTING,
    complete_patch_names,
    complete_revisions,
    complete_tags,
    echo,
    json_text,
    listed_verdicts,
    out,
    selector,
    verdict,
    verdict_counts,
)
from .probing import missing_status, probe_options, run_probes
from .refreshtext import print_refresh
from .resolvertext import resolver_options, resolver_setting
from .steptext import print_steps, stepped_refresh, steps_json, steps_option

if TYPE_CHECKING:
    pass

# -- refresh / check --------------------------------------------------------------------------


@cli.command()
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Replay the series onto REV (e.g. origin/main); a branch REV is then the one the"
    " series tracks (status and check compare with it).",
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
@click.option(
    "--continue",
    "continue_",
    is_flag=True,
    help="Go on after resolving a conflict: takes every tracked file changed since the stop"
    " (no git add needed) into the patch and its recorded resolution; refuses a new"
    " untracked file (a merge tool's *.orig?) until it is git add-ed or removed.",
)
@click.option(
    "--skip",
    "skip_",
    is_flag=True,
    help="Leave the conflicting patch out, deferred (its file untouched), and go on.",
)
@click.option(
    "--defer-conflicts",
    is_flag=True,
    help="Defer every conflicting patch instead of stopping (for CI and bots).",
)
@click.option("--abort", "abort_", is_flag=True, help="Restore the state before the refresh.")
@steps_option
@resolver_options
@click.option(
    "--probes",
    is_flag=True,
    help="After the replay, run each patch's probe on the new base with and without it"
    " (exit 1 when one is ineffective or broken); during it, take a relocation of code"
    " upstream moved when the patch's probe proves it.",
)
@click.option(
    "--publish",
    type=click.Choice(["ff"]),
    help="ff: end with a merge of the tip before the refresh whose tree is the refreshed fork,"
    " so consumers follow with 'git pull --ff-only'.",
)
@probe_options
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
    skip_: bool,
    defer_conflicts: bool,
    abort_: bool,
    steps_mode: str | None,
    resolver: str | None,
    resolver_timeout: float | None,
    probes: bool,
    publish: str | None,
    jobs: int | None,
    probe_timeout: float,
    as_json: bool,
    verbose: bool,
) -> None:
    """Make the patch files match reality after upstream moved, or fold edits into a patch.

    After 'git pull' (series popped, or a merge, or --rebase) or with --onto REV, every patch
    is replayed onto the new base by three-way merge (without --onto the new base is HEAD's:
    where HEAD did not move and the series' upstream did, it says so); each gets a verdict:
    unchanged (file keeps its bytes), offset, merged, conflict, or upstream (already in the
    new base). With no move, uncommitted edits in files of the top applied patch (or --patch
    NAME) are folded into it. A conflict stops with markers in the work tree and exit status
    1; a conflict that only exists because an earlier deferred patch is missing (a knock-on)
    is deferred with it. --skip leaves the conflicting patch out, deferred: it stays in the
    series with its file as it was, and 'patchstack push NAME' brings it back later.

    \b
    Example:
      git fetch && patchstack refresh --onto origin/main
      patchstack refresh --continue     # after editing the conflict markers away
      patchstack refresh --skip         # leave this patch out for now (deferred)
      patchstack refresh --abort        # back to exactly the state before
      patchstack refresh --onto origin/main --defer-conflicts   # CI: defer them all
      patchstack refresh --onto origin/main --probes   # then: does each patch still work?
      patchstack refresh --onto origin/main --steps    # a big drift: one culprit at a time
      patchstack refresh --onto origin/main --resolver 'python3 ~/bin/resolve.py'
    """
    from ..commands.refresh import stepped
    from ..commands.refresh.resume import abort, skip
    from ..commands.refresh.resume import continue_ as do_continue
    from ..commands.refresh.start import refresh as do_refresh
    from ..errors import PatchstackError

    starting = bool(onto or patch_name or drop_merged or discard or defer_conflicts or steps_mode)
    starting = starting or resolver is not None or resolver_timeout is not None or bool(publish)
    if steps_mode is not None and (patch_name or discard or publish):
        raise PatchstackError(
            "--steps takes no --patch, --discard-changes or --publish",
            "see 'patchstack refresh --help'",
        )
    if sum(map(bool, (continue_, skip_, abort_, starting))) > 1:
        raise PatchstackError(
            "--continue, --skip and --abort take no other option",
            "see 'patchstack refresh --help'",
        )
    ws = ctx.obj.checkout(while_stopped=continue_ or abort_ or skip_)
    ws.printed = tracer(verbose or as_json)
    bar = ws.progress
    try:
        if not abort_:
            bar.step("replaying the series")
        how = "abort" if abort_ else "continue" if continue_ else "skip" if skip_ else "start"
        stepping = how == "start" and steps_mode is not None
        setting = resolver_setting(ws, resolver, resolver_timeout) if stepping else None
        runs = (
            stepped_refresh(ws, how, steps_mode, onto, drop_merged, defer_conflicts, bar, setting)
            if stepped(ws, how, steps_mode)
            else None
        )
        if runs is not None:
            result = runs.last
        elif abort_:
            result = abort(ws)
        elif continue_:
            result = do_continue(ws, bar)
        elif skip_:
            result = skip(ws, bar)
        else:
            setting = resolver_setting(ws, resolver, resolver_timeout)
            result = do_refresh(
                ws,
                onto,
                drop_merged,
                patch_name,
                discard,
                bar,
                defer_conflicts,
                setting,
                publish,
                probe_timeout if probes else None,
            )
    finally:
        bar.close()
    report = None
    if probes and not result.stopped and not result.aborted:
        from ..model.selection import Selector

        left_out = {v.name: "deferred" for v in result.verdicts if v.verdict in CONFLICTING}
        every = Selector(None, True, None, None)
        report = run_probes(ws, result.new_base, every, left_out, jobs, probe_timeout)
    if as_json:
        data = result.to_json()
        if report is not None:
            data["probes"] = report.to_json()
        if runs is not None:
            data["steps"] = steps_json(runs)
        out(json_text(data), verbatim=True)
    elif runs is not None:
        print_steps(ctx, runs, verbose)
    else:
        print_refresh(ctx, result, verbose)
        if report is not None:
            from .probetext import probe_lines

            for line in probe_lines(report, verbose):
                echo(ctx, line)
    if result.stopped or (report is not None and not report.ok):
        ctx.exit(1)


@cli.command()
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Target (default: the branch the series tracks, its '# base:' line's, else"
    " @{upstream}, else HEAD).",
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
@click.option(
    "--probes",
    is_flag=True,
    help="Also run each patch's probe with and without the patch: fail when one is"
    " ineffective or broken.",
)
@probe_options
@click.option(
    "--require-status",
    is_flag=True,
    help="Fail when a patch has no upstream status (see 'patchstack upstream').",
)
@click.option(
    "--patch",
    "patch_name",
    metavar="NAME",
    shell_complete=complete_patch_names,
    help="Show this patch's whole conflict report (each hunk's lines traced upstream).",
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
    probes: bool,
    jobs: int | None,
    probe_timeout: float,
    require_status: bool,
    patch_name: str | None,
    as_json: bool,
    verbose: bool,
) -> None:
    """Dry run: would the series apply on REV? Per-patch verdicts; nothing is touched.

    Without --onto, REV is the series' upstream: the branch its '# base: ID REF' line names
    (where it exists and is not the branch HEAD is on), else @{upstream}, else HEAD below the
    applied patches (and it says so).

    Exits 1 when any patch conflicts (for a nightly CI job against upstream's main). With
    --probes, each selected patch's probe runs in scratch trees of REV plus the selection,
    with and without the patch: 'effective' when it passes with and fails without it;
    'ineffective' (it passes without: upstream absorbed the patch, or it no longer matters)
    and 'broken' (it fails with it) fail the check, with the commits and trees to reproduce
    the runs (written into the repository for that). Runs are cached by (tree, probe). With
    --require-status, a patch with no upstream status fails it too.

    \b
    Example:
      git fetch && patchstack check --onto origin/main --except diagnostic
      patchstack check --onto origin/main --probes --only essential
    """
    from ..commands.check import check as do_check
    from ..model.series import case_clashes

    ws = ctx.obj.checkout(write=False)
    ws.printed = tracer(verbose or as_json)  # the short output traces what it prints
    sel = selector(None, False, only, except_)
    series = ws.load_series()
    wanted: tuple[str, ...] | bool = verbose
    if patch_name:
        from ..model.selection import resolve_name

        wanted = (resolve_name(series, patch_name),)
    try:
        ws.progress.step("replaying the series")
        result = do_check(ws, onto, sel, ws.progress, full=wanted)
    finally:
        ws.progress.close()
    warnings = [
        f"{series.path}:{b.lineno}: '{b.name}' and '{a.name}' (line {a.lineno}) differ only by"
        " case: one file on macOS and Windows, so the series is not portable there"
        for a, b in case_clashes(series)
    ] + ([result.no_upstream] if result.no_upstream else [])
    report = None
    if probes:
        left_out = {
            v.name: f"does not apply on {result.target_name}"
            for v in result.verdicts
            if v.verdict in CONFLICTING
        }
        report = run_probes(ws, result.target, sel, left_out, jobs, probe_timeout)
    missing = missing_status(ws, sel) if require_status else None
    failed = not result.ok or (report is not None and not report.ok) or bool(missing)
    if as_json:
        extra: dict[str, object] = {"warnings": warnings}
        if report is not None:
            extra["probes"] = report.to_json()
        if missing is not None:
            extra["without_status"] = [s.name for s in missing]
        out(json_text({**result.to_json(), **extra, "ok": not failed}), verbatim=True)
    else:
        for warning in warnings:
            echo(ctx, f"patchstack: warning: {warning}", err=True)
        # With --patch NAME the screen is that patch's: its line, one line counting the
        # conflicts, then its report in what is left of the stop's budget.
        named = wanted if isinstance(wanted, tuple) else ()
        one = bool(named) and not verbose
        top = [f"check against {result.target_name} ({result.target[:12]}):"]
        shown, more = listed_verdicts(result.verdicts, verbose, summarized=True)
        for v in shown:
            if one and v.name not in named:
                continue
            notes = [recorded_note(v.reused_hunks, verbose)] if v.recorded else []
            notes += [evidence_note(v, verbose)] if v.evidence or v.note else []
            top.append(f"  {verdict(v)} {v.name}" + (f"  ({'; '.join(notes)})" if notes else ""))
        if more and not one:
            top.append(more)
        summary = conflict_summary(result.conflicts, verbose)
        if one and summary:
            summary = [summary[0] + " ('patchstack check' lists each)"]
        elif result.conflicts and not verbose:
            summary.append(
                "  ('patchstack check --patch NAME' shows one patch's whole report;"
                " --verbose, every report)"
            )
        reports: list[str] = []
        for c in (*result.conflicts, *result.deferred):
            if verbose or c.patch in named:
                if c in result.deferred:
                    reports.append(f"deferred {c.patch}: its conflict on {result.target_name} now")
                left = max(REPORT_FLOOR, STOP_BUDGET - len(top) - len(summary) - 1)
                reports += render_conflict(c, full=verbose, budget=left)
        for line in (*top, *summary, *reports) if one else (*top, *reports, *summary):
            echo(ctx, line)
        counts = verdict_counts(result.verdicts)
        n = len(result.conflicts)
        deferred = sum(1 for v in result.verdicts if v.verdict == "deferred")
        end = f"{n} conflict(s)" if not result.ok else "all patches apply"
        if result.ok and deferred:
            end = "the others apply ('check --patch NAME' shows a deferred one's conflict now)"
        if not result.ok and n == sum(1 for v in result.verdicts if v.verdict == "conflict"):
            end = ""  # (the counts say it; "60 conflict" was followed by ": 60 conflict(s)")
        echo(ctx, f"{counts}: {end}" if end else counts)
        from .probetext import missing_status_lines, probe_lines

        for line in probe_lines(report, verbose) if report is not None else []:
            echo(ctx, line)
        for line in missing_status_lines(missing) if missing is not None else []:
            echo(ctx, line)
    if failed:
        ctx.exit(1)
