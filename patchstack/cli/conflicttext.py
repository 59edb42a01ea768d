"""What a conflict looks like on a terminal: the one conflict report (`render_conflict`, short
by default, whole with ``--verbose``) and the one-line-per-primary summary of many."""

from __future__ import annotations

import os
import re
from typing import Any

from .output import SUBJECT_SHOWN, fitted, some_names, verdict_word

STOP_BUDGET = 60  # lines of one conflict report without --verbose, whatever the patch's size
REPORT_FLOOR = 24  # lines a report keeps at a stop whose lines above it are many
DIFF_LINES = 6  # lines of each of a hunk's two diffs in the short report
FILES_SHOWN = 5  # files named on the report's file line
CULPRITS_SHOWN = 3  # upstream commits named under a hunk
RELOCATION_LINES = 12  # lines on where moved code went, in the short report
CARRIED_SHOWN = 2  # relocated hunks named under a file, in the short report
DETAIL_SHOWN = 12  # lines of git's own words on a patch that does not apply, in the short report


def render_conflict(c: Any, full: bool = False, budget: int = STOP_BUDGET) -> list[str]:
    """A conflict report (`model.conflict.Conflict`): the patch, its files, and per hunk where
    it is, what upstream did there and what the patch does (each as a diff from what the patch
    expected), and the upstream commits that changed those lines (or touched the file).

    Short (the default) it fits a screen: at most `STOP_BUDGET` lines, each diff capped, at
    most `CULPRITS_SHOWN` commits a hunk, and a last line counting what was left out. ``full``
    (``--verbose``) prints every file and hunk with the three versions whole, as ``--json``
    holds them. ``budget``: the lines the short report may take (a stop gives it what the
    lines above and below it leave of `STOP_BUDGET`); never more hunks than `printed_hunks`
    counts, so every hunk printed was traced."""
    lines, tail = _head_and_tail(c, full)
    hunks = list(c.hunks)
    shown = _shown(c, full, len(lines), len(tail), budget=budget)
    primary = getattr(c, "kind", "primary") != "knock-on"
    for h in hunks[:shown]:
        lines += _hunk_full(h, primary) if full else _hunk_short(h, primary)
    if shown < len(hunks):
        rest = hunks[shown:]
        where = len({h.path for h in rest})
        lines.append(
            f"  ... {len(rest)} more conflicting hunk(s) in {where} file(s)"
            " (--verbose or --json show every one)"
        )
    return lines + tail


def tracer(full: bool) -> Any:
    """What a command that may stop at a conflict is given as `Checkout.printed`: the short
    report's `printed_hunks`, or None (trace every hunk) for ``--verbose`` and ``--json``, or
    with ``PATCHSTACK_TRACE_ALL=1`` (the differential tests' plain algorithm)."""
    return None if full or os.environ.get("PATCHSTACK_TRACE_ALL") == "1" else printed_hunks


def printed_hunks(c: Any) -> int:
    """How many of ``c``'s hunks, from the first, its short report prints at most, whatever
    their upstream commits: each counted with its commits at their shortest (one line,
    "unknown", or none for a knock-on), so a longer block only ends the report sooner.
    Tracing these hunks is tracing every one the report prints (`Checkout.printed`)."""
    lines, tail = _head_and_tail(c, False)
    return _shown(c, False, len(lines), len(tail), bare=True)


def _shown(
    c: Any, full: bool, head: int, tail: int, bare: bool = False, budget: int = STOP_BUDGET
) -> int:
    """How many hunks fit ``budget`` after ``head`` lines and before ``tail`` (every one
    when ``full``); ``bare``: each hunk counted without its upstream commits."""
    hunks = list(c.hunks)
    if full:
        return len(hunks)
    primary = getattr(c, "kind", "primary") != "knock-on"
    used, shown = head, 0
    for h in hunks:
        size = len(_hunk_short(h, primary, bare))
        if shown and used + size + tail + 1 > budget:
            break
        used += size
        shown += 1
    return shown


