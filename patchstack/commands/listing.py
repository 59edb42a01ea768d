"""``series`` (``list``): the patches in order, with tags, labels and applied state."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..model.ids import Oid
from ..model.series import Series
from ..model.stack import Stack
from .state import read_stack


@dataclass(frozen=True)
class SeriesRow:
    name: str
    tag: str
    labels: tuple[str, ...]
    applied: bool
    commit: Oid | None


def list_series(ws: Checkout) -> tuple[Series, Stack, list[SeriesRow]]:
    series = ws.load_series()
    stack = read_stack(ws.git)
    rows = []
    for e in series.entries:
        ap = stack.find(e.name)
        rows.append(SeriesRow(e.name, e.tag, e.labels, ap is not None, ap.commit if ap else None))
    return series, stack, rows
