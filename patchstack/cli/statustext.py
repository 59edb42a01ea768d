"""What ``status`` prints: the state in lines that scale with the series, and the next step.

Pure: takes the status and drift values and returns lines; the command prints them. A long
list (applied patches, upstream commits) shows its first entries and a count; ``--verbose``
shows everything (``--json`` is always complete).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..commands.advice import next_step
from ..commands.refresh.drift import Drift
from ..commands.status import PatchState, StatusResult
from ..commands.tracked import upstream_note
from ..commands.upstream import IN_BASE, IN_BASE_UNPROVEN, NOT_IN_BASE, UNKNOWN, Standing
from ..model.fields import NONE, summary
from ..model.marks import describe, push_back_hint
from .output import LINE_WIDTH, SUBJECT_SHOWN, fitted, some_names, style, tag_text

SHOWN = 10  # entries of a long list shown without --verbose
# An upstream commit's line names files and patches (`some_names`), each list within half
# a summary line's width: the line stays a line.
NAMES_WIDTH = LINE_WIDTH // 2


def _capped(lines: list[str], verbose: bool, what: str) -> list[str]:
    if verbose or len(lines) <= SHOWN:
        return lines
    return [*lines[:SHOWN], f"  ... and {len(lines) - SHOWN} more {what} (--verbose lists them)"]


def drift_lines(drift: Drift, verbose: bool, on_branch: bool = True) -> list[str]:
    s = "s" if drift.commits != 1 else ""
    head = (
        f"upstream moved: {drift.commits} commit{s} since the series base, to"
        f" {drift.target_name} ({drift.target[:12]})"
    )
    n = len(drift.touching)
    if n:
        head += f"; {n} touch{'es' if n == 1 else ''} files of the series:"
    else:
        head += "; none touches a file of the series" + (":" if verbose else "")
    out = [style(head, fg="yellow")]
    if drift.guessed:
        track = f"; 'git branch -u {drift.target_name}' makes it the upstream" if on_branch else ""
        out.append(f"  (HEAD has no @{{upstream}}: {drift.target_name} is {drift.guessed}{track})")
    touching = {c.oid for c in drift.touching}
    rows = [
        f"  {c.oid[:10]} {fitted(c.subject, SUBJECT_SHOWN, verbose)}"
        f"  ({some_names(c.files, verbose, width=NAMES_WIDTH, noun=('file', 'files'))}:"
        f" {some_names(c.patches, verbose, width=NAMES_WIDTH, noun=('patch', 'patches'))})"
        for c in drift.touching
    ]
    out += _capped(rows, verbose, "commit(s) touching the series")
    if verbose:
        out += [f"  {oid[:10]} {subj}" for oid, subj in drift.every if oid not in touching]
    return out


def status_lines(
    st: StatusResult, drift: Drift | None, verbose: bool, problem: str | None = None
) -> list[str]:
    """``problem``: what a git operation in progress means for patchstack, when there is one."""
    stopped = st.refresh_stopped
    out = [style(problem, fg="red")] if problem else []
    if st.stopped:
        at = st.stopped
        out.append(
            style(
                f"{at.verb} stopped at a conflict in {at.patch} (patch"
                f" {at.place + 1} of {at.total}, onto {at.onto}): resolve the markers, then"
                f" '{at.command} --continue' (or '{at.command} --abort')",
                fg="red",
            )
        )
        out += _capped([f"  conflict: {path}" for path in at.conflicted], verbose, "file(s)")
    elif stopped:
        out.append(style("a refresh is stopped at a conflict", fg="red"))
    if st.stepping:
        out.append(style(st.stepping, fg="yellow"))
    branch = st.branch.removeprefix("refs/heads/") if st.branch else "(detached HEAD)"
    out.append(f"branch: {branch} at {st.head[:12]}")
    base = (st.series_base or "?")[:12] + (f" (tracks {st.base_ref})" if st.base_ref else "")
    out.append(f"series base: {base}")
    if drift is not None and drift.passed_over and not stopped:
        out.append(f"  (compared with {upstream_note(drift.target_name, drift.passed_over)})")
    if st.plain_series:
        out.append(
            style(
                f"HEAD carries the {'rest of the ' if st.on_top else ''}series as"
                f" {st.plain_series} plain commit(s) (not patch commits yet)",
                fg="yellow",
            )
        )
    elif st.built_on and st.stack_base != st.series_base:
        out.append(
            f"stack base:  {st.stack_base[:12]} ({st.built_on}), on purpose: 'patchstack"
            " worktree --onto' made this worktree there; the series keeps its base"
        )
    elif st.series_base and st.stack_base != st.series_base and not stopped:
        out.append(
            style(f"stack base:  {st.stack_base[:12]} differs from the series base", fg="yellow")
        )
    if drift and drift.commits and not st.built_on and not stopped:
        out += drift_lines(drift, verbose, st.branch is not None)
    applied = [p for p in st.patches if p.applied]
    rows = []
    for p in applied:
        note = ""
        if p.matches == "differs" and stopped:  # 'refresh --patch' is refused while stopped
            command = st.stopped.command if st.stopped else "patchstack refresh"
            note = style(
                f"  commit differs from its patch file (this refresh's: '{command} --continue'"
                " rewrites the file when it ends)",
                fg="yellow",
            )
        elif p.matches == "differs":
            note = style(
                "  commit differs from its patch file (adopt: 'patchstack refresh --patch"
                f" {p.name}'; drop: '--discard-changes')",
                fg="red",
            )
        elif p.matches == "edited":
            note = style(
                "  patch file edited since it was applied (push, pop and refresh apply"
                " the new version)",
                fg="yellow",
            )
        elif p.matches == "carried":
            note = "  (carried by a merge)"
        rows.append((bool(note), f"  + {p.name} [{_tags(p)}]{note}"))
    if st.placed:  # a first import stopped: no series yet, its patches so far
        out.append(f"placed by the import so far: {len(st.placed)}")
        rows = [(False, f"  + {name}") for name in st.placed]
    else:
        out.append(f"applied: {len(applied)} of {len(st.patches)}")
    out += _list(rows, verbose, "applied")
    held = set(st.in_base)
    unapplied = []
    going = (st.stopped.command if st.stopped else "patchstack refresh") if stopped else None
    for p in st.patches:
        if not p.applied:
            mark = st.mark_of(p.name)
            note = describe(mark) if mark else "the base holds it" if p.name in held else ""
            line = f"  - {p.name} [{_tags(p)}]" + (f"  ({note})" if note else "")
            unapplied.append((bool(note), line))
    if unapplied:
        out.append(f"unapplied: {len(unapplied)}")
        out += _list(unapplied, verbose, "unapplied")
    step = next_step(st, drift)
    hint = push_back_hint(st.marks, going)
    if hint and "brings a deferred patch back" not in step:
        out.append(f"  {hint}")
    for problem in st.disagreements:
        if stopped and problem == "a refresh is stopped at a conflict":
            continue  # (the first line says where it stopped)
        out.append(style(f"  ! {problem}", fg="red"))
    out += standing_lines(st.standings, st.today, verbose)
    if st.edits_in_patches:
        out.append("uncommitted edits in files of applied patches (refresh folds them):")
        out += _capped(
            [f"  {path}  ({', '.join(n)})" for path, n in st.edits_in_patches.items()],
            verbose,
            "file(s)",
        )
    if st.edits and st.operation:
        out.append(f"uncommitted edits: {len(st.edits)} file(s), the {st.operation[0]}'s")
    elif st.edits:
        out.append("uncommitted edits in no patch:")
        out += _capped([f"  {path}" for path in st.edits], verbose, "file(s)")
    if st.submodules:
        out.append("changes inside submodules (a patch holds only the commit a submodule is at):")
        out += _capped([f"  {path}" for path in st.submodules], verbose, "submodule(s)")
    if st.untracked:
        out.append(f"untracked files: {len(st.untracked)}")
    out.append(style("next: " + step, bold=True))
    return out


def _tags(p: PatchState) -> str:
    """A patch's tag (coloured) and labels."""
    return tag_text(p.tag) + "".join(f", {label}" for label in p.labels)