def _head_and_tail(c: Any, full: bool) -> tuple[list[str], list[str]]:
    """A report's lines before its hunks (the patch, its files) and after them."""
    lines = [f"conflict in patch {c.patch}"]
    if getattr(c, "held", False) and getattr(c, "kind", "primary") != "knock-on":
        lines.append(f"  primary: with {c.root} applied it still conflicts; it waits for {c.root}")
    elif getattr(c, "held", False):
        lines.append(f"  a knock-on of {c.root}: it merges, but not as its own change")
    elif getattr(c, "kind", "primary") == "knock-on" and c.root:
        lines.append(
            f"  a knock-on: it conflicts only because {c.root} (deferred or conflicting) is"
            " missing; resolving that one places it again"
        )
    lines += relocation_lines(c, full)
    files = list(c.files)
    if full or len(files) <= FILES_SHOWN:
        lines += [f"  file {path}" for path in files]
    else:
        lines.append(f"  files ({len(files)}): {some_names(files, False, FILES_SHOWN)}")
    tail = []
    if c.culprits:
        tail.append("  unselected patches touching these lines: " + ", ".join(c.culprits))
        tail.append("  ('patchstack graph' shows which patch leans on which)")
    if c.detail and not c.hunks:
        detail = c.detail.splitlines()
        if not full and len(detail) > DETAIL_SHOWN + 1:  # (git apply says two lines a file)
            left = len(detail) - DETAIL_SHOWN
            detail = [*detail[:DETAIL_SHOWN], f"... and {left} more line(s) (--verbose shows them)"]
        tail += ["  " + ln for ln in detail]
    if c.note:
        tail.append("  " + (c.note if full else _short_note(c.note)))
    return lines, tail


def _short_note(note: str) -> str:
    """A stop's note with the built-in rule's proposals, when there are several (one a file,
    on a big patch hundreds), counted in one clause, and the files whose records are for
    other lines named as `some_names` names them: the line stays a line."""
    from ..commands.refresh.reuse import OTHER_LINES, PROPOSED

    note = re.sub(
        r"(?P<head>the recorded resolutions of .+?'s conflict hunks in )(?P<files>.+?)"
        r"(?P<tail> are " + re.escape(OTHER_LINES) + ")",
        lambda m: (
            m["head"]
            + some_names(m["files"].split(", "), False, noun=("file", "files"))
            + m["tail"]
        ),
        note,
    )
    parts = re.split("; (?=" + re.escape(PROPOSED) + ")", note)
    said = [_PROPOSAL.fullmatch(p) for p in parts]
    found = [m for m in said if m]
    if len(found) < 2:
        return note
    why: dict[str, int] = {}
    for m in found:
        why[m["why"]] = why.get(m["why"], 0) + int(m["n"] or 1)
    hunks, files = sum(why.values()), len({m["path"] for m in found})
    reasons = "; ".join(f"{n} as {w}" for w, n in why.items())
    summary = (
        f"{PROPOSED.removesuffix(', as ')}: {hunks} conflict hunks in {files} files ({reasons}),"
        " shown resolved; check before --continue (--verbose names each)"
    )
    return "; ".join([*(p for p, m in zip(parts, said, strict=True) if not m), summary])


_PROPOSAL = re.compile(
    r"proposed by a built-in rule, as (?P<why>.*?): (?:the conflict hunk|(?P<n>\d+) conflict"
    r" hunks) of (?P<path>.+) \([^()]*\), shown resolved; check before --continue"
)


def relocation_lines(c: Any, full: bool = True) -> list[str]:
    """Where the hunks of each file upstream deleted (or moved code out of) went
    (`engine.relocate`): a proposal. ``full``: every hunk; else the files with a relocated
    hunk first, each hunk carried (at most `CARRIED_SHOWN`) and one line per reason for those
    not carried, within `RELOCATION_LINES` lines, and a count of the files left out."""
    relocations = list(getattr(c, "relocations", ()))
    if not full:
        relocations.sort(key=lambda r: not r.carried)
    lines: list[str] = []
    for k, r in enumerate(relocations):
        said = " (a proposal, not yet the patch)" if r.carried else ""
        block = [f"  {r.summary()}{said}"]
        carried = [m for m in r.hunks if m.dest is not None]
        for m in carried if full else carried[:CARRIED_SHOWN]:
            block.append(f"    {r.hunk_said(m)}")
        if not full and len(carried) > CARRIED_SHOWN:
            block.append(f"    ... {len(carried) - CARRIED_SHOWN} more hunk(s) relocated")
        missed = [m for m in r.hunks if m.dest is None]
        if full:
            block += [f"    {r.hunk_said(m)}" for m in missed]
        else:
            reasons = dict.fromkeys(m.reason for m in missed)
            for reason in reasons:
                n = sum(m.reason == reason for m in missed)
                block.append(f"    {n} hunk(s) not relocated, each for this reason: {reason}")
        left = len(relocations) - k
        if not full and lines and len(lines) + len(block) + 1 > RELOCATION_LINES:
            lines.append(
                f"  ... {left} more file(s) upstream deleted or moved code out of"
                " (--verbose or --json show each)"
            )
            break
        lines += block
    return lines


