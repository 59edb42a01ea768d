"""The conflicts of a replay, triaged and reported at once: which are the user's real work.

A conflict is **primary** when upstream changed the lines the patch expected, and a
**knock-on** when it conflicts only because an earlier patch that conflicted or was deferred
is missing (its *root*): say patch 1 creates ``dflash_info.py`` and conflicts, then every later
patch editing that file is a modify/delete of a file neither base ever had. A conflicted path
is a knock-on of a missing patch that touches it when upstream left the path as it was (the
same entry in the old and the new base), or, hunk by hunk, when the lines there now are lines
the old base already had in that order (upstream did not make them; a missing patch's change
is what the patch expected). A conflict is a knock-on when every path of it is; its root is
the nearest missing patch before it among those. Anything else is primary.

The reports are built for all conflicts together: the merged files, the old and new base's
entries and the upstream commits touching the files are each read in one batch. A primary
conflict's hunks name the upstream commit that made the lines there now: among the commits of
the range that touched the file, the oldest whose version of the file holds those lines
(found by bisection over the versions, read through the persistent ``cat-file``). The full
line history (``git log -L``, `merging.blame`) is for one patch's report on demand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ..git import Git, MergeResult
from ..model import trailers
from ..model.conflict import Conflict, ConflictHunk, UpstreamCommit, parse_markers
from ..model.ids import Oid
from .evidence import superseded

PRIMARY, KNOCK_ON = "primary", "knock-on"


@dataclass(frozen=True)
class Failed:
    """A patch whose merge conflicted: what it was placed on, the merge, and the patches
    before it that are missing from that tree (conflicted or deferred), nearest last."""

    name: str
    onto: Oid
    merged: MergeResult
    missing: tuple[str, ...] = ()


def _contains(text: Sequence[str], region: Sequence[str]) -> bool:
    n = len(region)
    if n == 0:
        return False
    first = region[0]
    for i in range(len(text) - n + 1):
        if text[i] == first and list(text[i : i + n]) == list(region):
            return True
    return False


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "surrogateescape").split("\n") if data is not None else []


PREFETCH_PATHS = 300  # a longer pathspec costs the walk more than asking again saves


def prefetch(git: Git, old_base: str | None, new_base: str, paths: Iterable[str]) -> None:
    """Start the walk of upstream's history that `reports` makes (`Git.prefetch_touching`),
    for every path of the patches, before the replay finds which conflict."""
    wanted = sorted(set(paths))
    if old_base and old_base != new_base and len(wanted) <= PREFETCH_PATHS:
        git.prefetch_touching(f"{old_base}..{new_base}", wanted, trailers.PATCH_COMMIT_GREP)


def reports(
    git: Git,
    failed: Sequence[Failed],
    paths_of: Callable[[str], Sequence[str]],
    old_base: str | None,
    new_base: str,
    attribute: bool = True,
    tick: Callable[[int, int], None] | None = None,
) -> list[Conflict]:
    """The report of every conflict of ``failed``, triaged (see the module docstring);
    ``attribute``: name the upstream commit of each primary hunk; ``tick(done, total)``: told
    as the reports are built (the progress bar keeps moving)."""
    if not failed:
        return []
    total = len(failed) + 1
    every = sorted({p for f in failed for p in f.merged.conflicted})
    old_tree = git.tree_of(old_base) if old_base else None
    new_tree = git.tree_of(new_base)
    old_entries = git.entries_at(old_tree, every) if old_tree else {}
    new_entries = git.entries_at(new_tree, every)
    merged_entries = [git.entries_at(f.merged.tree, list(f.merged.conflicted)) for f in failed]
    blob_ids = {e[1] for m in merged_entries for e in m.values() if e[0][:2] == "10"}
    blob_ids |= {e[1] for e in old_entries.values() if e[0][:2] == "10"}
    blobs = dict(zip(sorted(blob_ids), git.read_objects(sorted(blob_ids)), strict=True))

    def blob(entry: tuple[str, str] | None) -> bytes | None:
        if entry is None or entry[0][:2] != "10":
            return None
        found = blobs.get(entry[1])
        return found[1] if found else None

    touched = _touching(git, old_base, new_base, failed) if old_base and attribute else {}
    versions: dict[tuple[str, str], list[str]] = {}  # (commit, path) -> its lines, read once
    out = []
    for i, (f, merged) in enumerate(zip(failed, merged_entries, strict=True)):
        if tick is not None:
            tick(i + 1, total)
        hunks: list[ConflictHunk] = []
        roots: list[str] = []
        primary = False
        for path in f.merged.conflicted:
            text = blob(merged.get(path))
            found = parse_markers(path, text.decode("utf-8", "surrogateescape")) if text else []
            candidates = [p for p in f.missing if path in paths_of(p)]
            root = candidates[-1] if candidates else None
            if root is not None and old_entries.get(path) == new_entries.get(path):
                roots.append(root)  # upstream left the file alone: the missing patch's doing
                hunks += found
                continue
            old_lines = _lines(blob(old_entries.get(path)))
            if root is not None and found and all(_contains(old_lines, h.now) for h in found):
                roots.append(root)  # lines upstream did not make
                hunks += found
                continue
            primary = True
            hunks += [_attributed(git, h, touched.get(path, ()), versions) for h in found]
        kind = PRIMARY if primary or not roots else KNOCK_ON
        root = None
        if kind == KNOCK_ON:
            root = max(roots, key=f.missing.index)
        report = Conflict(
            f.name,
            f.merged.conflicted,
            tuple(hunks),
            detail=f.merged.messages.strip(),
            merged_tree=f.merged.tree,
            kind=kind,
            root=root,
        )
        if kind == PRIMARY:
            report = replace(report, superseded=superseded(report))
        out.append(report)
    return out


def _touching(
    git: Git, old_base: str, new_base: str, failed: Sequence[Failed]
) -> dict[str, tuple[UpstreamCommit, ...]]:
    """For each conflicted path, the upstream commits of ``old_base..new_base`` that touched
    it, oldest first: one walk of the range for all paths."""
    paths = sorted({p for f in failed for p in f.merged.conflicted})
    if not paths or old_base == new_base:
        return {}
    found: dict[str, list[UpstreamCommit]] = {p: [] for p in paths}
    for commit, subject, changed in git.log_touching(
        f"{old_base}..{new_base}", paths, exclude_grep=trailers.PATCH_COMMIT_GREP
    ):
        for p in changed:
            if p in found:
                found[p].append(UpstreamCommit(commit, subject))
    return {p: tuple(c) for p, c in found.items()}


def _attributed(
    git: Git,
    h: ConflictHunk,
    commits: Sequence[UpstreamCommit],
    versions: dict[tuple[str, str], list[str]],
) -> ConflictHunk:
    """``h`` with the upstream commit that made its lines what they are now: the oldest of
    ``commits`` (oldest first) from which on the file holds them; the newest when none does
    (the lines were rewritten since, or are partly the patches'). ``versions``: the file's
    versions read so far (the hunks of one file bisect over the same commits)."""
    if not commits:
        return h
    if not h.now:
        return replace(h, upstream=(commits[-1],), traced=False)

    def holds(i: int) -> bool:
        key = (commits[i].oid, h.path)
        if key not in versions:
            versions[key] = _lines(git.show_file(*key))
        return _contains(versions[key], h.now)

    if not holds(len(commits) - 1):
        return replace(h, upstream=(commits[-1],), traced=False)
    lo, hi = 0, len(commits) - 1  # holds(hi); find the first index that holds
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return replace(h, upstream=(commits[lo],), traced=True)
