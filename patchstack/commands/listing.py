"""``series`` (``list``): the patches in order, with tags, labels and applied state, and what
their headers say of their probes and their upstream status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from ..checkout import Checkout
from ..journal.oplog import stopped_command
from ..model.ids import Oid
from ..model.marks import Mark
from ..model.series import Series
from ..model.stack import Stack
from .state import follow_renames, read_stack
from .upstream import Standing, standings, today


@dataclass(frozen=True)
class SeriesRow:
    name: str
    tag: str
    labels: tuple[str, ...]
    applied: bool
    commit: Oid | None
    standing: Standing
    mark: Mark | None = None  # its deferred or upstream mark


@dataclass(frozen=True)
class Listing:
    series: Series
    stack: Stack
    rows: tuple[SeriesRow, ...]
    today: date | None  # when a submission's age is told
    stopped: str | None = None  # the command stopped at a conflict (`oplog.stopped_command`)


def list_series(ws: Checkout) -> Listing:
    series = ws.load_series()
    stack = follow_renames(ws, series, read_stack(ws.git))
    found = standings(ws, series, series.base or stack.base)
    rows = []
    for e, standing in zip(series.entries, found, strict=True):
        ap = stack.find(e.name)
        commit = ap.commit if ap else None
        mark = series.mark_of(e.name)
        rows.append(SeriesRow(e.name, e.tag, e.labels, ap is not None, commit, standing, mark))
    when = today(ws) if any(s.upstream.updated for s in found) else None
    return Listing(series, stack, tuple(rows), when, stopped_command(ws.git))
