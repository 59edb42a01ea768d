"""Following the code: a patch whose file upstream deleted (a modify/delete conflict: the file
was moved where git's rename detection could not pair it, split, or emptied into others) has
each hunk carried to where its lines went, as a *proposal*.

For each such file, the upstream commit that deleted it is named (``log --diff-filter=D``).
Each hunk of the patch's change to it is located by the rule of `model.relocation` (its whole
old side found exactly once among the files the drift changed, in the tree the patch is
placed onto), and the located hunks of a destination are carried there by ``git merge-file``
(ours: the destination as the conflicting merge left it, with the patch's own change to it;
base: the destination where the patch was placed; theirs: that with the hunks' old blocks
replaced by their new lines). A merge that conflicts carries none of that destination's
hunks. A file all of whose hunks went elsewhere is removed from the proposal, as upstream
removed it; otherwise the patch's version stays, for the user to finish.

A file upstream kept but moved some of its code out of (a content conflict) is followed the
same way, hunk by hunk: a hunk whose whole old side the file no longer holds, found exactly
once in another file the drift changed, is carried there, and the file itself becomes the
three-way merge of the patch without those hunks (``git merge-file``); that only when every
such hunk is found and that merge is clean, else git's conflict stands as it is. The commit
named is the newest that changed how often the file holds one of the moved lines (``log -S``).

The proposal is never taken silently: ``refresh`` stops with it in the work tree (taken by
``refresh --continue``), and ``check`` reports it; the merge result the conflict report and
the recorded resolutions key on stays git's own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..git import Git, MergeResult
from ..git.deletions import NO_WALK_DRAIN
from ..model.diff import FileDiff
from ..model.diffparse import parse_diff
from ..model.ids import Oid
from ..model.relocation import (
    Moved,
    Relocation,
    file_bytes,
    file_lines,
    line_index,
    locate,
    overlapping,
    replaced,
    sides,
)
from ..store import Store
from .deleters import Deleters, Later
from .lineindex import LineIndex
from .relocated import Asked, Proposal, Unnamed, lost_hunks, merged_without

if TYPE_CHECKING:
    from .lineprefetch import Prefetch

_AT_END = "the hunk is at a file's end"
PLAIN = "PATCHSTACK_NO_LINE_INDEX"  # set: every candidate read and compared line by line
NO_JOINED = "PATCHSTACK_NO_DRIFT_LINES"  # set: the drift's candidates not kept joined
_FILE_MODES = ("100644", "100755")
_Conflict = tuple[Oid, Oid, Oid, MergeResult]  # a patch's two trees, where it went, its merge


class Relocator:
    """Relocations for one command. A hunk's longest line is looked up among the candidate
    files' line hashes (`lineindex`, kept across commands in ``store``), and only the files
    that may have it are read, split into lines and indexed (the others cannot hold the
    hunk). With ``store`` the commits that deleted each file, or took a line out of it,
    are kept too, keyed by the drift's two commits."""

    def __init__(
        self,
        git: Git,
        old_base: str | None,
        new_base: str,
        store: Store | None = None,
        prefetch: Prefetch | None = None,
    ) -> None:
        self.git, self.old_base, self.new_base = git, old_base, new_base
        plain = os.environ.get(PLAIN) == "1"
        self.store = None if plain else store
        joined = old_base and os.environ.get(NO_JOINED) != "1"
        self.index = LineIndex(git, store, plain, f"{old_base} {new_base}" if joined else None)
        self.index.prefetch = prefetch  # (`lineprefetch`: the new base's candidates, learnt)
        early = prefetch.walks_of(old_base, new_base) if prefetch is not None else None
        self.walks = early or Deleters(git, old_base, new_base, self.store)
        self._lines: dict[str, list[str]] = {}
        self._line_sets: dict[str, list[str]] = {}  # tree -> its searched candidates' blobs
        self._paths_of: dict[str, dict[str, list[str]]] = {}  # tree -> blob -> its paths
        self._index: dict[str, dict[str, list[int]]] = {}
        # Conflicts of one replay are mostly placed on the same tree (the new base, with the
        # patches before them): its candidates, the places found, and the commit that deleted
        # each file are the same for all of them.
        self._candidates_of: dict[str, dict[str, str]] = {}
        self._located: dict[tuple[str, tuple[str, ...]], tuple[str, int] | str] = {}

    def deleted(self, before: Oid, after: Oid, onto: Oid, merged: MergeResult) -> list[str]:
        """The conflicted paths the patch changes that ``onto`` lacks: modify/delete."""
        paths = list(merged.conflicted)
        if not paths:
            return []
        here = self.git.entries_at(onto, paths)
        old, new = self.git.entries_at(before, paths), self.git.entries_at(after, paths)
        files = [p for p in paths if all(e.get(p, ("", ""))[0] in _FILE_MODES for e in (old, new))]
        return [p for p in files if p not in here and old[p][1] != new[p][1]]

    def split(self, before: Oid, after: Oid, onto: Oid, merged: MergeResult) -> list[str]:
        """The conflicted paths the patch changes that ``onto`` still has as a file: a
        content conflict, where upstream may have moved some of the file's code elsewhere."""
        paths = list(merged.conflicted)
        if not paths:
            return []
        here = self.git.entries_at(onto, paths)
        old, new = self.git.entries_at(before, paths), self.git.entries_at(after, paths)
        files = [
            p for p in paths if all(e.get(p, ("", ""))[0] in _FILE_MODES for e in (here, old, new))
        ]
        return [p for p in files if old[p][1] != new[p][1]]

    def propose(self, before: Oid, after: Oid, onto: Oid, merged: MergeResult) -> Proposal | None:
        """Where the hunks of the patch ``before -> after``, merged onto ``onto`` as
        ``merged``, go when upstream deleted their files or moved their lines out of a file it
        kept; None when it did neither (or the old base is not known)."""
        return self.propose_all([(before, after, onto, merged)])[0]

    def propose_later(
        self, before: Oid, after: Oid, onto: Oid, merged: MergeResult
    ) -> Unnamed | None:
        """`propose`, the commits the relocations name asked when the caller calls
        `Unnamed.named`: a stop publishes the proposal's tree while git walks for them (a
        ``log -S`` and the deletion walk: kernel-timers' first stop waited 0.5-0.9 s for them
        before its publish). The proposal is the one `propose` makes; named before it is
        returned, the plain order, with ``PATCHSTACK_NO_WALK_DRAIN=1``."""
        ready = self._prepare([(before, after, onto, merged)])[0]
        if ready is None:
            return None
        walk = self.walks.deleted_later(ready.gone)
        try:
            found = self._propose(ready, walk)
        except BaseException:
            walk.close()
            raise
        if found is None:
            walk.close()
            return None
        found = replace(found, close=walk.close)
        return found.answered() if os.environ.get(NO_WALK_DRAIN) == "1" else found

    def propose_all(self, asked: Sequence[_Conflict]) -> list[Proposal | None]:
        """`propose` of each of ``asked`` (`check`'s conflicts): all their blocks expected
        before the first is located, their lines looked up in one pass over each file's hashes
        (`lineindex`; ``PATCHSTACK_NO_SHARED_LINES=1``: one proposal at a time)."""
        if not self.index.shared:
            return [self._finish(self._prepare([a])[0]) for a in asked]
        ready = self._prepare(asked)  # (and one walk for all their files)
        walk = self.walks.deleted_later([p for r in ready if r is not None for p in r.gone])
        try:
            return [self._finish(r, walk) for r in ready]
        finally:
            walk.close()

    def _prepare(self, asked: Sequence[_Conflict]) -> list[Asked | None]:
        """Each of ``asked`` made ready to locate; the patches' diffs of the files that need
        it read in one ``diff-tree`` (`Git.diff_patches`)."""
        files = [(self.deleted(*a), self.split(*a)) for a in asked]
        want = [bool(self.old_base and (f[0] or f[1])) for f in files]
        pairs = [(a[0], a[1]) for a, w in zip(asked, want, strict=True) if w]
        paths = sorted({p for f, w in zip(files, want, strict=True) if w for p in (*f[0], *f[1])})
        texts, ready = iter(self.git.diff_patches(pairs, paths)), list[Asked | None]()
        for (before, after, onto, merged), (gone, split), w in zip(asked, files, want, strict=True):
            text = next(texts).decode("utf-8", "surrogateescape") if w else ""
            diffs: dict[str, FileDiff] = {
                f.old_path: f
                for f in parse_diff(text.split("\n"), 0, "<the patch's change>", 1)
                if f.old_path is not None and f.old_path in {*gone, *split} and not f.binary
            }
            missing = {
                p: m for p in split if w and (m := lost_hunks(self.git, p, diffs.get(p), onto))
            }
            if not w or not (gone or missing):
                ready.append(None)
                continue
            blocks = [pr[0] for p in gone if p in diffs for h in diffs[p].hunks if (pr := sides(h))]
            self.index.expect([*blocks, *(old for m in missing.values() for _k, old, _n, _l in m)])
            ready.append(Asked(before, after, onto, merged, gone, diffs, missing))
        return ready

    def _finish(self, a: Asked | None, shared: Later | None = None) -> Proposal | None:
        if a is None:
            return None
        walk = shared or self.walks.deleted_later(a.gone)
        try:
            found = self._propose(a, walk)
            return found.answer() if found is not None else None
        finally:
            if shared is None:  # (answered, or not needed: a relocation that found nothing)
                walk.close()

    def _propose(self, a: Asked, deleted: Later) -> Unnamed | None:
        git, before, after, onto, merged = self.git, a.before, a.after, a.onto, a.merged
        gone, diffs, missing = a.gone, a.diffs, a.missing
        files = self._candidates(onto)
        Found = list[tuple[str, int, tuple[str, int] | str, list[str], list[str]]]
        # The files upstream kept first: the commit that took each one's lines out is walked
        # for (``log -S``) as soon as the file is known kept, beside the locating of the
        # deleted files' hunks and the deletion walk (the answers do not depend on the order).
        kept: dict[str, tuple[bytes, str]] = {}  # a split path -> its merge without the moved
        split: Found = []
        removed: dict[str, Callable[[], Oid | None]] = {}
        for path, hunks in missing.items():
            # (the file itself does not hold a missing block: `_missing`)
            moves: list[tuple[int, tuple[str, int], list[str], list[str], str]] = []
            for k, old, new, ln in hunks:
                where = self._locate(onto, old, files)
                if isinstance(where, str):
                    break  # a block edited in place, or found twice: git's conflict stands
                moves.append((k, where, old, new, ln))
            if len(moves) < len(hunks):
                continue
            body = merged_without(
                git, before, after, onto, path, diffs[path], [m[0] for m in moves]
            )
            if body is not None:
                kept[path] = (body, moves[0][4])
                removed[path] = self.walks.removed_later(path, moves[0][4])
                split += [(path, k, where, old, new) for k, where, old, new, _ln in moves]
        found: Found = []
        for path in gone:
            fd = diffs.get(path)
            for k, h in enumerate(fd.hunks if fd else (), start=1):
                pair = sides(h)
                where = self._locate(onto, pair[0], files) if pair else _AT_END
                old, new = pair if pair else ([], [])
                found.append((path, k, where, old, new))
        found += split
        if not found:
            return None
        moved, written = self._carry(found, files, merged)
        settled, tree_changes = self._settle([*gone, *kept], diffs, found, moved, written)
        for path, (body, _line) in kept.items():
            here = [r for r in settled if r.path == path]
            if here and here[0].whole:  # the file as upstream kept it, the rest of the patch in
                mode = git.entries_at(onto, [path])[path][0]
                tree_changes[path] = (mode, git.write_blob(body))
        tree = git.edit_tree(merged.tree, tree_changes) if tree_changes else merged.tree

        def answer() -> Proposal:
            commits = deleted()
            commits |= {p: answer() for p, answer in removed.items()}
            relocations = tuple(
                Relocation(r.path, str(commits[r.path] or ""), r.hunks) for r in settled
            )
            return Proposal(tree, relocations, tuple(tree_changes))

        return Unnamed(tree, tuple(tree_changes), answer, lambda: None)

    def _locate(self, onto: Oid, block: list[str], files: dict[str, str]) -> tuple[str, int] | str:
        """`locate` among the candidate ``files`` (path -> blob) that hold every line of the
        block: the others cannot hold it, so the answer is the same."""
        key = (onto, tuple(block))
        if key not in self._located:
            # (an empty block is found nowhere: `locate` says why)
            there = self._holding(onto, block)
            if onto not in self._paths_of:
                self._paths_of[onto] = {}
                for p, b in files.items():
                    self._paths_of[onto].setdefault(b, []).append(p)
            paths_of = self._paths_of[onto]
            holding = sorted((p, b) for b in there for p in paths_of.get(b, ()))  # (as in files)
            self._located[key] = locate(
                block,
                {p: self._lines_of(b) for p, b in holding},
                {p: self._index_of(b) for p, b in holding},
            )
        return self._located[key]

    def _holding(self, onto: Oid, block: list[str]) -> set[str]:
        """The blobs of ``onto``'s candidates that may hold the block (`LineIndex.block`)."""
        return self.index.block(self._line_sets[onto], block) if block else set()

    def _lines_of(self, blob: str) -> list[str]:
        if blob not in self._lines:
            self._lines[blob] = file_lines(self.index.content(blob))
        return self._lines[blob]

    def _index_of(self, blob: str) -> dict[str, list[int]]:
        if blob not in self._index:
            self._index[blob] = line_index(self._lines_of(blob))
        return self._index[blob]

    def _candidates(self, onto: Oid) -> dict[str, str]:
        """path -> blob of every text file of ``onto`` the drift changed (old base ->
        ``onto``): where moved code can have gone."""
        if onto not in self._candidates_of:
            self._candidates_of[onto] = self._read_candidates(onto)
        return self._candidates_of[onto]

    def _read_candidates(self, onto: Oid) -> dict[str, str]:
        assert self.old_base
        git = self.git
        old_tree, onto_tree = git.trees_of([self.old_base, onto])
        blobs = self.index.kept_candidates(old_tree, onto_tree)
        if blobs is None:
            diffs = git.raw_diffs([(old_tree, onto_tree)])[0]
            blobs = {path: new for _om, mode, _old, new, path in diffs if mode in _FILE_MODES}
            self.index.keep_candidates(old_tree, onto_tree, blobs)
        searched = self.index.searched(list(dict.fromkeys(blobs.values())))  # (by path)
        files = {p: b for p, b in sorted(blobs.items()) if b in searched}
        self._line_sets[onto] = sorted(set(files.values()))
        return files

    def _carry(
        self,
        found: Sequence[tuple[str, int, tuple[str, int] | str, list[str], list[str]]],
        files: dict[str, str],
        merged: MergeResult,
    ) -> tuple[dict[tuple[str, int], tuple[str, int] | str], dict[str, tuple[str, str]]]:
        """(path, hunk) -> (destination, 1-based line) carried, or why not: the located
        hunks of each destination merged into it by ``git merge-file``; and the destinations
        written, path -> (mode, blob)."""
        out: dict[tuple[str, int], tuple[str, int] | str] = {}
        by_dest: dict[str, list[tuple[str, int, int, list[str], list[str]]]] = {}
        for path, k, where, old, new in found:
            if isinstance(where, str):
                out[(path, k)] = where
            else:
                by_dest.setdefault(where[0], []).append((path, k, where[1], old, new))
        written: dict[str, tuple[str, str]] = {}
        ours_listing = self.git.entries_at(merged.tree, list(by_dest))
        for dest, hunks in sorted(by_dest.items()):
            spans = [(start, len(old)) for _p, _k, start, old, _n in hunks]
            bad = overlapping(spans)
            for i in sorted(bad):
                p, k = hunks[i][0], hunks[i][1]
                out[(p, k)] = f"its place in {dest} overlaps another hunk's"
            good = [h for i, h in enumerate(hunks) if i not in bad]
            if not good:
                continue
            base = self._lines_of(files[dest])
            theirs = replaced(base, [(s, len(o), n) for _p, _k, s, o, n in good])
            entry = ours_listing.get(dest)
            if entry is None or entry[0] not in _FILE_MODES:
                why = f"{dest} is not a file in the merge's result"
                out.update({(p, k): why for p, k, *_r in good})
                continue
            ours = self.git.read_blob(entry[1])
            result, clean = self.git.merge_file(ours, file_bytes(base), file_bytes(theirs))
            if not clean:
                why = f"merging it into {dest} conflicts with the patch's own change there"
                out.update({(p, k): why for p, k, *_r in good})
                continue
            written[dest] = (entry[0], self.git.write_blob(result))
            for p, k, start, _o, _n in good:
                out[(p, k)] = (dest, start + 1)
        return out, written

    def _settle(
        self,
        paths: Sequence[str],
        diffs: dict[str, FileDiff],
        found: Sequence[tuple[str, int, tuple[str, int] | str, list[str], list[str]]],
        moved: dict[tuple[str, int], tuple[str, int] | str],
        written: dict[str, tuple[str, str]],
    ) -> tuple[list[Relocation], dict[str, tuple[str, str] | None]]:
        changes: dict[str, tuple[str, str] | None] = dict(written)
        relocations = []
        starts = {(p, k): diffs[p].hunks[k - 1].old_start for p, k, *_r in found}
        for path in paths:
            hunks = []
            for (p, k), where in sorted(moved.items()):
                if p != path:
                    continue
                if isinstance(where, str):
                    hunks.append(Moved(k, starts[(p, k)], reason=where))
                else:
                    hunks.append(Moved(k, starts[(p, k)], where[0], where[1]))
            relocation = Relocation(path, "", tuple(hunks))
            relocations.append(relocation)
            if relocation.whole:  # every hunk went elsewhere: a deleted file stays deleted
                changes[path] = None
        return relocations, changes
