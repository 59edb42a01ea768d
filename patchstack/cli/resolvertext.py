"""``refresh --resolver``: its options, and what refresh says of each proposal (accepted: a
note on the patch's verdict; refused: a line, or the stop's note for the patch it stopped at).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..checkout import Checkout
    from ..commands.refresh.resolver import Setting
    from ..commands.refresh.settle import RefreshResult


def resolver_options(f: Any) -> Any:
    f = click.option(
        "--resolver-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="With a resolver: kill it (and each probe run) after SECONDS (default:"
        " patchstack.resolverTimeout, else 300).",
    )(f)
    return click.option(
        "--resolver",
        metavar="CMD",
        help="Hand each conflict no recorded resolution settles to CMD (run by /bin/sh, the"
        " JSON packet on its standard input and as its last argument); a proposal is taken only"
        " without markers, within the patch's files and with the patch's probe effective on it"
        " (default: git config patchstack.resolver; '' for none).",
    )(f)


def resolver_setting(ws: Checkout, command: str | None, seconds: float | None) -> Setting | None:
    from ..commands.refresh.resolver import setting

    return setting(ws, command, seconds)


def accepted_note(result: RefreshResult, name: str) -> str:
    for p in result.proposals:
        if p.patch == name and p.accepted:
            return f"resolved by {p.command}: machine-made, {p.why}"
    return ""


def refused_lines(result: RefreshResult) -> list[str]:
    """The refused proposals but the one the report of the stop says."""
    stopped = result.stopped.patch if result.stopped else None
    return [
        f"  the proposal of '{p.command}' for {p.patch} was refused: {p.why}"
        for p in result.proposals
        if not p.accepted and p.patch != stopped
    ]
