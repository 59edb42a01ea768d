"""Results of the user's programs by the tree they ran in: the probes' runs and bisect's steps.

A program run in a clean checkout of a tree gives the same answer the next time it runs there
(the probes and bisect's COMMAND are meant to), so a run is kept under a key made of the tree
and what was run (`key`), in one JSON file per kind in the git directory
(``patchstack/probes.json``, ``patchstack/bisect.json``). It is a cache, never state: a value
that cannot be read is a miss, a file that cannot be read is an empty cache, losing it costs
only time, and the newest `KEPT` runs are kept. Only runs that ended by themselves are worth
keeping (one that timed out or was killed says more about the machine than about the tree):
the callers decide what they `put`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any

from ..files import write_atomic
from ..git import Git

KEPT = 2000  # runs kept in each file


def key(tree: str, *what: str) -> str:
    """The key of a run in ``tree`` of ``what`` (the command and what else decides its
    answer: the folder it starts in, the figure read from it)."""
    return hashlib.sha256("\0".join((tree, *what)).encode()).hexdigest()


class RunCache:
    """Runs of one kind (``probes``, ``bisect``), read when made and written by `save`."""

    def __init__(self, git: Git, kind: str) -> None:
        self.path = os.path.join(git.common_dir, "patchstack", f"{kind}.json")
        self.format = f"patchstack-{kind} 1"
        self.runs: dict[str, Any] = {}
        self.changed = False
        with contextlib.suppress(OSError, ValueError, AttributeError):
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") == self.format and isinstance(data.get("runs"), dict):
                self.runs = data["runs"]

    def get(self, k: str) -> list[Any] | None:
        found = self.runs.get(k)
        return found if isinstance(found, list) else None

    def put(self, k: str, value: list[Any]) -> None:
        self.runs.pop(k, None)  # the newest last, so that the oldest go first
        self.runs[k] = value
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        kept = dict(list(self.runs.items())[-KEPT:])
        data = json.dumps({"format": self.format, "runs": kept}).encode()
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            write_atomic(self.path, data, sync=False)
        self.changed = False