def proposal_hint(c: Any) -> list[str]:
    """What a refresh stopped with a relocation (a proposal), or at a file upstream deleted
    with no hunk relocated (no conflict markers: Megatron-LM's CODEOWNERS), asks of the user."""
    if getattr(c, "relocated", False):
        return [
            "hint: the relocated hunks are in the work tree as a proposal ('git diff' shows"
            " them): check them, finish or delete what was not relocated, then 'patchstack"
            " refresh --continue' makes them the patch"
        ]
    gone = [r.path for r in getattr(c, "relocations", ()) if not r.carried]
    if not gone:
        return []
    it = "it" if len(gone) == 1 else "them"
    # (not `some_names`: the user acts on each file named, up to `FILES_SHOWN`)
    names = ", ".join(gone[:FILES_SHOWN]) + (
        f" and {len(gone) - FILES_SHOWN} more" if len(gone) > FILES_SHOWN else ""
    )
    return [
        f"hint: upstream deleted {names}; the work tree holds the patch's version (no conflict"
        " markers there): 'patchstack refresh --continue' keeps it in the patch; to take the"
        f" deletion instead, 'rm' {it} first (not 'git rm': the index does not have {it})"
    ]


def _culprits(h: Any, primary: bool, shown: int | None = None, bare: bool = False) -> list[str]:
    """The upstream commits that changed a hunk's lines (``shown`` of them), or, for a
    primary conflict, that they could not be traced: never a guess; ``bare``: as if none
    were found (the fewest lines)."""
    if bare or not h.upstream:
        return ["    upstream commit: unknown (these lines could not be traced)"] if primary else []
    named = [f"      {u.oid[:10]} {u.subject}" for u in h.upstream[:shown]]
    more = len(h.upstream) - len(named)
    return [
        "    upstream commits that changed these lines:",
        *named,
        *([f"      ... and {more} more (--verbose)"] if more else []),
    ]


def _hunk_full(h: Any, primary: bool) -> list[str]:
    lines = [f"  {h.path}:{h.line}:"]
    for title, body in (
        ("the patch expected", h.expected),
        ("there now", h.now),
        ("the patch wants", h.wanted),
    ):
        lines.append(f"    {title}:")
        lines += [f"      | {ln}" for ln in body] or ["      (nothing)"]
    return lines + _culprits(h, primary)


UPSTREAM_MADE = "upstream made (the patch expected -> there now)"
THERE_NOW = "there now (the patch expected -> what the tree holds)"


def there_now_title(h: Any, primary: bool) -> str:
    """The title of what is there now: "upstream made" only where the hunk's lines were
    traced to upstream commits (a primary conflict's culprits); a knock-on (an earlier patch
    missing), lines an earlier patch or a recorded resolution made, or lines no commit was
    traced to, get the neutral title."""
    return UPSTREAM_MADE if primary and h.upstream else THERE_NOW


def _hunk_short(h: Any, primary: bool, bare: bool = False) -> list[str]:
    """One hunk in a few lines: what is there now and the patch's change, each a capped diff
    from what the patch expected (the lines they share left out), and the first commits."""
    lines = [f"  {h.path}:{h.line}:"]
    for title, after in (
        (there_now_title(h, primary), h.now),
        ("the patch makes (it expected -> it wants)", h.wanted),
    ):
        lines.append(f"    {title}:")
        lines += _capped_diff(list(h.expected), list(after))
    return lines + _culprits(h, primary, CULPRITS_SHOWN, bare)


def _capped_diff(before: list[str], after: list[str]) -> list[str]:
    import difflib

    changed = [
        ln
        for ln in difflib.unified_diff(before, after, lineterm="", n=0)
        if not ln.startswith(("---", "+++", "@@"))
    ]
    if not changed:
        return ["      (no change)"]
    shown = [f"      {ln[0]} {ln[1:]}" for ln in changed[:DIFF_LINES]]
    if len(changed) > DIFF_LINES:
        shown.append(f"      ... {len(changed) - DIFF_LINES} more line(s) (--verbose)")
    return shown


