"""What a change to the series does besides the patch files: the series file's marks and the
recorded resolutions of its ``resolutions/`` folder, each a change a reviewer must see.

The state of a patch on one side is its mark (`model.marks`): none (carried, applied when
pushed), ``# deferred:`` or ``# upstream:``. A change of the mark is the patch's *state* word:

- ``deferred``: newly deferred (or its deferred mark changed): left out, with its mark's
  commit and, for a knock-on, the patch it waits for;
- ``upstream``: newly marked as held by the base, with its evidence (the upstream commit the
  mark names, with its subject when the repository has it; "unknown" when the mark names none);
- ``no-op``: newly marked as changing nothing while the patch it names is missing (a mark of
  that kind, where the series carries one);
- ``resolved to nothing``: newly marked upstream in the same change that records a resolution
  for the patch: a conflict resolved by taking upstream's side, so the patch became empty;
- ``brought back``: a deferred (or upstream) mark removed, the patch applied again.

A resolution file is compared by its name under ``resolutions/`` (the key of the conflict):
``added``, ``changed`` or ``removed``, each shown as the resolved hunks, a diff from the
version the merge found there (``ours``, when the repository has it) to the resolved file; a
changed one as the diff from the old resolved file to the new. A file there that is not a
resolution (unreadable, a link, not in the format) is shown as such: refresh ignores it today,
and the reviewer sees it was added. The records are parsed by the one parser,
`commands.refresh.resolutions.parse_record`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..commands.refresh import contained
from ..commands.refresh.hunks import HunkRecord
from ..commands.refresh.resolutions import BadRecord, Record, Recorded, parse_record
from ..model.marks import DEFERRED, UPSTREAM, Mark, Upstream

STATES = ("deferred", "upstream", "no-op", "resolved to nothing", "brought back")
NO_OP = "no-op"
RESOLUTIONS = "resolutions/"
Blob = Callable[[str], bytes | None]  # an object id's bytes, None when not at hand


@dataclass(frozen=True)
class MarkView:
    """A mark as the review shows it."""

    kind: str  # deferred, upstream (or another kind of mark, e.g. no-op)
    commit: str  # the patch's change, kept by the operation log
    root: str | None = None  # deferred: the patch it waits for
    evidence: str | None = None  # upstream: the upstream commit that brought it
    subject: str = ""  # the evidence's subject, when the repository has it

    @property
    def text(self) -> str:
        """The mark in words (each format escapes it)."""
        if self.kind == UPSTREAM:
            if not self.evidence:
                return "upstream commit unknown (the mark names none)"
            return f"in {self.evidence[:12]}" + (f" {self.subject}" if self.subject else "")
        if self.root:
            return f"waiting for {self.root}"
        return f"commit {self.commit[:12]}"


def view(mark: Mark | None, subject: Callable[[str], str] | None = None) -> MarkView | None:
    if mark is None:
        return None
    if isinstance(mark, Upstream):
        said = subject(mark.evidence) if subject and mark.evidence else ""
        return MarkView(UPSTREAM, mark.commit, evidence=mark.evidence, subject=said)
    return MarkView(DEFERRED, mark.commit, root=mark.root)


def state_word(old: MarkView | None, new: MarkView | None, resolved_now: bool) -> str | None:
    """The state word of a patch whose mark went from ``old`` to ``new`` (module doc)."""
    if _same(old, new):
        return None
    if new is None:
        return "brought back"
    if new.kind == UPSTREAM:
        return "resolved to nothing" if resolved_now else UPSTREAM
    return NO_OP if new.kind == NO_OP else DEFERRED


def _same(a: MarkView | None, b: MarkView | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.kind, a.commit, a.root, a.evidence) == (b.kind, b.commit, b.root, b.evidence)


# -- resolutions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolutionChange:
    """A file of ``resolutions/`` added, changed or removed."""

    change: str  # added, changed, removed
    file: str  # its path in the series folder
    patch: str  # the patch it resolves ("" when the file is not a resolution)
    path: str  # the file of the tree it resolves
    mode: str  # the resolved file's mode, "deleted" (resolved by deleting it), or "" (unread)
    note: str  # what else a reviewer must know: not a record, binary, deleted, versions
    diff: tuple[str, ...]  # the resolved hunks
    by: str = ""  # machine-made: the command that proposed it (refresh --resolver); "": a person


Files = Mapping[str, bytes | None]  # name under resolutions/ -> bytes (None: not a file)


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _diff(a: bytes | None, b: bytes | None, path: str, a_label: str, b_label: str) -> list[str]:
    old, new = _lines(a or b""), _lines(b or b"")
    a_name, b_name = f"a/{path} ({a_label})", f"b/{path} ({b_label})"
    return list(difflib.unified_diff(old, new, a_name, b_name, lineterm=""))


def _versions(r: Recorded) -> str:
    def text(e: tuple[str, str] | None) -> str:
        return f"{e[0]} {e[1][:12]}" if e else "absent"

    return f"base {text(r.base)}, upstream {text(r.ours)}, patch {text(r.theirs)}"


def _resolved(r: Recorded, blob: Blob | None) -> tuple[list[str], str]:
    """The resolved hunks of one record: from the version the merge found (ours) to it."""
    if b"\0" in r.data:
        return [], f"binary, {len(r.data)} bytes"
    ours = blob(r.ours[1]) if blob and r.ours else None
    if r.ours and ours is None:
        label, note = "upstream's version not in this repository", "the whole resolved file"
    else:
        label, note = "as the merge found it", ""
    if r.mode is None:
        return _diff(ours, b"", r.path, label, "resolved: deleted"), "resolved by deleting it"
    if ours == r.data:
        return [], "resolved to upstream's version: nothing of the patch kept in this file"
    return _diff(ours, r.data, r.path, label, "resolved"), note


def _hunk(r: HunkRecord) -> tuple[list[str], str]:
    """A hunk's record as the review shows it: from upstream's side of the hunk (as the merge
    found it) to the resolution, and what the patch wanted there."""
    h = r.hunk
    if b"\0" in r.data + h.ours + h.base + h.theirs:
        return [], f"one conflict hunk of {r.path} (line {h.line}), binary"
    at = f"{r.path}:{h.line}"
    diff = _diff(h.ours, r.data, at, "upstream's side of the conflict hunk", "resolved")
    wanted = _diff(h.base, h.theirs, at, "the hunk's base", "the patch's side")
    note = (
        f"one conflict hunk of {r.path} (line {h.line}), reused wherever the same hunk"
        " conflicts again, whatever upstream changed elsewhere in the file"
    )
    proposed = contained.resolve(h)
    if proposed is not None and proposed[0] == r.data:
        note += f"; what the built-in rule proposes ({proposed[1]}), so the patch's change is kept"
    elif h.ours == r.data:
        note += "; resolved to upstream's side: nothing of the patch kept in this hunk"
    return diff + wanted, note


def _one(change: str, name: str, data: bytes | None, blob: Blob | None) -> ResolutionChange:
    file = RESOLUTIONS + name
    r, bad = _record(data, file)
    if r is None:
        why = "not a regular file" if data is None else f"not a resolution record: {bad}"
        return ResolutionChange(change, file, "", "", "", why + " (refresh refuses it)", ())
    if isinstance(r, HunkRecord):
        lines, note = _hunk(r)
        return ResolutionChange(change, file, r.patch, r.path, "hunk", note, tuple(lines))
    diff, note = _resolved(r, blob)
    note = "; ".join(x for x in (note, _versions(r)) if x)
    mode = r.mode or "deleted"
    return ResolutionChange(change, file, r.patch, r.path, mode, note, tuple(diff), r.by)


def _record(data: bytes | None, file: str) -> tuple[Record | None, str]:
    """The record ``data`` holds, or None and why not."""
    if data is None:
        return None, ""
    try:
        return parse_record(data, file), ""
    except BadRecord as exc:
        return None, str(exc)


def compare_resolutions(old: Files, new: Files, blob: Blob | None) -> tuple[ResolutionChange, ...]:
    """The files of ``resolutions/`` added, changed and removed from ``old`` to ``new``."""
    out = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if name not in old:
            out.append(_one("added", name, b, blob))
        elif name not in new:
            out.append(_one("removed", name, a, blob))
        elif a != b:
            out.append(_changed(name, a, b))
    return tuple(out)


def _changed(name: str, a: bytes | None, b: bytes | None) -> ResolutionChange:
    file = RESOLUTIONS + name
    ra, _ = _record(a, file)
    rb, _ = _record(b, file)
    if isinstance(ra, HunkRecord) and isinstance(rb, HunkRecord):
        lines = _diff(ra.data, rb.data, rb.path, "recorded before", "recorded now")
        note = f"one conflict hunk of {rb.path} (line {rb.hunk.line}), resolved anew"
        return ResolutionChange("changed", file, rb.patch, rb.path, "hunk", note, tuple(lines))
    if rb is None or isinstance(rb, HunkRecord) or isinstance(ra, HunkRecord):
        return _one("changed", name, b, None)
    notes = []
    if ra is None:
        notes.append("was not a resolution record")
    elif (ra.patch, ra.path) != (rb.patch, rb.path):
        notes.append(f"was for {ra.patch}: {ra.path}")
    if ra is not None and (ra.base, ra.ours, ra.theirs) != (rb.base, rb.ours, rb.theirs):
        notes.append("versions were " + _versions(ra))
    if ra is not None and ra.mode != rb.mode:
        notes.append(f"mode was {ra.mode or 'deleted'}")
    if b"\0" in rb.data or (ra is not None and b"\0" in ra.data):
        diff: list[str] = []
        notes.append("binary")
    else:
        diff = _diff(ra.data if ra else None, rb.data, rb.path, "recorded before", "recorded now")
    notes.append(_versions(rb))
    mode = rb.mode or "deleted"
    said = "; ".join(notes)
    return ResolutionChange("changed", file, rb.patch, rb.path, mode, said, tuple(diff), rb.by)


def resolved_patches(changes: tuple[ResolutionChange, ...]) -> set[str]:
    """The patches this change records a resolution for (added or changed)."""
    return {c.patch for c in changes if c.change != "removed" and c.patch}
