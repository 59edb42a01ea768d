"""Moving changes between patches: delete (drop), move, fold, split."""

from __future__ import annotations

import click

from .app import cli
from .edit import DISCARD_HELP, answers, rewritten_line
from .output import complete_patch_names, complete_tags, echo, out


@cli.command()
@click.argument("names", nargs=-1, required=True, shell_complete=complete_patch_names)
@click.option("--keep-file", is_flag=True, help="Keep the patch files; only the series forgets.")
@click.option("--discard-changes", "discard", is_flag=True, help=DISCARD_HELP)
@click.pass_context
def delete(ctx: click.Context, names: tuple[str, ...], keep_file: bool, discard: bool) -> None:
    """Delete patches: out of the stack when applied, out of the series, and their files.

    Applied patches are taken out as 'pop --only' does; the patches above them are carried
    by three-way merge. A patch that cannot do without a deleted one stops the command before
    anything changes.

    \b
    Example:
      patchstack delete nccl-diagnostic-logging
      patchstack drop old-experiment --keep-file
    """
    from ..commands.delete import delete as do_delete

    result = do_delete(ctx.obj.checkout(), names, keep_file, discard)
    for name in result.deleted:
        note = " (popped)" if name in result.popped else ""
        note += " (file kept)" if result.kept_files else ""
        echo(ctx, f"deleted {name}{note}")
    rewritten_line(ctx, result.rewritten)


cli.add_command(delete, "drop")


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.option("--before", metavar="X", shell_complete=complete_patch_names, help="Right before X.")
@click.option("--after", metavar="X", shell_complete=complete_patch_names, help="Right after X.")
@click.option("--top", is_flag=True, help="Last in the series.")
@click.option("--bottom", is_flag=True, help="First in the series.")
@click.option("--discard-changes", "discard", is_flag=True, help=DISCARD_HELP)
@click.pass_context
def move(
    ctx: click.Context,
    name: str,
    before: str | None,
    after: str | None,
    top: bool,
    bottom: bool,
    discard: bool,
) -> None:
    """Move a patch to another place in the series, applied or not.

    Applied patches are rebuilt in the new order with the same three-way placement as push;
    when the new order cannot be built (two patches change the same lines), nothing changes
    and the conflict report names both. A move that commutes keeps every tree and file.

    \b
    Example:
      patchstack move nccl-diagnostic-logging --after communicator-sm120
      patchstack move oea-routing --bottom
    """
    from ..commands.move import move as do_move

    result = do_move(ctx.obj.checkout(), name, before, after, top, bottom, discard)
    if not result.moved:
        echo(ctx, f"{result.name} is already there")
        return
    pos = result.after.index(result.name)
    where = f"after {result.after[pos - 1]}" if pos else "first in the series"
    echo(ctx, f"moved {result.name} {where}")
    rewritten_line(ctx, result.rewritten)


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.option(
    "--into",
    "target",
    required=True,
    metavar="TARGET",
    shell_complete=complete_patch_names,
    help="The patch that takes NAME's change (its name, tag and place stay).",
)
@click.option("--discard-changes", "discard", is_flag=True, help=DISCARD_HELP)
@click.pass_context
def fold(ctx: click.Context, name: str, target: str, discard: bool) -> None:
    """Fold patch NAME into TARGET: one patch from two, with TARGET's name, tag and place.

    TARGET's description is kept and what NAME's message adds is joined to it. Both must be
    applied, or both unapplied; the tree does not change.

    \b
    Example:
      patchstack fold nccl-env-fixup --into nccl-env-propagation
    """
    from ..commands.fold import fold as do_fold

    result = do_fold(ctx.obj.checkout(), name, target, discard)
    echo(ctx, f"folded {result.name} into {result.target}")
    rewritten_line(ctx, tuple(n for n in result.rewritten if n != result.target))


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.argument("paths", nargs=-1, metavar="[PATH]...", type=click.Path())
@click.option("--as", "new", required=True, metavar="NEW", help="The new patch's name.")
@click.option(
    "--tag",
    "-t",
    required=True,
    shell_complete=complete_tags,
    metavar="TAG[,LABEL...]",
    help="The new patch's tag (and labels).",
)
@click.option("-i", "--interactive", is_flag=True, help="Choose hunks in git's selector.")
@click.option("-m", "--message", help="The new patch's message (default: NAME's).")
@click.option("--discard-changes", "discard", is_flag=True, help=DISCARD_HELP)
@click.pass_context
def split(
    ctx: click.Context,
    name: str,
    paths: tuple[str, ...],
    new: str,
    tag: str,
    interactive: bool,
    message: str | None,
    discard: bool,
) -> None:
    """Move files (PATHs), or hunks chosen interactively, of NAME into a new patch NEW
    placed right after it.

    With --interactive, git's hunk selector shows NAME's hunks (of PATHs, when given):
    answer 'y' for each hunk that moves to NEW ("Apply this hunk to index" is git's wording),
    'n' for each that stays in NAME. Scripted answers can come on standard input.
    The tree at the top of the stack does not change.

    \b
    Example:
      patchstack split kimi-k25 --as kimi-k25-logging --tag diagnostic srt/log.py
      printf 'n\\ny\\n' | patchstack split oea-routing --as oea-stats --tag diagnostic -i
    """
    from ..commands.split import split as do_split

    ws = ctx.obj.checkout()
    scripted = answers() if interactive else None
    if interactive and scripted is None:
        out(
            f"answer 'y' for each hunk of {name} that moves to {new}, 'n' for each that stays",
            err=True,
        )
    result = do_split(ws, name, new, tag, paths, interactive, message, scripted, discard)
    if result.selector_output:
        out(result.selector_output.rstrip("\n"))
    tags = ", ".join((result.tag, *result.labels))
    echo(ctx, f"split {result.new} [{tags}] off {result.name}: {', '.join(result.moved)}")
