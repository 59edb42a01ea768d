"""resolutions: the recorded conflict resolutions of the series, listed and forgotten."""

from __future__ import annotations

import click

from .app import cli
from .output import complete_patch_names, echo, json_text, out


@cli.command()
@click.argument("name", required=False, shell_complete=complete_patch_names)
@click.option("--forget", is_flag=True, help="Remove them (all, or NAME's).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def resolutions(ctx: click.Context, name: str | None, forget: bool, as_json: bool) -> None:
    """List the recorded conflict resolutions (of NAME only, when given), or --forget them.

    'refresh --continue' records how each conflict hunk was resolved, keyed by the hunk as
    git's rerere keys it (its two sides, sorted, and its base), so that refresh, check, push,
    worktree --onto and bisect settle the same hunk again wherever upstream changed the file
    elsewhere ("recorded resolution reused for hunk FILE:LINE"). When the resolution also
    changed text outside the hunks, or other files, each file is recorded whole instead,
    keyed by the exact three versions the merge saw, and settles only those versions. The
    records are files of the series folder (resolutions/), to commit with the series,
    checked when read (a bad one is refused, named); undo does not remove them.

    \b
    Example:
      patchstack resolutions
      patchstack resolutions nccl-diagnostic-logging --forget
    """
    from ..commands.refresh.hunks import HunkRecord
    from ..commands.refresh.resolutions import Resolutions
    from ..commands.state import follow_renames, read_stack
    from ..model.selection import resolve_name

    ws = ctx.obj.checkout(write=forget)
    records = Resolutions(ws)
    series = ws.load_series()
    patch = resolve_name(series, name) if name else None
    # Records a teammate's rename left under the old name (merged with the series) are its.
    renamed = follow_renames(ws, series, read_stack(ws.git)).renamed if patch else ()
    names = {patch, *(was for was, now in renamed if now == patch)}
    if forget:
        gone = []
        for each in sorted(n for n in names if n) if patch else [None]:
            gone += records.forget(each)
        echo(ctx, f"forgot {len(gone)} recorded resolution(s)")
        return
    found = [r for r in records.all().values() if patch is None or r.patch in names]
    if as_json:
        rows = [
            {"key": r.key, "patch": r.patch, "path": r.path, "recorded": r.recorded, "by": r.by}
            for r in found
        ]
        out(json_text({"resolutions": rows}), verbatim=True)
        return
    if not found:
        echo(ctx, "no recorded resolutions")
        return
    for r in sorted(found, key=lambda r: (r.patch, r.path, getattr(r, "line", 0))):
        hunk = f", hunk at line {r.line}" if isinstance(r, HunkRecord) else ""
        by = f", machine-made: resolved by {r.by}" if r.by else ""
        echo(ctx, f"  {r.patch}  {r.path}  recorded {r.recorded}  ({r.key[:12]}{hunk}{by})")
    echo(ctx, f"{len(found)} recorded resolution(s) in {ws.display(records.folder)}")
