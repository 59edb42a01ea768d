"""``refresh`` and what it shares: `start` (where the new base comes from, the replay, a fold
of edits into a patch), `settle` (finish, or stop at a conflict), `stopped` (the stopped
state, kept in the journal), `resume` (``--continue`` and ``--abort``), `proof` (is each
applied commit still exactly its patch file: every command that moves the stack asks it),
`adopt` (a commit made by hand becomes a patch: ``new --from-commit``), `drift` (how far
upstream moved since the series base, for ``status``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...checkout import Checkout


def plan_path(ws: Checkout) -> str:
    """Where a stepped refresh keeps its plan (`steps`)."""
    return os.path.join(ws.git.git_dir, "patchstack", "steps.json")


def stepped(ws: Checkout, how: str, mode: str | None) -> bool:
    """Whether ``refresh`` (``how``: start, continue, skip or abort) may be stepped: with
    ``--steps``, or while a plan is kept (`steps.live` says whether it is under way); a plain
    ``--skip`` then imports nothing of `steps`."""
    return mode is not None if how == "start" else os.path.exists(plan_path(ws))
