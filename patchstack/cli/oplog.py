"""The operation log: log, undo, redo."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from .app import cli
from .output import complete_patch_names, echo, json_text, out, page

if TYPE_CHECKING:
    from ..checkout import Checkout
    from ..commands.undo import RestoreResult
    from ..journal.oplog import Entry

# -- the operation log ---------------------------------------------------------------------


@cli.command("log")
@click.argument("name", required=False, shell_complete=complete_patch_names)
@click.option(
    "-n",
    "limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many entries to show.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def log_cmd(ctx: click.Context, name: str | None, limit: int, as_json: bool) -> None:
    """The operation log: every command that changed state, newest first; with NAME, the
    history of one patch (the commands that changed its file, its series line or whether it
    is applied, and what they changed).

    Each entry records the state before and after (branch, HEAD, applied patches, the series
    files, uncommitted edits and untracked files), kept under refs/patchstack/ so that
    'git gc' keeps it. 'undo' and 'redo' walk it.

    \b
    Example:
      patchstack log -n 5
      patchstack log oea-routing
    """
    from ..journal import oplog as journal

    ws = ctx.obj.checkout(write=False)
    if name is not None:
        _patch_log(ctx, ws, name, limit, as_json)
        return
    full = journal.entries(ws.git)
    shown = full[:limit]
    live = {e.seq for e in journal.effective(full)}
    page(ctx)
    if as_json:
        out(json_text([_entry_json(e, e.seq in live) for e in shown]), verbatim=True)
        return
    if not shown:
        echo(ctx, "the operation log is empty")
    for e in shown:
        echo(ctx, _entry_line(e, e.seq in live))


def _patch_log(ctx: click.Context, ws: Checkout, name: str, limit: int, as_json: bool) -> None:
    import time

    from ..commands.history import history
    from ..journal.oplog import one_line

    found, events = history(ws, name)
    shown = events[:limit]
    page(ctx)
    if as_json:
        doc = {"patch": found, "history": [e.to_json() for e in shown]}
        out(json_text(doc), verbatim=True)
        return
    if not shown:
        echo(ctx, f"the operation log holds no change of {found}")
    for e in shown:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
        state = "" if e.live else "  [undone]"
        echo(ctx, f"#{e.seq:<4} {when}  {one_line(e.command)}{state}")
        for change in e.changes:
            echo(ctx, f"      {change}")


def _entry_state(e: Entry, live: bool) -> str:
    if e.status == "running":
        return "interrupted (run 'patchstack undo')"
    if e.status != "done":
        return e.status
    if e.kind == "undo":
        return "undoes " + ", ".join(f"#{s}" for s in e.undoes)
    if e.kind == "redo":
        return f"redoes #{e.redoes}"
    if e.after is not None and e.after.refresh:  # it left a refresh stopped at a conflict
        return "stopped at a conflict" if live else "stopped, undone"
    return "done" if live else "undone"


def _entry_line(e: Entry, live: bool) -> str:
    import time

    from ..journal.oplog import one_line

    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
    line = f"#{e.seq:<4} {when}  {one_line(e.command)}  [{_entry_state(e, live)}]"
    after = e.after
    if after is not None:
        b = e.before
        if b.head != after.head:
            line += f"\n      HEAD {b.head[:12]} -> {after.head[:12]}"
        if b.stack != after.stack:
            line += f"\n      applied {len(b.stack)} -> {len(after.stack)}"
            gone = [n for n in b.stack if n not in after.stack]
            came = [n for n in after.stack if n not in b.stack]
            if came:
                line += " +" + " +".join(came[:5]) + (" ..." if len(came) > 5 else "")
            if gone:
                line += " -" + " -".join(gone[:5]) + (" ..." if len(gone) > 5 else "")
    for c in e.trees:
        rel = os.path.relpath(c.path)
        shown = c.path if rel.startswith("../..") else rel
        if c.after is None:
            line += f"\n      worktree {shown} removed"
        elif c.before is None:
            line += f"\n      worktree {shown} made (HEAD {c.after.head[:12]})"
        else:
            line += f"\n      worktree {shown} made again (HEAD {c.after.head[:12]})"
    return line


def _entry_json(e: Entry, live: bool) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "command": e.command,
        "kind": e.kind,
        "status": e.status,
        "state": _entry_state(e, live),
        "time": e.time,
        "entry": e.oid,
        "before": e.before.to_json(),
        "after": e.after.to_json() if e.after else None,
        "trees": [c.to_json() for c in e.trees],
    }


def _print_restore(ctx: click.Context, verb: str, result: RestoreResult) -> None:
    if result.refused:
        echo(
            ctx,
            f"'{result.refused}' was refused and changed nothing (nothing of it to undo);"
            " undoing the command before it:",
        )
    for e in result.undone:
        echo(ctx, f"{verb} #{e.seq} {e.command}")
    before, target = result.before, result.target
    if before.head != target.head:
        echo(ctx, f"HEAD {before.head[:12]} -> {target.head[:12]}")
    for c in result.trees:
        rel = os.path.relpath(c.path)
        shown = c.path if rel.startswith("../..") else rel
        if c.after is None:
            echo(ctx, f"removed the worktree {shown}")
        else:
            echo(ctx, f"made the worktree {shown} again (HEAD {c.after.head[:12]})")
    echo(ctx, f"now applied: {len(target.stack)} patch(es); {len(result.files)} file(s) restored")


@cli.command()
@click.argument("steps", type=click.IntRange(min=1), default=1, required=False)
@click.option(
    "--force",
    is_flag=True,
    help="Restore even over commits or edits made since (they stay in the log).",
)
@click.pass_context
def undo(ctx: click.Context, steps: int, force: bool) -> None:
    """Restore the state before the last command (STEPS: before the last STEPS commands).

    Restores HEAD, the applied patches, the series files, the index, and the uncommitted
    edits and untracked files exactly. Refuses, naming them, when commits or edits were made
    since, unless --force; what a restore replaces stays in the log ('redo' brings it back).
    After an interrupted command, 'undo' restores the state before it.

    \b
    Example:
      patchstack undo
      patchstack undo 3
    """
    from ..commands.undo import undo as do_undo

    _print_restore(ctx, "undid", do_undo(ctx.obj.checkout(while_stopped=True), steps, force))


@cli.command()
@click.option("--force", is_flag=True, help="Redo even over commits or edits made since.")
@click.pass_context
def redo(ctx: click.Context, force: bool) -> None:
    """Revert the last undo (repeat to revert earlier undos).

    \b
    Example:
      patchstack redo
    """
    from ..commands.undo import redo as do_redo

    _print_restore(ctx, "redid", do_redo(ctx.obj.checkout(while_stopped=True), force))
