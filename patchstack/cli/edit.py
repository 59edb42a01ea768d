"""Editing the series: new, edit, rename, tag, delete (drop), move, fold, split."""

from __future__ import annotations

import sys

import click

from .app import Options, cli
from .output import complete_patch_names, complete_revisions, complete_tags, echo, out

DISCARD_HELP = (
    "Drop what applied commits changed beyond their patch files (amend, rebase -i) instead of"
    " refusing."
)


def answers() -> bytes | None:
    """Scripted answers for git's hunk selector: standard input when it is not a terminal."""
    if sys.stdin.isatty():
        return None
    return sys.stdin.buffer.read()


# -- new ------------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@click.argument("paths", nargs=-1, metavar="[PATH]...", type=click.Path())
@click.option(
    "--tag",
    "-t",
    shell_complete=complete_tags,
    required=True,
    metavar="TAG[,LABEL...]",
    help="essential, diagnostic or optimization; free labels may follow.",
)
@click.option("-m", "--message", help="Subject (first line) and description of the patch.")
@click.option(
    "-p", "--interactive", is_flag=True, help="Choose the hunks to capture in git's selector."
)
@click.option(
    "--from-commit",
    "rev",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Turn REV, a commit made on top of the applied patches, into the patch.",
)
@click.pass_obj
def new(
    opts: Options,
    name: str,
    paths: tuple[str, ...],
    tag: str,
    message: str | None,
    interactive: bool,
    rev: str | None,
) -> None:
    """Capture uncommitted edits (all, or those PATHs) as a new patch on top.

    The new patch goes right after the topmost applied patch in the series, and is applied
    as a commit. Edits outside PATHs stay uncommitted and untouched. New (untracked) files are
    captured only when named as PATHs. With -p, git's hunk selector ('git add -p') chooses
    the hunks to capture, so one file's edits can go to different patches; scripted answers
    can come on standard input. With --from-commit, a commit made by hand on top of the
    applied patches becomes the patch, at its place (its tree, author and date kept).

    \b
    Example:
      patchstack new kimi-k25-eagle3 --tag essential -m "Delegate EAGLE-3 hooks" models/kimi_k25.py
      patchstack new nccl-logging --tag diagnostic -p srt/managers/scheduler.py
      patchstack new hotfix --tag essential --from-commit HEAD
    """
    from ..commands.new import new as do_new

    ws = opts.checkout()
    if rev is not None:
        from ..commands.refresh.adopt import adopt

        if paths or interactive:
            raise click.UsageError("--from-commit takes no PATH and no -p")
        result = adopt(ws, name, tag, rev, message)
        out(f"new patch {result.name} [{result.tag}] from {rev}: commit {result.commit[:12]}")
        return
    scripted = answers() if interactive else None
    if interactive and scripted is None:
        out(f"answer 'y' for each hunk that goes into {name}, 'n' for each that stays", err=True)
    result = do_new(ws, name, tag, message, paths, interactive, scripted)
    if result.selector_output:
        out(result.selector_output.rstrip("\n"))
    out(
        f"new patch {result.name} [{result.tag}]: {len(result.paths)} file(s),"
        f" commit {result.commit[:12]}"
    )
    if result.base_moved_to:
        out(f"the series base is now {result.base_moved_to[:12]} (HEAD below the patch)")
    if result.untracked_left:
        out(
            "untracked files left out (name them to capture): "
            + ", ".join(result.untracked_left[:10]),
            err=True,
        )


# -- edit, rename, tag ---------------------------------------------------------------------------


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.option("-m", "--message", help="The new subject (first line) and description.")
@click.option("--author", metavar="'NAME <EMAIL>'", help="The new author.")
@click.pass_obj
def edit(opts: Options, name: str, message: str | None, author: str | None) -> None:
    """Change a patch's subject and description (and author), applied or not.

    Without -m the message opens in git's editor (GIT_EDITOR, core.editor, VISUAL, EDITOR);
    lines starting with '#' are dropped and an empty message aborts. The diff keeps its bytes
    and an applied patch keeps its tree; its commit gets the new message.

    \b
    Example:
      patchstack edit oea-routing -m "Opportunistic expert activation"
      patchstack edit nccl-logging --author "Ada Lovelace <ada@example.org>"
    """
    from ..commands.edit import ask_message
    from ..commands.edit import edit as do_edit

    ws = opts.checkout()
    if message is None and author is None:
        message = ask_message(ws, name)
    result = do_edit(ws, name, message, author)
    if not result.changed:
        out(f"{result.name}: unchanged")
        return
    where = " (applied: commits rewritten, same trees)" if result.applied else ""
    out(f"edited {result.name}: {result.subject}{where}")


@cli.command()
@click.argument("old", shell_complete=complete_patch_names)
@click.argument("new")
@click.pass_obj
def rename(opts: Options, old: str, new: str) -> None:
    """Rename a patch: its file, its series line and, applied, its commit's trailer.

    \b
    Example:
      patchstack rename nccl-logging nccl-diagnostic-logging
    """
    from ..commands.rename import rename as do_rename

    result = do_rename(opts.checkout(), old, new)
    where = " (applied: commits rewritten, same trees)" if result.applied else ""
    out(f"renamed {result.old} to {result.new}{where}")


@cli.command("tag")
@click.argument("name", shell_complete=complete_patch_names)
@click.argument("tag", required=False, metavar="[TAG[,LABEL...]]", shell_complete=complete_tags)
@click.option("--add-label", "add", multiple=True, metavar="LABEL", help="Add a label.")
@click.option("--remove-label", "remove", multiple=True, metavar="LABEL", help="Remove a label.")
@click.pass_obj
def tag_cmd(
    opts: Options, name: str, tag: str | None, add: tuple[str, ...], remove: tuple[str, ...]
) -> None:
    """Set a patch's tag (and labels), or add and remove labels.

    Applied, its commit's Patchstack-Tag trailer follows, with the very same tree. Given the
    tag the series already has, it makes the applied commit agree with the series.

    \b
    Example:
      patchstack tag oea-routing optimization,moe
      patchstack tag oea-routing --add-label nvidia --remove-label moe
    """
    from ..commands.retag import retag

    result = retag(opts.checkout(), name, tag, add, remove)
    shown = ", ".join((result.tag, *result.labels))
    note = " (applied commit rewritten, same tree)" if result.commits_rewritten else ""
    out(f"{result.name}: [{shown}]{note}")


# -- delete, move, fold, split ---------------------------------------------------------------


def _rewritten(ctx: click.Context, names: tuple[str, ...]) -> None:
    if names:
        echo(ctx, "rewritten (their change moved): " + ", ".join(names))


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
    _rewritten(ctx, result.rewritten)


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
    _rewritten(ctx, result.rewritten)


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
    _rewritten(ctx, tuple(n for n in result.rewritten if n != result.target))


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
