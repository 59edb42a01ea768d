"""``refresh --onto TARGET --steps [culprits|tags|N]``: carry the series across a big drift in
steps, each step an ordinary ``refresh --onto END`` (its own journaled operation: one ``undo``
per step; ``--continue``/``--skip`` work inside it; its recorded resolutions reused by the later
steps, as by any replay), the last one onto TARGET itself.

The plan (`model.steps`) is kept in the git directory (``patchstack/steps.json``) from before
the first step until the last one is published. Which step comes next is never stored: it is
read from the series' base (the start, or a step's end), so a ``kill -9`` between steps, an
``undo`` of a step or a crash in one (then ``undo``) leaves a plan that still says where it is
(`live`). ``--abort`` goes back to the state before the first step (one operation, which
``undo`` takes back, the stepped refresh with it). A plan whose steps are all done, or that
was aborted, sleeps in its file until the next ``--steps`` replaces it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ... import lock
from ...checkout import Checkout
from ...errors import PatchstackError, RefusedError
from ...files import read_bytes, write_atomic
from ...journal.oplog import current_refresh
from ...journal.snapshot import Snapshot, take_snapshot
from ...model import steps as plans
from ...model.ids import Oid
from ...model.selection import Selector
from ...transaction import Plan, Restore, publish
from ..state import resolve_rev
from . import plan_path
from .settle import RefreshResult

if TYPE_CHECKING:
    from .resolver import Setting

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class StepPlan:
    start: str  # the series' base before the first step
    target: str
    target_name: str
    mode: str  # "culprits", "tags" or "every N"
    ends: tuple[plans.StepEnd, ...]
    subjects: tuple[str, ...]  # each end's subject line
    sizes: tuple[int, ...]  # upstream first-parent commits in each step
    drop_merged: bool
    defer_conflicts: bool
    before: Snapshot  # the state before the first step, which --abort restores
    # The resolver the user started it with (``--resolver`` or ``patchstack.resolver``), kept
    # in the git directory (never the series folder) for every step, as a stop keeps it.
    resolver: str | None = None
    resolver_seconds: float | None = None

    def next_step(self, base: str | None) -> int | None:
        """The step to run from the series' base ``base`` (len(ends): all done); None when
        the base is neither the start nor a step's end."""
        if base == self.start:
            return 0
        found = [i for i, e in enumerate(self.ends) if e.commit == base]
        return found[-1] + 1 if found else None

    def to_json(self) -> str:
        data = asdict(self)
        data["before"] = self.before.to_json()
        return json.dumps({"version": 1, **data}, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> StepPlan:
        data = json.loads(text)
        data.pop("version", None)
        data["ends"] = tuple(plans.StepEnd(**e) for e in data["ends"])
        data["before"] = Snapshot.from_json(data["before"])
        for key in ("subjects", "sizes"):
            data[key] = tuple(data[key])
        return StepPlan(**data)


@dataclass(frozen=True)
class Stepped:
    plan: StepPlan
    runs: tuple[tuple[int, RefreshResult], ...]  # (step index, its result), this command's

    @property
    def last(self) -> RefreshResult:
        return self.runs[-1][1]


def load(ws: Checkout) -> StepPlan | None:
    """The stepped refresh under way, or None."""
    path = plan_path(ws)
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return StepPlan.from_json(data.decode("utf-8"))
    except (ValueError, KeyError, TypeError) as exc:
        raise PatchstackError(
            f"{path}: the stepped refresh's plan cannot be read: {exc}",
            f"remove {path} (every step done so far stays; 'patchstack undo' takes one back)",
        ) from exc


def live(ws: Checkout) -> StepPlan | None:
    """The stepped refresh under way: its plan, when the series' base is the end of one of its
    steps but the last, or a refresh is stopped inside one of its steps; else None (done,
    aborted, or never begun: a kill before the first step published)."""
    plan = load(ws)
    if plan is None:
        return None
    n = len(plan.ends)
    if current_refresh(ws.git) is not None:
        from .stopped import load as stopped_state

        state = stopped_state(ws)
        k = plan.next_step(state.old_base)
        inside = k is not None and k < n and state.new_base == plan.ends[k].commit
        return plan if inside and state.route == "onto" else None
    k = plan.next_step(ws.load_series().base)
    return plan if k is not None and 0 < k < n else None


def _counts(ws: Checkout, target: str, progress: Progress) -> dict[str, int]:
    """Conflict hunks per upstream commit, as ``check --onto TARGET`` traces them."""
    from ..check import check

    result = check(ws, target, Selector(None, True, None, None), progress, full=True)
    counts: dict[str, int] = {}
    for conflict in result.conflicts:
        for hunk in conflict.hunks:
            for commit in {u.oid for u in hunk.upstream}:
                counts[commit] = counts.get(commit, 0) + 1
    return counts


def start(
    ws: Checkout,
    onto: str | None,
    mode_text: str,
    drop_merged: bool = False,
    defer_conflicts: bool = False,
    progress: Progress = None,
    resolver: Setting | None = None,
) -> Stepped:
    mode = plans.parse_mode(mode_text)
    if not onto:
        raise PatchstackError("--steps needs --onto TARGET", "e.g. --onto origin/main --steps")
    if live(ws) is not None:
        raise RefusedError(
            "a stepped refresh is under way",
            "'patchstack refresh --continue' goes on with it; '--abort' goes back",
        )
    git = ws.git
    series = ws.load_series()
    target = resolve_rev(git, onto)
    start_base = series.base
    if start_base is None:
        raise PatchstackError("the series has no base to step from", "run a plain refresh")
    commits = git.commit_range(f"{start_base}..{target}", first_parent=True)
    order: list[str] = [c.oid for c in commits]
    if mode == plans.CULPRITS and order:
        ends = plans.plan(mode, order, counts=_counts(ws, target, progress))
    elif mode == plans.TAGS:
        tags = {str(k): v for k, v in git.tagged_commits().items()}
        ends = plans.plan(mode, order, tags=tags)
    else:
        ends = plans.plan(mode, order)
    if not ends:  # nothing upstream to step through: the one-shot refresh
        ends = (plans.StepEnd(target, "target"),)
    at = {c: i for i, c in enumerate(order)}
    subject: dict[str, str] = {c.oid: c.message.split("\n", 1)[0] for c in commits}
    bounds = [-1, *(at.get(e.commit, len(order) - 1) for e in ends)]
    plan = StepPlan(
        start=start_base,
        target=target,
        target_name=onto,
        mode=mode if isinstance(mode, str) else f"every {mode}",
        ends=ends,
        subjects=tuple(subject.get(e.commit, "") for e in ends),
        sizes=tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False)),
        drop_merged=drop_merged,
        defer_conflicts=defer_conflicts,
        before=take_snapshot(ws),
        resolver=resolver.command if resolver else None,
        resolver_seconds=resolver.seconds if resolver else None,
    )
    write_atomic(plan_path(ws), plan.to_json().encode())
    return _run(ws, plan, progress)


