"""git's terminal conventions: when to colour, and the pager.

Colour, strongest first: ``--color[=WHEN]`` (on any command, or before it; ``--color`` alone
is ``always``); the configuration ``color.patchstack``, else ``color.ui`` (``always``,
``never``/``false``; ``auto``/``true`` decide as below); ``NO_COLOR`` (no colour);
``FORCE_COLOR`` or ``CLICOLOR_FORCE`` (colour even in a pipe; ``0`` does not force); else
colour on a terminal (or into the pager) unless ``TERM=dumb``. The configuration is read only
when a line that has colour is written, once per command.

The pager, as git pages: ``GIT_PAGER``, ``core.pager``, ``PAGER``, else ``less`` (with
``LESS=FRX`` unless ``LESS`` is set, so one screen of output just prints), only when standard
output is a terminal; ``cat`` or an empty value is no pager. The commands whose output is
long page by default (`PAGED`); ``-p``/``--paginate`` pages any command, ``--no-pager`` none.
A command pages at the moment it writes its result, so a refusal before it goes straight to
the terminal; once paged, standard error goes into the pager too when it is a terminal (as
git does), and the pager is waited for before patchstack exits. Under ``git -p patchstack``
(``GIT_PAGER_IN_USE``) git's pager is used.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import click

PAGED = frozenset({"series", "list", "show", "review", "log", "graph"})

_CHOICES = ("auto", "always", "never")
_COLOR_WORDS = {
    "always": True,
    "never": False,
    "false": False,
    "no": False,
    "off": False,
    "0": False,
}  # any other configured word decides as "auto"


@dataclass
class Terminal:
    """One command's terminal: the colour asked for on the command line, what the
    configuration said (read once), and the pager when one runs."""

    color: str | None = None  # --color, when given
    paginate: bool | None = None  # -p: True, --no-pager: False, else the command decides
    repository: Any = None  # the command's `git.Git`, once open: its configuration is read
    _configured: list[str | None] = field(default_factory=list)
    _pager: Any = None
    _saved: tuple[int, int | None] | None = None

    def wants_color(self, err: bool = False) -> bool:
        if self.color in ("always", "never"):
            return self.color == "always"
        if self.color is None:
            configured = self.configured()
            if configured is not None and configured.lower() in _COLOR_WORDS:
                return _COLOR_WORDS[configured.lower()]
        if os.environ.get("NO_COLOR"):
            return False
        if any(os.environ.get(k, "0") not in ("", "0", "false") for k in _FORCING):
            return True
        stream = sys.stderr if err else sys.stdout
        on_terminal = _isatty(stream) or (not err and self.paging)
        return on_terminal and os.environ.get("TERM") != "dumb"

    def configured(self) -> str | None:
        if not self._configured:
            from ..commands.terminal import color_setting

            self._configured.append(color_setting(self.repository))
        return self._configured[0]

    @property
    def paging(self) -> bool:
        return self._pager is not None or bool(os.environ.get("GIT_PAGER_IN_USE"))

    def page(self, command: str | None = None) -> None:
        """Send standard output (and a terminal's standard error) to the pager from now on,
        when the command pages (``command`` in `PAGED`, or ``-p``) and output is a terminal."""
        wanted = self.paginate if self.paginate is not None else command in PAGED
        if not wanted or self.paging or not _isatty(sys.stdout):
            return
        from ..commands.terminal import pager_command, start_pager

        pager = pager_command()
        if pager is None:
            return
        from .progress import pause

        pause()
        sys.stdout.flush()
        sys.stderr.flush()
        proc = start_pager(pager)
        assert proc.stdin is not None
        out = os.dup(1)
        err = os.dup(2) if _isatty(sys.stderr) else None
        os.dup2(proc.stdin.fileno(), 1)
        if err is not None:
            os.dup2(proc.stdin.fileno(), 2)
        proc.stdin.close()
        os.environ["GIT_PAGER_IN_USE"] = "true"  # for git and for the colour of what follows
        self._pager, self._saved = proc, (out, err)

    def close(self) -> None:
        """Hand the pager the rest of the output and wait until the user leaves it. Output
        the user did not read (the pager quit early) is dropped silently."""
        if self._pager is None or self._saved is None:
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BrokenPipeError:
                _drop_pending(stream)
        out, err = self._saved
        os.dup2(out, 1)
        os.close(out)
        if err is not None:
            os.dup2(err, 2)
            os.close(err)
        self._pager.wait()
        self._pager = self._saved = None
        os.environ.pop("GIT_PAGER_IN_USE", None)


_FORCING = ("FORCE_COLOR", "CLICOLOR_FORCE")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _drop_pending(stream: Any) -> None:
    """What a stream still buffers for a pager that is gone: written to /dev/null."""
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(fd, stream.fileno())
        with contextlib.suppress(OSError):
            stream.flush()
    finally:
        os.close(fd)


# The terminal of each command running in this process (`demo` runs commands inside one).
_RUNNING: list[Terminal] = []


def terminal() -> Terminal:
    """The terminal of the command running now (defaults outside any command)."""
    return _RUNNING[-1] if _RUNNING else Terminal()


def begin() -> Terminal:
    _RUNNING.append(Terminal())
    return _RUNNING[-1]


def end() -> None:
    """After the command and its last message: the pager, if any, is waited for."""
    if _RUNNING:
        _RUNNING.pop().close()


def _set_color(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and not ctx.resilient_parsing:
        terminal().color = value


def bare_color(args: list[str]) -> list[str]:
    """git's ``--color`` without a value is ``--color=always`` (a value is given with '=';
    ``--color never``, with one of the three words after it, is still read as its value)."""
    out = list(args)
    for k, word in enumerate(out):
        if word == "--":
            break
        if word == "--color" and (k + 1 == len(out) or out[k + 1] not in _CHOICES):
            out[k] = "--color=always"
    return out


def color_option(whole: bool = False) -> click.Option:
    """``--color[=WHEN]``, the same on the group and on every command (``whole``: the help
    that says every rule, for the group's)."""
    rules = (
        "Colour: auto (a terminal, unless TERM=dumb), always, never; --color alone is"
        " always (also: color.ui, NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE)."
    )
    return click.Option(
        ["--color"],
        type=click.Choice(_CHOICES),
        default=None,
        expose_value=False,
        callback=_set_color,
        help=rules if whole else "Colour: auto, always or never (see 'patchstack --help').",
    )
