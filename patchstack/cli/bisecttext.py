"""What ``bisect`` prints: each step as it ends, the answer, where patches stop applying, and
the table of steps. Pure: values in, lines out."""

from __future__ import annotations

from collections.abc import MutableMapping

from ..commands.bisect import BisectResult, Step
from ..commands.bisect_run import Stop
from .conflicttext import render_conflict
from .output import style


def short(oid: str | None) -> str:
    return (oid or "?")[:10]


def testing_line(label: str, commit: str, subject: str, k: int, left: tuple[int, int]) -> str:
    """The line a step starts with: the commit, and how far the bisect has come."""
    about, doubt = left
    where = f"step {k}, ~{about} left, {doubt} in doubt"
    return f"bisect{label}: testing {short(commit)} {subject} ({where})"


def step_lines(
    step: Step, seen: MutableMapping[tuple[object, ...], str], verbose: bool
) -> list[str]:
    """The lines under "bisect: testing ...": the verdict (with the versions it built when
    they are not the series now); for a skip, what did not apply, and with ``verbose`` the
    whole conflict report (once per report)."""
    timing = ""
    if step.status is not None:
        timing = f" ({step.seconds:.1f} s, cached)" if step.cached else f" ({step.seconds:.1f} s)"
    head = f"  -> {step.verdict}: {step.why}{timing}"
    tail = ""
    if step.plan is not None and not step.plan.current:
        tail = f"; patches as in {step.plan.label}"
    c = step.conflict
    if c is None:
        return [head + tail]
    if step.tried:
        tail += f" ({len(step.tried) + 1} versions tried)"
    if not verbose:  # one line a skip: the patch and its files, once
        brief = (c.patch, c.files)
        if brief in seen:
            return [f"{head} (as at {seen[brief]}){tail}"]
        seen[brief] = short(step.commit)
        files = ", ".join(c.files[:3]) + (
            f" and {len(c.files) - 3} more" if len(c.files) > 3 else ""
        )
        hunks = f", {len(c.hunks)} hunk(s)" if c.hunks else ""
        return [f"{head}: {files or 'its files'}{hunks}{tail} (--verbose shows the conflict)"]
    head += tail
    out = [head, *(f"     tried: {label}" for label in step.tried)]
    key = (c.patch, c.files, c.hunks, c.detail)
    if key in seen:
        out.append(f"     (the same conflict as at {seen[key]})")
        return out
    seen[key] = short(step.commit)
    return out + ["     " + line for line in render_conflict(c, full=True)]


def stop_line(stop: Stop, r: BisectResult) -> str:
    """ "from f08726fd56 (subject) on, P does not apply", with how exact the ends are."""

    def at(i: int) -> str:
        oid, subject = r.at(i)
        return f"{short(oid)} ({subject[:50]})" if i else f"GOOD ({short(oid)})"

    if stop.last >= r.commits and stop.after is None:
        span = f"from {at(stop.first)} on"
    elif stop.first == stop.last:
        span = f"at {at(stop.first)} only"
    else:
        span = f"from {at(stop.first)} to {short(r.at(stop.last)[0])}"
    notes = []
    if stop.before is not None and stop.before < stop.first - 1:
        notes.append(f"it applied at {short(r.at(stop.before)[0])}, the commits between untried")
    if stop.after is not None:
        again = "again at" if stop.after == stop.last + 1 else "at"
        notes.append(f"it applies {again} {short(r.at(stop.after)[0])}")
    return f"  {span}, {stop.patch} does not apply" + (f" ({'; '.join(notes)})" if notes else "")


SHOWN = 10  # patch names listed before "... and N more"
RUN = 4  # skipped steps in a row from which the table shows them as one row


