"""``patchstack help [COMMAND]``: the manual page, from the package, under every installer."""

from __future__ import annotations

import click

from .app import cli


@cli.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.option(
    "--man-path",
    is_flag=True,
    help="Print the folder of the shipped man pages (for MANPATH) and exit.",
)
def help_command(words: tuple[str, ...], man_path: bool) -> None:
    """Show the manual: the whole page, or the part about COMMAND.

    The page ships inside the package, so this works however patchstack was installed
    (uv and pipx link no man pages: there 'man patchstack' finds nothing). On a terminal the
    page is shown by man (or the pager); otherwise it is printed as plain text. With the
    folder --man-path prints on MANPATH, 'man patchstack' and 'git patchstack --help' work
    too.

    \b
    Example:
      patchstack help pop
      export MANPATH="$(patchstack help --man-path):"
    """
    import shutil
    import sys

    from .. import manpage
    from ..errors import PatchstackError
    from ..model.suggest import did_you_mean

    if man_path:
        click.echo(manpage.page_dir())
        return
    try:
        source = manpage.read_page()
    except OSError as exc:
        raise PatchstackError(
            f"the manual page is not in the package ({exc.strerror}: {exc.filename})",
            "reinstall patchstack; 'patchstack --help' and 'patchstack COMMAND --help' work",
        ) from exc
    if words:
        page = manpage.command_page(source, words)
        if page is None:
            names = manpage.command_names(source)
            wanted = " ".join(words)
            hint = did_you_mean(wanted, names) or "the commands: " + ", ".join(
                n for n in names if " " not in n
            )
            raise PatchstackError(f"no command '{wanted}' in the manual", hint)
        source = page
    terminal = sys.stdout.isatty()
    man = manpage.man_program() if terminal else None
    if man is not None:
        code = manpage.show_with_man(man, source)
        if code == 0:
            return
    width = min(shutil.get_terminal_size((80, 24)).columns, 100) if terminal else 80
    text = manpage.to_text(source, width)
    if terminal:
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)