def _list(rows: Sequence[tuple[bool, str]], verbose: bool, what: str) -> list[str]:
    """Every row with a note, and the others up to the cap."""
    if verbose or len(rows) <= SHOWN:
        return [text for _n, text in rows]
    noted = [text for n, text in rows if n]
    plain = [text for n, text in rows if not n]
    room = max(0, SHOWN - len(noted))
    out = noted + plain[:room]
    if len(plain) > room:
        out.append(f"  ... and {len(plain) - room} more {what} (--verbose lists them)")
    return out


def standing_lines(found: Sequence[Standing], today: date | None, verbose: bool) -> list[str]:
    """Which patches have no probe, and where the patches stand upstream; nothing when no
    patch of the series has a probe, nor any upstream field."""
    out = []
    probed = [s for s in found if s.probe]
    if probed:
        line = f"probes: {len(probed)} of {len(found)} patch(es)"
        missing = [s.name for s in found if not s.probe]
        if missing:
            line += "; none: " + some_names(missing, verbose, SHOWN)
        out.append(line)
    if any(s.upstream.state != NONE for s in found):
        out.append("upstream: " + summary([s.upstream for s in found], today or date.today()))
    notes = {
        IN_BASE: "which the series base contains: it is upstream already (delete it, or"
        " 'refresh --drop-merged')",
        IN_BASE_UNPROVEN: "which the series base contains, but no refresh proved the base holds"
        " its change (upstream may have reverted or changed it): keep it ('patchstack check'"
        " says where it stands)",
        NOT_IN_BASE: "which the series base does not contain yet",
        UNKNOWN: "unknown to this repository ('git fetch' the upstream that has it)",
    }
    for s in found:
        if s.applied_check is not None:
            commit = (s.upstream.commit or "")[:10]
            text = f"  {s.name}: applied upstream as {commit}, {notes[s.applied_check]}"
            out.append(style(text, fg="yellow") if s.applied_check != NOT_IN_BASE else text)
    return out


def standing_json(s: Standing) -> dict[str, Any]:
    return {
        "probe": s.probe,
        "upstream": {**s.upstream.to_json(), "applied_check": s.applied_check},
    }