def result_lines(r: BisectResult, verbose: bool = False) -> list[str]:
    carried = ", ".join(r.selected[: None if verbose else SHOWN]) if r.selected else "none"
    if not verbose and len(r.selected) > SHOWN:
        carried += f" and {len(r.selected) - SHOWN} more (--verbose lists them)"
    span = f"{r.commits} commit(s) after {short(r.good)} up to {short(r.bad)}"
    out = [f"{span}; carried patches ({len(r.selected)}): {carried}"]
    if r.outcome == "found" and r.culprit:
        out.append(style(f"first failing commit: {r.culprit[0]} {r.culprit[1]}", bold=True))
        if r.shared:
            out.append("  it changes files the carried patches touch:")
            out += [f"    {path}  ({', '.join(names)})" for path, names in r.shared]
        else:
            out.append("  it changes no file the carried patches touch")
    elif r.outcome == "ambiguous":
        note = "the first failing commit is one of these (skipped commits hide which):"
        out.append(style(note, fg="yellow"))
        out += _candidates(r, verbose)
    else:
        why = {
            "no-failure": f"COMMAND does not fail at BAD ({short(r.bad)}) with these patches",
            "good-fails": f"COMMAND already fails at GOOD ({short(r.good)}) with these patches",
            "aborted": "COMMAND aborted the bisect (exit status 128 or above, or a signal)",
        }[r.outcome]
        out.append(style(why, fg="yellow"))
    out += [style(note, fg="yellow") for note in r.notes]
    if r.stops:
        out.append("where the carried patches do not apply:")
        out += [stop_line(s, r) for s in r.stops]
    out += ["", *table_lines(r, verbose)]
    return out


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted indexes, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _candidates(r: BisectResult, verbose: bool) -> list[str]:
    index = {oid: i for i, (oid, _s) in enumerate(r.line)}
    out = []
    for first, last in _runs(sorted(index[c] for c, _s in r.candidates)):
        if verbose or last - first < RUN:
            out += [f"  {short(r.at(i)[0])} {r.at(i)[1]}" for i in range(first, last + 1)]
        else:
            a, b = r.at(first), r.at(last)
            out.append(
                f"  {last - first + 1} commits from {short(a[0])} ({a[1][:40]}) to"
                f" {short(b[0])} ({b[1][:40]})"
            )
    return out


def table_lines(r: BisectResult, verbose: bool = False) -> list[str]:
    labels = [s.plan.label for s in r.steps if s.plan is not None]
    versions = list(dict.fromkeys(labels))
    numbered = len(versions) > 1 or any(not s.plan.current for s in r.steps if s.plan)
    rows: list[tuple[str, ...]] = [
        ("commit", "result", "patches", "time", "figure", *(("series",) if numbered else ()))
    ]
    subjects = ["subject"]
    ordered = sorted(r.steps, key=lambda s: s.index)
    k = 0
    while k < len(ordered):
        s = ordered[k]
        j = k
        while (
            not verbose
            and s.conflict is not None
            and j + 1 < len(ordered)
            and ordered[j + 1].index == ordered[j].index + 1
            and ordered[j + 1].conflict is not None
            and ordered[j + 1].conflict.patch == s.conflict.patch  # type: ignore[union-attr]
        ):
            j += 1
        if j - k + 1 >= RUN:
            assert s.conflict is not None
            cells: tuple[str, ...] = (f"{short(s.commit)}..", "skip", "conflict", "-", "-")
            rows.append(cells + (("-",) if numbered else ()))
            last = ordered[j]
            subjects.append(
                f"{j - k + 1} commits to {short(last.commit)}: {s.conflict.patch} does not apply"
            )
            k = j + 1
            continue
        patches = str(len(s.applied)) if s.conflict is None else "conflict"
        cells = (
            short(s.commit),
            s.verdict,
            patches,
            (f"{s.seconds:.1f} s" + ("*" if s.cached else "")) if s.status is not None else "-",
            f"{s.figure:g}" if s.figure is not None else "-",
        )
        if numbered:
            cells += (f"v{versions.index(s.plan.label) + 1}" if s.plan else "-",)
        rows.append(cells)
        subjects.append(s.subject[:60])
        k += 1
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row, subject in zip(rows, subjects, strict=True):
        padded = [cell.ljust(w) for cell, w in zip(row, widths, strict=True)]
        out.append("  ".join([*padded, subject]))
    if any(s.cached for s in r.steps):
        out.append("(* cached: COMMAND ran in the very same tree before; --no-cache runs it again)")
    if numbered:
        out += [f"v{k}: patches as in {label}" for k, label in enumerate(versions, 1)]
    return out