def run(
    ws: Checkout,
    how: str,
    mode: str | None,
    onto: str | None,
    drop_merged: bool = False,
    defer_conflicts: bool = False,
    progress: Progress = None,
    resolver: Setting | None = None,
) -> Stepped | None:
    """``refresh`` when it is stepped (``how``: start, continue, skip or abort): with
    ``--steps``, or while a stepped refresh is under way; None otherwise (a plain refresh).
    ``resolver``: the one each step hands its conflicts to (`resolver.setting`)."""
    if how == "start":
        if mode is None:
            return None
        return start(ws, onto, mode, drop_merged, defer_conflicts, progress, resolver)
    plan = live(ws)
    if plan is None:
        return None
    if how == "abort":
        k = plan.next_step(ws.load_series().base)
        return Stepped(plan, ((k or 0, abort(ws)),))
    from .resume import continue_, skip

    if current_refresh(ws.git) is None:
        if how == "skip":
            return None  # nothing to skip: refused as a plain --skip is
        stepped = go_on(ws, None, progress)
        if not stepped.runs:
            raise PatchstackError(
                f"the stepped refresh is done: the series' base is {plan.target_name}",
                "nothing to continue",
            )
        return stepped
    first = continue_(ws, progress) if how == "continue" else skip(ws, progress)
    return go_on(ws, first, progress)


def go_on(ws: Checkout, first: RefreshResult | None, progress: Progress = None) -> Stepped:
    """After ``--continue``/``--skip`` finished a step (``first``), or with no refresh stopped:
    the later steps of the stepped refresh under way."""
    plan = load(ws)
    assert plan is not None
    if first is not None and first.stopped:
        k = plan.next_step(first.old_base)
        return Stepped(plan, ((k if k is not None else 0, first),))
    done: tuple[tuple[int, RefreshResult], ...] = ()
    if first is not None:
        k = plan.next_step(first.new_base)
        done = ((k - 1 if k else 0, first),)
    more = _run(ws, plan, progress)
    return Stepped(plan, done + more.runs)


def _run(ws: Checkout, plan: StepPlan, progress: Progress) -> Stepped:
    from ...model.proposal import DEFAULT_SECONDS
    from .resolver import Setting
    from .start import refresh

    runs: list[tuple[int, RefreshResult]] = []
    while True:
        base = ws.load_series().base
        k = plan.next_step(base)
        if k is None:
            raise RefusedError(
                f"the series' base ({(base or '?')[:12]}) is neither where the stepped refresh"
                " started nor the end of one of its steps",
                "'patchstack refresh --abort' goes back to before its first step",
            )
        if k >= len(plan.ends):
            break
        last = k == len(plan.ends) - 1
        same = last and resolve_rev(ws.git, plan.target_name) == plan.target
        onto = plan.target_name if same else plan.ends[k].commit
        how = (
            Setting(plan.resolver, plan.resolver_seconds or DEFAULT_SECONDS)
            if plan.resolver
            else None
        )
        result = refresh(
            ws, onto, plan.drop_merged, None, False, progress, plan.defer_conflicts, how
        )
        runs.append((k, result))
        if result.stopped:
            return Stepped(plan, tuple(runs))
        lock.point("step-done")  # between two steps: a kill here loses nothing
    return Stepped(plan, tuple(runs))


def abort(ws: Checkout) -> RefreshResult:
    """Back to the state before the first step, in one operation; the plan is forgotten."""
    plan = load(ws)
    assert plan is not None
    head = ws.git.head()
    assert head is not None
    publish(ws, Plan("refresh", head, Oid(plan.before.head), worktree=Restore(plan.before)))
    return RefreshResult(
        "onto",
        plan.start,
        Oid(plan.target),
        plan.target_name,
        (),
        Oid(plan.before.head),
        (),
        aborted=True,
    )


def where(ws: Checkout) -> str | None:
    """Where the stepped refresh under way is, for ``status``; None when there is none."""
    try:
        plan = live(ws)
    except PatchstackError as exc:
        return str(exc)
    if plan is None:
        return None
    k = plan.next_step(ws.load_series().base) or 0
    n = len(plan.ends)
    end = plan.ends[k]
    return (
        f"a stepped refresh onto {plan.target_name}: {k} of {n} step(s) done; step {k + 1}"
        f" ends after {end.commit[:10]} {plan.subjects[k]}".rstrip()
    )
