"""The click group, its global options, and how a command opens the repository.

Domain errors become messages and exit statuses in one place (`errors_to_exit`). The repository
is opened only by a command that needs it (`Options.checkout`), never in the group callback,
which also runs before a subcommand's ``--help``. The group takes git's global options (``-C
DIR``, ``-p``/``--paginate``, ``--no-pager``); every command takes ``--color`` (`terminal`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from .. import __version__
from . import registry, terminal
from .output import out
from .terminal import color_option

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from ..checkout import Checkout
    from ..errors import PatchstackError

EPILOG_EXIT = "Exit status: 0 done, 1 conflict, 2 bad input or refused (nothing changed)."


_ARGV: list[str] = []  # the command line, for the lock holder's note and the operation log


@dataclass
class Options:
    series_dir: str | None

    def checkout(self, write: bool = True, while_stopped: bool = False) -> Checkout:
        """Open the repository and begin a transaction (`transaction.begin`): the lock,
        exclusive for a command that changes state; the refusals (or, for a command that only
        reads, warnings) while a command was interrupted or a refresh is stopped."""
        import shlex

        from ..checkout import open_checkout
        from ..transaction import begin

        ctx = click.get_current_context()
        from .progress import TerminalProgress

        ws = open_checkout(self.series_dir)
        ctx.call_on_close(ws.git.close)
        terminal.terminal().repository = ws.git  # its configuration, read once, has the colour
        words = ctx.command_path[len(ctx.find_root().info_name or "") :].strip()
        ws.progress = TerminalProgress(words or str(ctx.info_name))  # "import quilt"
        ctx.call_on_close(ws.progress.close)
        ws.command = "patchstack " + (shlex.join(_ARGV) if _ARGV else str(ctx.info_name))
        held, problems = begin(
            ws,
            write,
            allow_interrupted=ctx.info_name in ("undo", "log"),
            while_stopped=while_stopped,
        )
        ctx.call_on_close(held.release)
        if any("scratch" in r for r in ws.git.lock_reasons()):  # a killed bisect's, maybe
            from ..commands.worktree import remove_stale_scratch

            remove_stale_scratch(ws.git)
        if write:  # a command that only reads writes nothing, not even a cache
            ctx.call_on_close(ws.save_caches)  # runs first: under the lock
        for error in problems:
            out(f"patchstack: warning: {error.message}", err=True)
            if error.hint:
                out(f"hint: {error.hint}", err=True)
        return ws


class PatchstackCommand(click.Command):
    """A command that takes ``--color`` too, as git's commands do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not any("--color" in p.opts for p in self.params if isinstance(p, click.Option)):
            self.params.append(color_option())


