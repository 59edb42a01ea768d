"""Editing the series, patch by patch: new, edit, upstream, rename, tag (`reorder`: the commands
that move changes)."""

from __future__ import annotations

import sys

import click

from .app import Options, cli
from .output import complete_patch_names, complete_revisions, complete_tags, echo, out, selector

PROBE_HELP = (
    "A command (run by sh at the top of the tree) that passes with the patch and fails"
    " without it; kept in the patch file's header ('Patchstack-Probe:')."
)
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
@click.option("--probe", metavar="CMD", help=PROBE_HELP)
@click.pass_obj
def new(
    opts: Options,
    name: str,
    paths: tuple[str, ...],
    tag: str,
    message: str | None,
    interactive: bool,
    rev: str | None,
    probe: str | None,
) -> None:
    """Capture uncommitted edits (all, or those PATHs) as a new patch on top.

    The new patch goes right after the topmost applied patch in the series, and is applied
    as a commit. Edits outside PATHs stay uncommitted and untouched. New (untracked) files are
    captured only when named as PATHs. With -p, git's hunk selector ('git add -p') chooses
    the hunks to capture, so one file's edits can go to different patches; scripted answers
    can come on standard input. With --from-commit, a commit made by hand on top of the
    applied patches becomes the patch, at its place (its tree, author and date kept). With
    --probe, the patch carries a command that passes with it and fails without it
    ('patchstack check --probes' runs it).

    \b
    Example:
      patchstack new kimi-k25-eagle3 --tag essential -m "Delegate EAGLE-3 hooks" models/kimi_k25.py
      patchstack new nccl-logging --tag diagnostic -p srt/managers/scheduler.py
      patchstack new hotfix --tag essential --from-commit HEAD
      patchstack new sm120 --tag essential --probe 'python3 -m pytest tests/test_sm120.py'
    """
    from ..commands.new import new as do_new

    ws = opts.checkout()
    if rev is not None:
        from ..commands.refresh.adopt import adopt

        if paths or interactive or probe is not None:
            raise click.UsageError(
                "--from-commit takes no PATH, no -p and no --probe (add it with"
                " 'patchstack edit NAME --probe CMD')"
            )
        result = adopt(ws, name, tag, rev, message)
        out(f"new patch {result.name} [{result.tag}] from {rev}: commit {result.commit[:12]}")
        return
    scripted = answers() if interactive else None
    if interactive and scripted is None:
        out(f"answer 'y' for each hunk that goes into {name}, 'n' for each that stays", err=True)
    result = do_new(ws, name, tag, message, paths, interactive, scripted, probe)
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
@click.option("--probe", metavar="CMD", help=PROBE_HELP + " '' removes it.")
@click.pass_obj
def edit(
    opts: Options, name: str, message: str | None, author: str | None, probe: str | None
) -> None:
    """Change a patch's subject and description (and author, and probe), applied or not.

    Without -m (and --author, --probe) the message opens in git's editor (GIT_EDITOR,
    core.editor, VISUAL, EDITOR); lines starting with '#' are dropped and an empty message
    aborts. -m keeps the patch's fields (its probe, its upstream status). The diff keeps its
    bytes and an applied patch keeps its tree; its commit gets the new message.

    \b
    Example:
      patchstack edit oea-routing -m "Opportunistic expert activation"
      patchstack edit nccl-logging --author "Ada Lovelace <ada@example.org>"
      patchstack edit communicator-sm120 --probe 'python3 -m pytest -q tests/test_sm120.py'
    """
    from ..commands.edit import ask_message
    from ..commands.edit import edit as do_edit

    ws = opts.checkout()
    keep = message is not None
    if message is None and author is None and probe is None:
        message = ask_message(ws, name)
    result = do_edit(ws, name, message, author, probe, keep_fields=keep)
    if not result.changed:
        out(f"{result.name}: unchanged")
        return
    where = " (applied: commits rewritten, same trees)" if result.applied else ""
    out(f"edited {result.name}: {result.subject}{where}")


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.argument(
    "state",
    type=click.Choice(["submitted", "applied", "not-needed", "pending"]),
    metavar="STATE",
)
@click.argument("detail", nargs=-1, metavar="[URL|COMMIT|REASON]")
@click.pass_obj
def upstream(opts: Options, name: str, state: str, detail: tuple[str, ...]) -> None:
    """Record where a patch stands upstream, in DEP-3 fields of its header.

    submitted URL writes 'Forwarded: URL'; applied COMMIT 'Applied-Upstream: commit:ID'
    (checked against the series base: is the commit in its history?); not-needed REASON
    'Forwarded: not-needed (REASON)'; pending 'Forwarded: no'. Each sets 'Last-Update:' to
    today, and a Yocto Upstream-Status: or SUSE Patch-mainline: already there is made to
    agree. Applied, the patch's commit gets the new message (same tree); 'patchstack undo'
    takes it back. 'status' and 'series' sum the states up; 'check --require-status' fails
    for a patch with none.

    \b
    Example:
      patchstack upstream kimi-k25-eagle3 submitted https://github.com/ORG/REPO/pull/812
      patchstack upstream communicator-sm120 applied origin/main~2
      patchstack upstream nccl-diagnostic-logging not-needed fork-only diagnostics
      patchstack upstream oea-routing pending
    """
    from ..commands.upstream import IN_BASE, NOT_IN_BASE, UNKNOWN, set_upstream, standings

    ws = opts.checkout()
    result = set_upstream(ws, name, state, " ".join(detail) or None)
    where = " (applied: commits rewritten, same trees)" if result.applied else ""
    if not result.changed:
        out(f"{result.name}: unchanged")
        return
    out(f"{result.name}: {state}{where}")
    series = ws.load_series()
    mine = [s for s in standings(ws, series, series.base) if s.name == result.name]
    check = mine[0].applied_check if mine else None
    if check == IN_BASE:
        out(
            "the series base contains that commit: the patch is upstream already"
            f" ('patchstack delete {result.name}', or 'refresh --drop-merged')"
        )
    elif check == NOT_IN_BASE:
        out("the series base does not contain that commit yet (a refresh onto it will)")
    elif check is not None and check != UNKNOWN:
        out(
            "the series base contains that commit; 'patchstack refresh' proves whether it"
            " holds the patch's change before anything calls it upstream"
        )


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
@click.argument("name", required=False, shell_complete=complete_patch_names)
@click.argument("tag", required=False, metavar="[TAG[,LABEL...]]", shell_complete=complete_tags)
@click.option("--add-label", "add", multiple=True, metavar="LABEL", help="Add a label.")
@click.option("--remove-label", "remove", multiple=True, metavar="LABEL", help="Remove a label.")
@click.option(
    "--names",
    "names",
    metavar="A,B,...",
    shell_complete=complete_patch_names,
    help="Several patches at once (then give only the TAG).",
)
@click.option(
    "--only",
    metavar="TAGS",
    shell_complete=complete_tags,
    help="Every patch with these tags or labels (then give only the TAG).",
)
@click.option(
    "--except",
    "except_",
    metavar="TAGS",
    shell_complete=complete_tags,
    help="Every patch without these tags or labels (then give only the TAG).",
)
@click.pass_obj
def tag_cmd(
    opts: Options,
    name: str | None,
    tag: str | None,
    add: tuple[str, ...],
    remove: tuple[str, ...],
    names: str | None,
    only: str | None,
    except_: str | None,
) -> None:
    """Set a patch's tag (and labels), or add and remove labels; --names or --only/--except
    do it for several patches in one step (one 'patchstack undo' takes it back).

    TAG[,LABEL...] sets the tag and the labels (the labels it does not name are removed);
    --add-label and --remove-label keep the others. Applied, a patch's commit's
    Patchstack-Tag trailer follows, with the very same tree. Given the tag the series
    already has, it makes the applied commit agree with the series.

    \b
    Example:
      patchstack tag oea-routing optimization,moe
      patchstack tag oea-routing --add-label nvidia --remove-label moe
      patchstack tag --names mla-kv-gather,oea-routing diagnostic
      patchstack tag --only diagnostic optimization
    """
    from ..commands.retag import retag
    from ..errors import PatchstackError

    several = names is not None or only is not None or except_ is not None
    if several:
        if tag is not None:
            raise PatchstackError(
                "with --names, --only or --except give only the TAG, not a patch NAME",
                "e.g. 'patchstack tag --only diagnostic optimization'",
            )
        if names is not None and (only is not None or except_ is not None):
            raise PatchstackError("give --names or --only/--except, not both")
        chosen = (
            [n.strip() for n in names.split(",") if n.strip()]
            if names is not None
            else selector(None, False, only, except_)
        )
        result = retag(opts.checkout(), chosen, name, add, remove)
    elif name is None:
        raise PatchstackError(
            "give a patch NAME (or --names A,B or --only TAGS)", "see 'patchstack tag --help'"
        )
    else:
        result = retag(opts.checkout(), [name], tag, add, remove)
    for p in result.patches:
        shown = ", ".join((p.tag, *p.labels))
        note = " (applied commit rewritten, same tree)" if p.rewritten else ""
        out(f"{p.name}: [{shown}]{note}" + ("" if p.changed or not several else " (unchanged)"))
    if several:
        changed = sum(p.changed for p in result.patches)
        out(f"tagged {changed} of {len(result.patches)} patch(es) in one step")


# -- delete, move, fold, split ---------------------------------------------------------------


def rewritten_line(ctx: click.Context, names: tuple[str, ...]) -> None:
    if names:
        echo(ctx, "rewritten (their change moved): " + ", ".join(names))
