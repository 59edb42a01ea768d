"""The probes' side of refresh and check: the options, running the probes after the replay,
and the patches without an upstream status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..checkout import Checkout
    from ..commands.probes import ProbeReport
    from ..commands.upstream import Standing
    from ..model.selection import Selector


def probe_options(f: Any) -> Any:
    f = click.option(
        "--probe-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=300.0,
        show_default=True,
        metavar="SECONDS",
        help="With --probes: a probe running longer fails.",
    )(f)
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        metavar="N",
        help="With --probes: run at most N probes at once (default: the cores, at most 4).",
    )(f)


def run_probes(
    ws: Checkout,
    target: str,
    sel: Selector,
    left_out: dict[str, str],
    jobs: int | None,
    timeout: float,
) -> ProbeReport:
    from ..commands.probes import probe_series
    from ..model.ids import Oid

    ws.progress.step("running the probes")
    try:
        return probe_series(ws, Oid(target), sel, left_out, jobs, timeout, ws.progress)
    finally:
        ws.progress.close()


def missing_status(ws: Checkout, sel: Selector) -> list[Standing]:
    from ..commands.upstream import standings
    from ..commands.worktree import selected_names
    from ..model.fields import NONE

    series = ws.load_series()
    chosen = set(selected_names(series, sel))
    found = standings(ws, series, series.base)
    return [s for s in found if s.name in chosen and s.upstream.state == NONE]