KNOCK_ONS_SHOWN = 3  # knock-on names listed under their root without --verbose (`some_names`)


def evidence_note(v: Any, verbose: bool = False) -> str:
    """Why a patch changes nothing: the upstream commit that brought its change (its subject
    cut at `SUBJECT_SHOWN` without ``verbose``, `fitted`), or the verdict's own note (a
    selection's no-op)."""
    if v.evidence:
        subject = fitted(v.evidence.subject, SUBJECT_SHOWN, verbose)
        return f"in {v.evidence.oid[:10]} {subject}".rstrip()
    return str(v.note)


def recorded_note(hunks: Any, verbose: bool = False) -> str:
    """How a verdict says a recorded resolution settled its conflict: the hunks reused, when
    records of conflict hunks did it (`some_names`: every one with ``verbose``)."""
    if not hunks:
        return "recorded resolution"
    return "recorded resolution reused for hunk " + some_names(
        hunks, verbose, noun=("hunk", "hunks")
    )


def conflict_summary(conflicts: Any, verbose: bool = False) -> list[str]:
    """One line per primary conflict (patch, file, the upstream commit that made the lines
    there), each followed by one line for the knock-ons waiting for it: the size of the
    user's real work, whatever the series' length. Full reports: ``render_conflict``."""
    conflicts = list(conflicts)
    if not conflicts:
        return []
    waits = {c.patch: c.root for c in conflicts if c.kind == "knock-on" and c.root}

    def first_root(name: str) -> str:
        """A knock-on of a knock-on waits for the first patch of the chain."""
        seen = {name}
        while name in waits and waits[name] not in seen:
            name = waits[name]
            seen.add(name)
        return name

    under: dict[str, list[str]] = {}
    for c in conflicts:
        if c.patch in waits:
            under.setdefault(first_root(c.patch), []).append(c.patch)
    primary = [c for c in conflicts if c.kind != "knock-on" or not c.root]
    n_knock = len(conflicts) - len(primary)
    said = [f"{len(primary)} primary (upstream changed the lines)"] if primary else []
    if n_knock:  # (a skip's replay may defer knock-ons of the skipped patch only)
        said.append(f"{n_knock} knock-on (an earlier patch is missing)")
    lines = ["conflicts: " + ", ".join(said)]
    shown_roots = set()
    for c in primary:
        files = list(c.files)
        # the commit named is one that changed the file named (the first hunk traced to one)
        first = next((h for h in c.hunks if h.upstream), None)
        where = first.path if first is not None else files[0] if files else "?"
        if len(files) > 1:
            where += f" (+{len(files) - 1} more)"
        upstream = ""
        if first is not None:
            subject = fitted(first.upstream[0].subject, SUBJECT_SHOWN, verbose)
            upstream = f"  {first.upstream[0].oid[:10]} {subject}".rstrip()
        lines.append(f"  {verdict_word('conflict')} {c.patch}  {where}{upstream}")
        if c.superseded is not None:
            by = f" by {c.superseded.oid[:10]}" if c.superseded.oid else ""
            lines.append(f"      superseded{by}? upstream's side already has every line it adds")
        if c.culprits:
            unselected = some_names(c.culprits, verbose)
            lines.append(f"      needs the unselected {unselected} (--with-deps)")
        if c.held:  # primary, and waiting for its root (`engine.needs`)
            lines.append(f"      it waits for {c.root} too: {c.note}")
        lines += _knock_on_line(c.patch, under, verbose)
        shown_roots.add(c.patch)
    for root in under:  # roots deferred earlier, or not among the conflicts shown
        if root not in shown_roots:
            lines.append(f"  {verdict_word('deferred')} {root}")
            lines += _knock_on_line(root, under, verbose)
    # A knock-on that merges cleanly but would lose lines of its root says why (`engine.needs`).
    lines += [f"      {c.patch}: {c.note}" for c in conflicts if c.patch in waits and c.held]
    return lines


def _knock_on_line(root: str, under: dict[str, list[str]], verbose: bool) -> list[str]:
    names = under.get(root, [])
    if not names:
        return []
    listed = some_names(names, verbose, KNOCK_ONS_SHOWN)
    return [f"      + {len(names)} knock-on(s) waiting for it: {listed}"]
