"""The conflicts of a replay, triaged and reported at once: which are the user's real work.

A conflict is a **knock-on** when it conflicts only because an earlier patch that conflicted
or was deferred is missing (its *root*): say patch 1 creates ``dflash_info.py`` and
conflicts, then every later patch editing that file is a modify/delete of a file neither base
ever had. That is proven, never guessed from the lines: the (up to three) nearest missing
patches touching every conflicted file are merged (as they merge, markers and all) onto the
tree the patch was placed on, then the patch again; a clean merge makes it a knock-on of the
nearest of them. Anything else is **primary**: upstream changed the lines the patch expected.

The reports are built for all conflicts together: the merged files and the new base's entries
are read in one batch, and the primary hunks' upstream commits are traced at their place in
one walk (`culprits`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..git import Git, MergeResult
from ..model.conflict import Conflict
from ..model.ids import Oid
from . import culprits
from .contract import enabled, place_fast
from .evidence import superseded

PRIMARY, KNOCK_ON = "primary", "knock-on"
ROOTS = 3  # the nearest missing patches merged in place to prove a knock-on (a deeper one: primary)


@dataclass(frozen=True)
class Failed:
    """A patch whose merge conflicted: what it was placed on, the merge, and the patches
    before it that are missing from that tree (conflicted or deferred), nearest last."""

    name: str
    onto: Oid
    merged: MergeResult
    missing: tuple[str, ...] = ()


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "surrogateescape").split("\n") if data is not None else []


def reports(
    git: Git,
    failed: Sequence[Failed],
    paths_of: Callable[[str], Sequence[str]],
    old_base: str | None,
    new_base: str,
    attribute: bool = True,
    tick: Callable[[int, int], None] | None = None,
    change_of: Callable[[str], tuple[Oid, Oid] | None] | None = None,
) -> list[Conflict]:
    """The report of every conflict of ``failed``, triaged (see the module docstring);
    ``attribute``: name the upstream commits of each primary hunk; ``tick(done, total)``: told
    as the reports are built (the progress bar keeps moving); ``change_of(name)``: a patch's
    change (its tree before, after), to merge a conflict again with its root in place (without
    it every conflict is primary)."""
    if not failed:
        return []
    total = len(failed) + 1
    merged_entries = [git.entries_at(f.merged.tree, list(f.merged.conflicted)) for f in failed]
    every = sorted({p for f in failed for p in f.merged.conflicted})
    new_entries = git.entries_at(git.tree_of(new_base), every) if attribute else {}
    wanted = {e[1] for m in merged_entries for e in m.values() if e[0][:2] == "10"}
    wanted |= {e[1] for e in new_entries.values() if e[0][:2] == "10"}
    blobs = dict(zip(sorted(wanted), git.read_objects(sorted(wanted)), strict=True))

    def blob(entry: tuple[str, str] | None) -> bytes | None:
        if entry is None or entry[0][:2] != "10":
            return None
        found = blobs.get(entry[1])
        return found[1] if found else None

    roots: list[str | None] = []  # each conflict's root; None: primary
    # Conflicts placed on the same tree (a run of them) merge the same roots there: each
    # merge is made once (`merge-tree` is a function of its trees and labels).
    memo: dict[tuple[str, str, str, str], MergeResult] | None = {} if enabled() else None
    files: list[tuple[str, bytes | None, bytes]] = []
    for i, f in enumerate(failed):
        if tick is not None:
            tick(i + 1, total)
        roots.append(_root(git, f, paths_of, change_of, memo))
        for path in f.merged.conflicted:
            text = blob(merged_entries[i].get(path))
            if text:
                # a knock-on's lines are not traced: it waits for its root, not for upstream
                base = blob(new_entries.get(path)) if roots[-1] is None else None
                files.append((path, base, text))
    traced = iter(culprits.attribute(git, old_base if attribute else None, new_base, files))
    out = []
    for i, (f, root) in enumerate(zip(failed, roots, strict=True)):
        hunks = [
            h for p in f.merged.conflicted if blob(merged_entries[i].get(p)) for h in next(traced)
        ]
        report = Conflict(
            f.name,
            f.merged.conflicted,
            tuple(hunks),
            detail=f.merged.messages.strip(),
            merged_tree=f.merged.tree,
            kind=KNOCK_ON if root else PRIMARY,
            root=root,
        )
        if root is None:
            report = replace(report, superseded=superseded(report, git.show_file))
        out.append(report)
    return out


def _root(
    git: Git,
    f: Failed,
    paths_of: Callable[[str], Sequence[str]],
    change_of: Callable[[str], tuple[Oid, Oid] | None] | None,
    memo: dict[tuple[str, str, str, str], MergeResult] | None = None,
) -> str | None:
    """The missing patch ``f`` is a knock-on of, when ``f`` merges cleanly once the `ROOTS`
    nearest missing patches touching its conflicted files are merged (as they merge, markers
    and all) onto the tree it was placed on: of those, the nearest that alone lets it merge,
    else the nearest; None when it is primary."""
    paths = f.merged.conflicted
    near = [p for p in f.missing if any(path in paths_of(p) for path in paths)]
    if change_of is None or not paths or not near:
        return None
    if not all(any(path in paths_of(p) for p in near) for path in paths):
        return None
    roots = near[-ROOTS:]
    if not _clean_with(git, f, roots, change_of, memo):
        return None
    # The root named is one whose lines f needs: the nearest that alone lets f merge (the
    # nearest in its file may be another's neighbour), else the nearest of those it needs.
    if len(roots) > 1:
        for name in reversed(roots):
            if _clean_with(git, f, [name], change_of, memo):
                return name
    return roots[-1]


def _clean_with(
    git: Git,
    f: Failed,
    roots: Sequence[str],
    change_of: Callable[[str], tuple[Oid, Oid] | None],
    memo: dict[tuple[str, str, str, str], MergeResult] | None = None,
) -> bool:
    """Does ``f`` merge cleanly once ``roots`` are merged, as they merge, markers and all,
    onto the tree it was placed on?"""
    tree = f.onto
    for name in [*roots, f.name]:
        change = change_of(name)
        if change is None:
            return False
        before, after = change
        if before != after:
            key = (before, tree, after, name)
            merged = memo.get(key) if memo is not None else None
            if merged is None:
                merged = place_fast(git, before, tree, after, ("triage", name))
            if memo is not None:
                memo[key] = merged
            if name == f.name:
                return merged.clean
            tree = merged.tree
    return True  # f changes nothing: it cannot conflict once its roots are in
