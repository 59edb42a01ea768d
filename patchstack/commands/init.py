"""``init``: create the series directory and its series file."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model.ids import Oid
from ..model.series import new_series
from ..transaction import FileWrite, Plan, publish
from .state import read_stack, resolve_rev


@dataclass(frozen=True)
class InitResult:
    series_path: str
    base: Oid


def init(ws: Checkout, base_rev: str | None) -> InitResult:
    if ws.exists():
        raise PatchstackError(
            f"a series already exists at {ws.display(ws.series_path)}",
            "use it as it is, or choose another folder with --dir",
        )
    stack = read_stack(ws.git)
    base = resolve_rev(ws.git, base_rev) if base_rev else stack.base
    ref = base_rev if base_rev and base_rev != base else None
    data = new_series(base, ref).format().encode("utf-8", "surrogateescape")
    publish(ws, Plan("init", stack.head, stack.head, (FileWrite(ws.series_path, data),)))
    return InitResult(ws.series_path, base)
