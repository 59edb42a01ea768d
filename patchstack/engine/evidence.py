"""Upstream evidence: which upstream commit brought a patch's change, and whether a conflict
is upstream having taken the patch its own way.

A patch a replay finds changing nothing on the new base is **upstream**'s when its change
placed on the old base (with the same patches around it) still changes something: then the
first-parent commit between the bases from which on it changes nothing for good is the one
that brought it (a revert and re-land names the re-land): the commits touching the patch's
paths are asked from the newest back, each in turn, to the first that does not hold it
(each question a placement, `contract`; most are merges of the patch's paths alone, or none
where the commit's files are the patch's own). When it changes nothing on the old
base either, the no-op is not upstream's doing: with ``--only``/``--except``, a patch that
only reverts or repeats an unselected one is such a no-op, and is said to be one.

A conflicting patch is **superseded** when upstream's side of every conflicting hunk already
holds every line the patch adds there (indentation aside): the commit named is the one that
made those lines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..git import Git
from ..model.conflict import Conflict, UpstreamCommit
from ..model.ids import Oid
from .contract import NULL_MODE, enabled, place_fast

AHEAD = 512  # the most versions of the paths read ahead for a search
SELF = "self"  # a no-op already on the old base: not upstream's doing


@dataclass(frozen=True)
class History:
    """The first-parent commits of ``old_base..new_base``, oldest first, with their trees
    and subjects: read once for every patch whose evidence is looked for."""

    old_base: str
    commits: tuple[Oid, ...]
    trees: tuple[Oid, ...]
    subjects: tuple[str, ...]


def history(git: Git, old_base: str, new_base: str) -> History:
    found = git.first_parent_trees(f"{old_base}..{new_base}")
    commits = tuple(c for c, _t, _s in found)
    return History(old_base, commits, tuple(t for _c, t, _s in found), tuple(s for *_, s in found))


def first_parent(git: Git, commit: str) -> Oid | None:
    """The first parent of ``commit``; None when it is not a commit or has none."""
    found = git.read_object(commit)
    if found is None or found[0] != "commit":
        return None
    for raw in found[1].split(b"\n"):
        if not raw:
            break
        if raw.startswith(b"parent "):
            return Oid(raw[7:].decode("ascii"))
    return None


def brought(git: Git, before: Oid, after: Oid, commit: str) -> bool:
    """The definition of "``commit`` brought the change ``before -> after``": placed on
    ``commit``'s tree the change changes nothing, and on its first parent's it changes
    something (merge-ort, as `contract.place`). What an ``upstream ... in C`` label and an
    ``# upstream: NAME X in C`` mark claim, checked by both before either is said."""
    parent = first_parent(git, commit)
    if parent is None:
        return False
    there, below = git.trees_of([commit, parent])

    def holds(tree: Oid) -> bool:
        merged = place_fast(git, before, tree, after, ("upstream", "patch"))
        return merged.clean and merged.tree == tree

    return holds(there) and not holds(below)


def first_holding(
    git: Git, before: Oid, after: Oid, upstream: History, old_tree: Oid | None = None
) -> UpstreamCommit | str | None:
    """The commit of ``upstream`` from whose tree on the change ``before -> after`` changes
    nothing for good (after a revert and re-land: the re-land); `SELF` when it changes
    nothing on ``old_tree`` (the tree it was placed on at the old base; default: the old
    base's) already; None when no commit of the range holds it
    (the new base was reached another way)."""

    diff = git.changed_entries(before, after)
    changed = [d[4] for d in diff]
    wanted = git.entries_at(after, changed)
    # A patch that deletes no file renames no folder of its own: where ``tree`` has every
    # path as the patch leaves it, the merge takes ours there, and no rename finds a source.
    quick = enabled() and not any(d[1] == NULL_MODE for d in diff)

    def holds(tree: Oid) -> bool:
        if tree == before:
            return before == after
        if quick and git.entries_at(tree, changed) == wanted:
            return True
        merged = place_fast(git, before, tree, after, ("upstream", "patch"))
        return merged.clean and merged.tree == tree

    if holds(old_tree or git.tree_of(upstream.old_base)):
        return SELF
    trees = upstream.trees
    if not trees or not holds(trees[-1]):
        return None
    # Whether a tree holds the change can only turn at a commit touching its paths: asked
    # from the newest such commit back, each in turn, to the first that does not hold it; the
    # one after it brought the change for good. (A search that skipped commits, in steps that
    # double, could step over a revert from one holding commit to another and name a landing
    # the revert undid.)
    rng = f"{upstream.old_base}..{upstream.commits[-1]}"
    touching = {c for c, _p, _s in git.log_commits(rng, changed, first_parent=True)}
    turns = [i for i, c in enumerate(upstream.commits) if c in touching]
    last = turns[-1] if turns else -1
    if not turns or not holds(trees[last]):
        turns = list(range(last + 1, len(trees)))  # the tip holds it, its last toucher not
    if quick:  # the reads of the newest commits asked in one batch, not one per commit
        git.entries_in([trees[i] for i in turns[max(0, len(turns) - AHEAD) :]], changed)
    good = len(turns) - 1  # turns[good] holds it
    while good > 0 and holds(trees[turns[good - 1]]):
        good -= 1
    return UpstreamCommit(upstream.commits[turns[good]], upstream.subjects[turns[good]])


def recorded(git: Git, oid: str) -> UpstreamCommit:
    """The commit a mark names (``# upstream: NAME COMMIT in OID``), with its subject when
    this repository has it."""
    if not git.has_objects([oid])[oid]:
        return UpstreamCommit(oid, "")
    found = git.log_commits(f"{oid}^!")
    return UpstreamCommit(oid, found[0][2] if found else "")


def superseded(
    report: Conflict, show: Callable[[str, str], bytes | None] | None = None
) -> UpstreamCommit | None:
    """Whether upstream may have taken the patch its own way: None when some conflicting
    hunk's upstream side lacks a line the patch adds there; else the first of the hunks'
    upstream commits whose version of every such file holds those lines and whose parent's
    does not (``show(rev, path)``: that version, as ``git show``): the commit that made them;
    or an empty id when none did (not known)."""
    if not report.hunks:
        return None
    added: list[tuple[str, set[str]]] = []
    for h in report.hunks:  # lines compared without their indentation: upstream may nest them
        expected, now = {ln.strip() for ln in h.expected}, {ln.strip() for ln in h.now}
        new = {ln.strip() for ln in h.wanted if ln.strip() and ln.strip() not in expected}
        if not new or not new <= now:
            return None
        added.append((h.path, new))
    candidates = dict.fromkeys(u for h in report.hunks for u in h.upstream)
    paths = {p for p, _ in added}

    def holds(rev: str) -> bool:
        assert show is not None
        versions = {path: show(rev, path) for path in paths}
        held = {
            p: {ln.strip() for ln in v.decode("utf-8", "surrogateescape").split("\n")}
            for p, v in versions.items()
            if v is not None
        }
        return all(p in held and lines <= held[p] for p, lines in added)

    for commit in candidates:
        if show is None:
            break
        # It made them: its version holds every line, its parent's not (lines made before
        # the range, by a commit that took the patch earlier, are not this commit's doing).
        if holds(commit.oid) and not holds(commit.oid + "^"):
            return commit
    return UpstreamCommit("", "")
