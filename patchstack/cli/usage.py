"""click's usage errors in patchstack's style: ``patchstack: error: MESSAGE`` then
``hint: ...`` with "did you mean" for a mistyped command, option or choice."""

from __future__ import annotations

import re

import click

from ..model.suggest import did_you_mean

_CLICK_SUGGESTION = re.compile(r"\s*\(?Did you mean (?:one of: )?(.*?)\?\)?\s*$")


def usage_error(exc: click.UsageError) -> tuple[str, str]:
    """The message and the hint for a usage error."""
    ctx = exc.ctx
    from .app import program

    path = program()
    if ctx is not None:  # the command's words after the program's name, however it was run
        path += ctx.command_path[len(ctx.find_root().info_name or "") :]
    see = f"see '{path} --help'"
    message = exc.format_message()
    suggestion = None
    m = _CLICK_SUGGESTION.search(message)
    if m:  # click's own suggestion: a command or an option
        message = message[: m.start()]
        names = re.findall(r"'([^']+)'", m.group(1))
        suggestion = "did you mean " + " or ".join(f"'{n}'" for n in names) + "?"
    if isinstance(exc, click.BadParameter) and isinstance(
        getattr(exc.param, "type", None), click.Choice
    ):
        given = _given_value(message)
        choices = [str(c) for c in exc.param.type.choices]  # type: ignore[union-attr]
        if given:
            suggestion = did_you_mean(given, choices)
    message = message.strip().rstrip(".")
    message = message[:1].lower() + message[1:]
    hint = f"{suggestion} ({see})" if suggestion else see
    return message, hint


def _given_value(message: str) -> str | None:
    m = re.search(r": '([^']*)' is not", message)
    return m.group(1) if m else None