class CommandGroup(click.Group):
    """A group whose commands take ``--color``, and whose help lists an alias once, with the
    command it names (``delete, drop``)."""

    command_class = PatchstackCommand

    def listed(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command NAME as the list of commands shows it (an alias: the same object)."""
        return self.get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[int, tuple[list[str], click.Command]] = {}
        for name in self.list_commands(ctx):
            cmd = self.listed(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            names = rows.setdefault(id(cmd), ([], cmd))[0]
            if name == cmd.name:
                names.insert(0, name)
            else:
                names.append(name)
        if not rows:
            return
        listed = sorted(rows.values(), key=lambda row: row[0][0])
        width = max(len(", ".join(names)) for names, _ in listed)
        limit = formatter.width - 6 - width
        with formatter.section("Commands"):
            formatter.write_dl(
                [(", ".join(names), cmd.get_short_help_str(limit)) for names, cmd in listed]
            )


CommandGroup.group_class = CommandGroup


class PatchstackGroup(CommandGroup):
    """The top group, whose ``main`` turns domain errors into messages and exit statuses.

    Its commands are registered lazily (`registry`): the group knows their names and short
    help, and imports a command's module only when the command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *registry.COMMANDS, *registry.ALIASES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = registry.module_of(cmd_name)
        if cmd_name not in self.commands and module is not None:
            importlib.import_module(f"{__package__}.{module}")  # its commands register
        return self.commands.get(cmd_name)

    def listed(self, ctx: click.Context, name: str) -> click.Command | None:
        primary = registry.ALIASES.get(name, name)
        if primary not in registry.COMMANDS:
            return self.commands.get(name)
        return _summary(primary)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:  # a typo: click's "did you mean"
            for name in registry.COMMANDS:  # chooses among the commands registered
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        items = [
            CompletionItem(name, help=cmd.get_short_help_str())
            for name in self.list_commands(ctx)
            if name.startswith(incomplete)
            for cmd in [self.listed(ctx, name)]
            if cmd is not None and not cmd.hidden
        ]
        return items + click.Command.shell_complete(self, ctx, incomplete)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from ..lock import signals_handled

        kwargs["standalone_mode"] = False
        if kwargs.get("prog_name") not in ("patchstack", "git patchstack"):
            kwargs["prog_name"] = invoked_as()  # a test runner's name is not the program's
        given = kwargs.get("args", args[0] if args else None)
        outer = _ARGV[:], _INVOKED[:]
        _ARGV[:] = list(sys.argv[1:] if given is None else given)
        kwargs["args"] = terminal.bare_color(_ARGV)
        args = ()
        _INVOKED[:] = [str(kwargs["prog_name"])]
        terminal.begin()
        try:
            with signals_handled():
                code = _run(lambda: super(PatchstackGroup, self).main(*args, **kwargs))
        finally:
            terminal.end()
            _ARGV[:], _INVOKED[:] = outer
        sys.exit(code)


@functools.cache
def _summary(name: str) -> click.Command:
    """A stand-in for the command NAME that the command list shows, as the command itself:
    ``get_short_help_str`` cuts the first sentence of its help as it cuts the whole help."""
    return click.Command(name, help=registry.COMMANDS[name][1])


def invoked_as() -> str:
    """``git patchstack`` when git ran this program as ``git-patchstack``, else
    ``patchstack``: the name the hints and the usage messages say."""
    return "git patchstack" if os.path.basename(sys.argv[0]) == "git-patchstack" else "patchstack"


_INVOKED: list[str] = []  # the program's name as run, for the hints


def program() -> str:
    return _INVOKED[-1] if _INVOKED else "patchstack"


def _change_folder(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    """``-C DIR`` as git takes it: run as if started in DIR; a relative one after the one
    before; an empty one changes nothing."""
    if ctx.resilient_parsing:
        return
    from ..errors import PatchstackError

    for folder in value:
        if not folder:
            continue
        try:
            os.chdir(folder)
        except OSError as exc:
            raise PatchstackError(
                f"cannot change to '{folder}': {exc.strerror or exc}",
                "-C takes a folder that exists (as git -C does)",
            ) from None


def _set_pager(ctx: click.Context, param: click.Parameter, value: bool | None) -> None:
    if value is not None and not ctx.resilient_parsing:
        terminal.terminal().paginate = value


@click.group(
    cls=PatchstackGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EPILOG_EXIT,
)
@click.version_option(__version__, "--version", prog_name="patchstack")
@click.option(
    "-C",
    "chdir",
    multiple=True,
    metavar="DIR",
    type=click.Path(file_okay=False),
    is_eager=True,
    callback=_change_folder,
    help="Run as if started in DIR (as git -C; each relative DIR goes on from the one before).",
)
@click.option(
    "--dir",
    "series_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Series directory (default: $PATCHSTACK_DIR, git config patchstack.dir,"
    " or patches/ at the top of the work tree).",
)
@click.option(
    "-p",
    "--paginate/--no-pager",
    default=None,
    expose_value=False,
    callback=_set_pager,
    help="Page the output (on a terminal) through $GIT_PAGER, core.pager, $PAGER or"
    " 'less -FRX', or not at all; series, show, review, log and graph page by default.",
)
@click.pass_context
def cli(ctx: click.Context, chdir: tuple[str, ...], series_dir: str | None) -> None:
    """Keep a fork's local modifications as an ordered, named, tagged patch series.

    \b
    Example:
      patchstack new kimi-fix --tag essential models/kimi_k25.py
      patchstack pop --only diagnostic,optimization
      patchstack push --all
    """
    ctx.obj = Options(series_dir)
    if terminal.terminal().paginate:
        terminal.terminal().page()


cli.params.insert(3, color_option(whole=True))


def _run(invoke: Callable[[], Any]) -> int:
    """Run the command; every domain error becomes its message and exit status here; what
    was made visible in the output (`safe_text`) is said once, at the end."""
    from ..safe_text import warning
    from .output import REPLACED

    REPLACED.clear()
    opened = sys.modules.get("patchstack.transaction")  # not imported yet: nothing opened
    if opened is not None:
        opened.start_command()
    try:
        return _run_command(invoke)
    finally:
        said = warning(tuple(REPLACED))
        if said:
            click.echo(f"patchstack: warning: {said}", err=True)


def _run_command(invoke: Callable[[], Any]) -> int:
    from ..errors import (
        ConflictError,
        GitFailure,
        PatchstackError,
        environment_fault,
        git_fault_hint,
    )
    from ..lock import Interrupted

    try:
        code = invoke()
    except Interrupted as exc:
        _clean_up()
        _say_last(f"patchstack: interrupted ({exc}): {_where_it_stopped()}")
        return exc.exit_code
    except OSError as exc:
        _clean_up()
        fault = _scratch_fault(exc.strerror or str(exc)) or environment_fault(exc)
        out(f"patchstack: error: {fault.message}", err=True)
        out(f"hint: {fault.hint}", err=True)
        return fault.exit_code
    except ConflictError as exc:
        from .conflicttext import render_conflict

        out(f"patchstack: {exc.message}", err=True)
        full = any(a in ("--verbose", "-v") for a in _ARGV)  # the command's own flag
        for line in render_conflict(exc.report, full=full):
            out(line, err=True)
        if exc.hint:
            out(f"hint: {exc.hint}", err=True)
        return exc.exit_code
    except PatchstackError as exc:
        _clean_up()
        if isinstance(exc, GitFailure):
            exc = _scratch_fault(exc.message) or exc
        if exc.exit_code == 2:
            _refused()
        hint = exc.hint or (git_fault_hint(exc.message) if isinstance(exc, GitFailure) else None)
        out(f"patchstack: error: {exc.message}", err=True)
        if hint:
            out(f"hint: {hint}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        from .usage import usage_error

        message, hint = usage_error(exc)
        click.echo(f"patchstack: error: {message}", err=True)
        click.echo(f"hint: {hint}", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except (KeyboardInterrupt, click.exceptions.Abort):
        out("patchstack: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0


def _scratch_fault(message: str) -> PatchstackError | None:
    """A full disk that was the scratch store's (`git.scratch`): named, with the way round."""
    from ..errors import EnvironmentFault
    from ..transaction import scratch_was_full

    lowered = message.lower()
    if not ("no space left" in lowered or "out of diskspace" in lowered):
        return None
    where = scratch_was_full()
    if where is None:
        return None
    return EnvironmentFault(
        f"{message} (in {where}, where a replay keeps the objects it may throw away)",
        f"free some space in {where}, or run the command with PATCHSTACK_NO_SCRATCH=1"
        " (those objects then go into the repository); nothing was changed",
    )


def _say_last(text: str) -> None:
    """The last words of an interrupted command. After SIGHUP the terminal may be gone: a
    write that fails then must not turn the exit status into a traceback (or Python's 120
    for a failed flush at exit), so the standard streams go to /dev/null instead."""
    import os

    try:
        out(text, err=True)
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                os.dup2(null, stream.fileno())
        os.close(null)


def _clean_up() -> None:
    """After a failure: what git left behind in the repositories this command opened."""
    from ..transaction import clean_up_after_failure

    clean_up_after_failure()


def _refused() -> None:
    """A refusal changed nothing and is not in the operation log: noted for ``undo``."""
    opened = sys.modules.get("patchstack.transaction")
    if opened is not None:
        opened.note_refusal()


def _where_it_stopped() -> str:
    from ..transaction import describe_interruption

    return describe_interruption()


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv)
