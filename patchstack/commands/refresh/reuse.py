"""Recorded resolutions of conflict hunks (`hunks`), found in a merge and taken from one:
the replays' lookup (`settle_hunks`, asked by `Resolutions.settle` after the records of whole
files) and ``--continue``'s recording (`hunks_of`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...checkout import Checkout
from ...git import Git, MergeResult
from ...model.conflict import marker_lines
from ...model.ids import Oid
from . import contained, hunks
from .hunks import Hunk, HunkRecord

FILE_MODES = ("100644", "100755")
REUSED = ": recorded resolution reused for hunk "  # a refresh's note in the operation log
PROPOSED = "proposed by a built-in rule, as "  # a stop's note of the hunks `contained` resolves
WHOLE_FILE = " (whole file)"  # how a file a record of its exact versions settled is named


OTHER_LINES = "for other lines (upstream or the patch changed them since); none was applied"


def reuse_note(name: str, where: Sequence[str]) -> str:
    """The operation log's note of a refresh that settled hunks of patch NAME from records
    (a reuse leaves nothing in the series folder; the review reads it back)."""
    return name + REUSED + ", ".join(where)


def reused_of(note: str) -> tuple[str, tuple[str, ...]] | None:
    """(patch, "path:line" of each hunk) of a `reuse_note`, or None for another note."""
    name, found, where = note.partition(REUSED)
    return (name, tuple(where.split(", "))) if found and name and where else None


@dataclass(frozen=True)
class Outcome:
    tree: Oid | None  # the merge settled, or None
    hunks: tuple[str, ...] = ()  # "path:line" of each hunk settled (its line in the result)
    notes: tuple[str, ...] = ()  # why a record that matched was not applied
    # Not settled whole: the merge with the hunks that have a record resolved, the others as
    # the merge wrote them (what a stop shows), and "path:line" of each resolved; or None.
    partial: Oid | None = None
    partial_hunks: tuple[str, ...] = ()


def _parts(git: Git, entry: tuple[str, str] | None) -> list[hunks.Part] | None:
    if entry is None or entry[0] not in FILE_MODES:
        return None
    return hunks.split(git.read_blob(entry[1]))


def settle_hunks(
    ws: Checkout,
    name: str,
    records: Sequence[HunkRecord],
    merged: MergeResult,
    whole: Mapping[str, tuple[str, str] | None] = {},
) -> Outcome:
    """``merged`` (patch ``name``'s merge) with each conflict hunk of every conflicted file
    replaced by its record's resolution, when every hunk has one and none holds a conflict
    marker (a record that does not apply is left, with a note, never trusted blindly).
    ``whole``: files (and the files recorded with them) that records of their exact versions
    settle whole, recorded beside hunk records (`Resolutions`)."""
    if not records and not whole:
        return Outcome(None)
    known = {r.key: r for r in records}
    git = ws.git
    entries = git.entries_at(merged.tree, merged.conflicted)
    changes: dict[str, tuple[str, str] | None] = dict(whole)
    settled: list[str] = [p + WHOLE_FILE for p in merged.conflicted if p in whole]
    notes: list[str] = []
    other: list[str] = []  # files whose records of this patch's hunks are for other lines
    complete: list[tuple[str, list[str]]] = []  # files whose every hunk a record settles
    all_of = True  # every conflicted file settled
    for path in merged.conflicted:
        if path in whole:
            continue
        entry = entries.get(path)
        parts = _parts(git, entry)
        if entry is None or parts is None:
            all_of = False
            continue
        conflicts = [p for p in parts if isinstance(p, Hunk)]
        have = [h for h in conflicts if h.key in known]
        bad = [
            h for h in have if marker_lines(known[h.key].data.decode("utf-8", "surrogateescape"))
        ]
        for h in bad:
            shown = ws.display(known[h.key].file)
            notes.append(
                f"the recorded resolution of {path}:{h.line} ({shown}) holds conflict"
                " markers; it was not applied"
            )
        have = [h for h in have if h not in bad]
        if not have:
            mine = any(r.patch == name and r.path == path for r in records)
            if mine and not bad:
                other.append(path)
            all_of = False
            continue
        result, starts = hunks.apply_known(parts, {h.key: known[h.key].data for h in have})
        where = [f"{path}:{n}" for n in starts]
        if len(have) < len(conflicts):
            notes.append(
                f"recorded resolutions settle {len(have)} of the {len(conflicts)} conflict"
                f" hunks of {path} ({', '.join(where)}); the others are new: yours to resolve"
            )
            all_of = False
        changes[path] = (entry[0], git.write_blob(result))
        settled += where
        if len(have) == len(conflicts):
            complete.append((path, where))
    if other:  # one clause for them all (a stop's note is a line: `conflicttext._short_note`)
        notes.append(
            f"the recorded resolutions of {name}'s conflict hunks in {', '.join(other)} are"
            f" {OTHER_LINES}"
        )
    if not changes:
        return Outcome(None, notes=tuple(notes))
    tree = git.edit_tree(merged.tree, changes)
    if all_of:
        return Outcome(tree, tuple(settled))
    # The stop shows these files without markers: say why.
    notes += [
        f"a recorded resolution of {path}'s very versions settles it whole"
        for path in merged.conflicted
        if path in whole
    ]
    notes += [
        "recorded resolutions settle "
        + ("the one conflict hunk" if len(where) == 1 else f"all {len(where)} conflict hunks")
        + f" of {path} ({', '.join(where)})"
        for path, where in complete
    ]
    return Outcome(None, notes=tuple(notes), partial=tree, partial_hunks=tuple(settled))


def under(git: Git, merged: Oid, partial: Oid, shown: Oid) -> Oid:
    """``shown`` (a stop's tree made from the merge ``merged``, a relocation proposal) with
    the files hunk records settled in ``partial`` that it left as the merge made them."""
    paths = git.changed_paths(merged, partial)
    at = [git.entries_at(t, paths) for t in (merged, partial, shown)]
    changes = {p: at[1].get(p) for p in paths if at[2].get(p) == at[0].get(p)}
    return git.edit_tree(shown, changes) if changes else shown


def hunks_of(
    git: Git, merged: Oid, resolved: Oid, conflicted: Sequence[str]
) -> tuple[list[tuple[str, Hunk, bytes]], list[str]]:
    """(path, hunk, its resolution) of every conflict hunk of ``merged`` (the merge with its
    markers) in ``resolved`` (the user's tree), in the files that can be cut into their hunks'
    resolutions; and the others (recorded whole): not a file with diff3 markers on either
    side (a modify/delete, a file's location), its mode changed, deleted, or the text outside
    the hunks edited too."""
    at = [git.entries_at(t, conflicted) for t in (merged, resolved)]
    found: list[tuple[str, Hunk, bytes]] = []
    rest: list[str] = []
    for path in conflicted:
        was, now = at[0].get(path), at[1].get(path)
        parts = _parts(git, was)
        if parts is None or now is None or was is None or now[0] != was[0]:
            rest.append(path)
            continue
        pieces = hunks.decompose(parts, git.read_blob(now[1]))
        if pieces is None:
            rest.append(path)
            continue
        found += [(path, hunk, resolution) for hunk, resolution in pieces]
    return found, rest


def proposed_at_stop(
    git: Git, merged: MergeResult, shown: Oid
) -> tuple[Oid, tuple[str, ...], tuple[str, ...]] | None:
    """``shown`` (a stop's tree of ``merged``) with each conflict hunk still marked that the
    built-in rule resolves (`contained`: one side already holds the other's change) put in
    place, a proposal the person confirms at ``--continue``; with "path:line" of each and the
    stop's notes. None when the rule resolves none."""
    entries = git.entries_at(shown, merged.conflicted)
    changes: dict[str, tuple[str, str] | None] = {}
    where: list[str] = []
    notes: list[str] = []
    for path in merged.conflicted:
        entry = entries.get(path)
        parts = _parts(git, entry)
        if entry is None or parts is None:
            continue
        found = contained.proposals(parts)
        if not found:
            continue
        result, starts = hunks.apply_known(parts, {k: r for k, (r, _why) in found.items()})
        changes[path] = (entry[0], git.write_blob(result))
        mine = [p for p in parts if isinstance(p, Hunk) and p.key in found]
        at: dict[str, list[str]] = {}
        for hunk, line in zip(mine, starts, strict=True):
            at.setdefault(found[hunk.key][1], []).append(f"{path}:{line}")
        for why, hunks_at in at.items():
            where += hunks_at
            some = "the conflict hunk" if len(hunks_at) == 1 else f"{len(hunks_at)} conflict hunks"
            notes.append(
                f"{PROPOSED}{why}: {some} of {path} ({', '.join(hunks_at)}), shown resolved;"
                " check before --continue"
            )
    if not changes:
        return None
    return git.edit_tree(shown, changes), tuple(where), tuple(notes)
