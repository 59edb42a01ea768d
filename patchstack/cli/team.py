"""merge-driver: two maintainers on one series (git's merge driver for the series folder)."""

from __future__ import annotations

import click

from .app import cli
from .output import echo, out


@cli.command("merge-driver")
@click.argument("files", nargs=-1)
@click.option(
    "--install",
    is_flag=True,
    help="Set the driver up: .gitattributes in the series folder, merge.patchstack.* in the"
    " configuration of the repository holding it.",
)
@click.pass_context
def merge_driver(ctx: click.Context, files: tuple[str, ...], install: bool) -> None:
    """Merge two maintainers' changes to the series file or a patch file (git runs it).

    With --install, set it up once per clone: git then merges 'series' and '*.patch' of the
    series folder with it on every merge ('git pull'). Appends, retags, reorders, renames and
    deferred/upstream marks of different patches on the two sides merge cleanly; a patch whose
    description changed on one side and whose diff changed on the other merges; the rest is
    left a conflict with git's markers (exit 1), named on standard error, which every
    patchstack command refuses until it is resolved. git runs it as 'merge-driver %O %A %B
    %L %P' (base, ours, theirs, marker size, path). A .gitattributes that a teammate commits
    runs nothing until you --install.

    \b
    Example:
      patchstack merge-driver --install
      git -C patches pull
    """
    if install:
        if files:
            raise click.UsageError("--install takes no FILES")
        from ..commands.merge_driver import install as do_install

        done = do_install(ctx.obj.checkout())
        if not done.changed:
            echo(ctx, f"the merge driver is installed ({done.attributes}, {done.config})")
        for what in done.changed:
            echo(ctx, f"wrote {what}")
        return
    if len(files) != 5:
        raise click.UsageError(
            "give BASE OURS THEIRS MARKER-SIZE PATH (as git runs it), or --install"
        )
    from ..commands.merge_driver import run_driver

    base, ours, theirs, size, path = files
    if not size.isdigit():
        raise click.UsageError(f"marker size '{size}' is not a number")
    result = run_driver(base, ours, theirs, int(size), path)
    if result.clean:
        return
    for reason in result.conflicts:
        out(f"patchstack merge-driver: conflict in {path}: {reason}", err=True)
    out(
        f"hint: resolve the markers in {path}, then 'git add' it; patchstack commands refuse"
        " the file until then",
        err=True,
    )
    ctx.exit(1)
