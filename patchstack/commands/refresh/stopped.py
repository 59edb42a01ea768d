"""A stopped refresh: everything ``refresh --continue`` needs to go on and ``--abort`` needs to
go back, kept as a blob that the operation log's snapshots point at.

A stopped refresh is a state of the journal, not a side file: the entry that stopped records
the blob in its *after* snapshot, so ``undo`` of a ``--continue`` or of an ``--abort`` gives the
stopped refresh back, and ``undo`` of the stop is the same as ``--abort``. ``before`` is the
snapshot of the state before the refresh started, which ``--abort`` restores.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ...checkout import Checkout
from ...engine.replay import Done, Step
from ...errors import PatchstackError
from ...git import Git
from ...journal.oplog import current_refresh
from ...journal.snapshot import Snapshot
from ...model.series import Series


@dataclass(frozen=True)
class State:
    old_base: str | None
    new_base: str
    new_ref: str | None
    route: str
    applied_before: tuple[str, ...]
    drop_merged: bool
    steps: tuple[Step, ...]
    before: Snapshot | None = None  # the state before the refresh started
    resolution: str | None = None  # the tree of the merge commit a 'git pull' made
    fold_into: str | None = None
    folded: tuple[str, ...] = ()
    done: tuple[Done, ...] = ()
    stopped_at: str | None = None
    stop_head: str | None = None
    stop_tree: str | None = None
    merged_tree: str | None = None
    touched: tuple[str, ...] = ()
    conflicted: tuple[str, ...] = ()
    # What the work tree held uncommitted at the stop, besides the stop's own files: (path,
    # `taking.fingerprints`), the user's, which --continue leaves alone.
    at_stop: tuple[tuple[str, str], ...] = ()
    # The recorded resolutions the --continue's of this refresh wrote: (patch, path).
    recorded: tuple[tuple[str, str], ...] = ()
    # Patches this refresh left out, deferred (--skip, --defer-conflicts): (name, the commit of
    # its change, the root it waits for or None).
    deferrals: tuple[tuple[str, str, str | None], ...] = ()
    # Of those waiting for a root, the ones that conflict on their own too (primary).
    primaries: tuple[str, ...] = ()
    # Of those waiting for a root, the ones that change nothing without it (no-op).
    no_ops: tuple[str, ...] = ()
    undefer: tuple[str, ...] = ()  # deferred patches this replay brings back (push NAME)
    # The command that stopped goes on with this after the replay (route "import": the
    # ``import branch`` on its way, `model.branch.Walk`); None for a refresh.
    then: str | None = None
    # ``refresh --resolver``: the command each conflict is handed to, and its time limit.
    resolver: str | None = None
    resolver_seconds: float | None = None
    # ``--probes``: a whole relocation is taken when the patch's probe proves it
    # (`relocating`), each probe run limited to these seconds; None without --probes.
    probe_seconds: float | None = None
    # ``--publish ff``: the tip before the refresh, which the published merge follows.
    publish_from: str | None = None
    # The REF the base line names after it (`tracked.base_line_ref`; "": none); None: the
    # series' own is kept (no --onto).
    base_line: str | None = None

    @property
    def verb(self) -> str:
        return "import" if self.route == "import" else "refresh"

    @property
    def command(self) -> str:
        """What goes on (``--continue``) or back (``--abort``)."""
        return "patchstack import branch" if self.route == "import" else "patchstack refresh"

    def to_json(self) -> str:
        data: dict[str, Any] = {"version": 2, **asdict(self)}
        data["before"] = self.before.to_json() if self.before else None
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> State:
        data = json.loads(text)
        data.pop("version", None)
        data["steps"] = tuple(
            Step(
                s["name"],
                s["before"],
                s["after"],
                tuple(s["real"]) if s["real"] else None,
                s.get("commit"),
                bool(s.get("deferred")),
            )
            for s in data["steps"]
        )
        data["deferrals"] = tuple(tuple(d) for d in data.get("deferrals") or ())
        data["undefer"] = tuple(data.get("undefer") or ())
        data["primaries"] = tuple(data.get("primaries") or ())
        data["no_ops"] = tuple(data.get("no_ops") or ())
        data["at_stop"] = tuple(tuple(p) for p in data.get("at_stop") or ())
        data["recorded"] = tuple(tuple(p) for p in data.get("recorded") or ())
        data["done"] = tuple(Done(**d) for d in data["done"])
        data["before"] = Snapshot.from_json(data["before"]) if data.get("before") else None
        for key in ("applied_before", "folded", "touched", "conflicted"):
            data[key] = tuple(data[key])
        return State(**data)


def store(ws: Checkout, state: State) -> str:
    """The blob that records ``state`` (for `transaction.Plan.refresh`)."""
    return ws.git.write_blob(state.to_json().encode())


def load(ws: Checkout) -> State:
    blob = current_refresh(ws.git)
    if blob is None:
        raise PatchstackError("no refresh is in progress", "run 'patchstack refresh' to start one")
    try:
        return State.from_json(ws.git.read_blob(blob).decode("utf-8"))
    except (ValueError, KeyError, TypeError) as exc:
        raise PatchstackError(
            f"the stopped refresh recorded in the operation log ({blob[:12]}) cannot be read:"
            f" {exc}",
            "'patchstack undo' goes back to the state before it",
        ) from exc


def traced_from(git: Git, series: Series, name: str, state: State) -> str | None:
    """Where the upstream commits of a stop's conflicting lines are traced from: the old base;
    for a deferred patch brought back onto the base (``push NAME``: no range of its own),
    the base its deferral's commit was made on, as the refresh's stop at it traced."""
    mark = series.deferred.get(name)
    if not state.undefer or state.old_base != state.new_base or mark is None:
        return state.old_base
    return made_on(git, mark.commit, state.new_base) or state.old_base


def made_on(git: Git, commit: str, target: str) -> str | None:
    """The base a deferred patch's change (its deferral's ``commit``) was made on, as the
    target's history holds it (their merge base): where the upstream commits that made it
    conflict are traced from, for a patch still deferred as for one brought back (the series
    base moved on past them: the day after). None where it is the target itself or none."""
    made = git.merge_base(commit, target)
    return made if made and made != target else None
