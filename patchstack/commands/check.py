"""``check``: would the series apply on a target? The same replay as ``refresh`` against
``--onto REV`` (default ``@{upstream}``, else HEAD below its applied patches), computing
objects only: no file, ref or index is written, and the merge cache is not saved. A conflicting
patch is left out and the replay goes on, so one run lists every conflict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..checkout import Checkout
from ..engine.merging import blame
from ..engine.placer import Placer
from ..engine.replay import commit_chain, labels, old_chain, replay, steps
from ..engine.verdicts import classify
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.selection import Selector, check_words
from ..transaction import refresh_error
from .refresh.settle import Verdict
from .state import make_engine, read_stack, resolve_rev


@dataclass(frozen=True)
class CheckResult:
    target: Oid
    target_name: str
    old_base: str | None
    verdicts: tuple[Verdict, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "target_name": self.target_name,
            "base": self.old_base,
            "ok": self.ok,
            "patches": [
                {"name": v.name, "tag": v.tag, "verdict": v.verdict} for v in self.verdicts
            ],
            "conflicts": [c.to_json() for c in self.conflicts],
        }


def check(
    ws: Checkout,
    onto: str | None,
    sel: Selector,
    progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    """Would the series apply on ``onto``? Objects only: no file, ref or index is written.
    Refused while a refresh is stopped: the series is half rewritten then."""
    git = ws.git
    stopped = refresh_error(ws)
    if stopped:
        raise stopped
    series = ws.load_series()
    stack = read_stack(git)
    if onto:
        target, name = resolve_rev(git, onto), onto
    else:
        upstream = git.upstream_of_head()
        found = git.rev_parse(upstream) if upstream else None
        if found is None:
            target, name = stack.base, "HEAD" if not stack.applied else "HEAD (below the stack)"
        else:
            target, name = found, upstream or "HEAD"
    check_words(series, sel)
    skip = frozenset(e.name for e in series.entries if not sel.keeps_tag(e.tag, e.labels))
    engine = make_engine(ws, series, stack)
    try:
        chain = old_chain(git, engine, series)
        plan = steps(series, chain, {})
        placer = Placer(engine, target, [s.name for s in plan])
        done, conflicts = replay(
            git,
            plan,
            0,
            git.tree_of(target),
            labels(series.base, target, name),
            keep_going=True,
            skip=skip,
            placer=placer,
            progress=progress,
        )
        _top, commits = commit_chain(engine, target, done)
        classified = classify(git, engine, plan, done, commits)
        reports = []
        for n, _t, m in conflicts:
            report = blame(git, n, m, series.base, target)
            if skip:  # --only/--except: the unselected patches the conflict needs
                selected = [e.name for e in series.entries if e.name not in skip]
                needs = engine.culprits(n, report.hunks, report.files, selected)
                report = replace(report, culprits=needs)
            reports.append(report)
    finally:
        engine.close()
    bad = {c[0] for c in conflicts}
    verdicts = tuple(
        Verdict(e.name, e.tag, "conflict" if e.name in bad else classified.verdicts[e.name])
        for e in series.entries
        if e.name not in skip
    )
    return CheckResult(target, name, series.base, verdicts, tuple(reports))
