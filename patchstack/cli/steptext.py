"""What ``refresh --steps`` prints: a line per step (its upstream range and the commit it ends
after), the step's own refresh output, and at a stop the one upstream change the step's
conflicts meet, inside the conflict report's budget."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from .output import echo

if TYPE_CHECKING:
    from ..commands.refresh.resolver import Setting
    from ..commands.refresh.steps import Stepped, StepPlan
    from ..progress import Progress


def steps_option(f: Any) -> Any:
    return click.option(
        "--steps",
        "steps_mode",
        is_flag=False,
        flag_value="culprits",
        default=None,
        metavar="[culprits|tags|N]",
        help="With --onto: get there in steps, each its own refresh (one undo each), ending"
        " just after the upstream commits that cause most conflicts (culprits, the default"
        " when no value is given), at upstream's tags, or every N first-parent commits;"
        " --continue and --skip go on through the later steps, --abort goes back to before"
        " the first.",
    )(f)


def stepped_refresh(
    ws: Any,
    how: str,
    mode: str | None,
    onto: str | None,
    drop_merged: bool,
    defer_conflicts: bool,
    bar: Progress,
    resolver: Setting | None = None,
) -> Stepped | None:
    from ..commands.refresh.steps import run

    return run(ws, how, mode, onto, drop_merged, defer_conflicts, bar, resolver)


def step_line(plan: StepPlan, k: int) -> str:
    """``step 2 of 4: 87 upstream commit(s), ending after 1a2b3c4d5e Deepseek V4 (culprit of
    31 conflict hunk(s))``."""
    end = plan.ends[k]
    why = end.why
    if end.why == "culprit":
        why = f"culprit of {end.conflicts} conflict hunk(s)"
    elif end.why == "target":
        why = plan.target_name
    subject = plan.subjects[k] if k < len(plan.subjects) else ""
    size = plan.sizes[k] if k < len(plan.sizes) else 0
    return (
        f"step {k + 1} of {len(plan.ends)}: {size} upstream commit(s), ending after"
        f" {end.commit[:10]} {subject}".rstrip()
        + f" ({why})"
    )


def steps_json(stepped: Stepped) -> list[dict[str, Any]]:
    plan = stepped.plan
    ran = {k: r for k, r in stepped.runs}
    return [
        {
            "step": k + 1,
            "end": end.commit,
            "subject": plan.subjects[k],
            "why": end.why,
            "conflicts": end.conflicts,
            "commits": plan.sizes[k],
            "ran": k in ran,
            "stopped": bool(ran[k].stopped) if k in ran else False,
        }
        for k, end in enumerate(plan.ends)
    ]


def print_steps(ctx: click.Context, stepped: Stepped, verbose: bool) -> None:
    from .refreshtext import print_refresh

    plan = stepped.plan
    n = len(plan.ends)
    for k, result in stepped.runs:
        if result.aborted:
            print_refresh(ctx, result, verbose)
            echo(ctx, f"the stepped refresh onto {plan.target_name} is over (--abort)")
            return
        echo(ctx, step_line(plan, k))
        if result.stopped:
            result = replace(result, stopped=_step_stop(plan, k, result.stopped))
        print_refresh(ctx, result, verbose)
        if result.stopped:
            echo(
                ctx,
                f"hint: a stepped refresh ({k} of {n} step(s) done): '--continue' and '--skip'"
                " go on with the later steps, 'patchstack undo' takes back one step, '--abort'"
                " goes back to before the first",
                err=True,
            )
            return
    if stepped.runs and not stepped.last.stopped:
        echo(ctx, f"all {n} step(s) done: the series is on {plan.target_name}")


def _step_stop(plan: StepPlan, k: int, stopped: Any) -> Any:
    """The stop's report with the hunks the step's end commit changed first (its one upstream
    change, beside the patch's hunk), and a line naming the step and that change."""
    end = plan.ends[k]

    def meets(h: Any) -> bool:
        return any(u.oid == end.commit for u in h.upstream)

    hunks = sorted(stopped.hunks, key=lambda h: not meets(h))
    met = sum(map(meets, hunks))
    said = f"step {k + 1} of {len(plan.ends)}: its conflicts meet upstream's change up to"
    said += f" {end.commit[:10]} {plan.subjects[k]}".rstrip()
    if met:
        said += f" ({met} of {len(hunks)} conflicting hunk(s) changed by it, shown first)"
    note = "; ".join(x for x in (said, stopped.note) if x)
    return replace(stopped, hunks=tuple(hunks), note=note)
