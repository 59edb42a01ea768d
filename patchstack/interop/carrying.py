"""Carrying ``import branch``'s patches onto the upstream commit a merge brought in: the
replay ``refresh`` runs (`engine.replay.replay` with its `Placer`: patches whose files
upstream left alone are carried by ids in one fast-import stream, the others merged by
merge-ort), on patches that are not files yet but changes between trees (`Walk.trees`).

**The merge's own resolution.** A conflict is settled from the merge commit's tree, as
``refresh`` settles one after ``git pull`` merged upstream into the stack
(`engine.replay.merge_resolver`): for a path whose last patch is the one being carried, the
merge commit's version is that patch's, as the branch's author resolved it. Where a later
patch also changes the path, the merge's version holds that patch's change too, and is
taken for this patch only where it says which side the merge took: upstream's file as it is
(no patch's change to it survived the merge: this patch's is dropped too), or the branch's
file as it was (upstream's change was dropped: this patch's file is its old one). Otherwise
it is taken less the later patches' changes (the merge's tree merged with the chain from the
last patch back to this one), when that merges cleanly. What is left is a conflict the merge
cannot settle: the import stops there. With ``--take-merge`` the patch takes the merge's
version there instead: the regions where the later patches' changes do not come apart from
upstream's keep them (the whole file where it cannot be read so: binary, or holding marker
lines of its own), the rest of the file is without them; the summary names the patch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..checkout import FileSummary, PatchSummary
from ..engine.chain import Engine
from ..engine.loaded import LoadedPatch
from ..engine.placer import Placer
from ..engine.replay import Done, Resolver, Step, merge_resolver, replay
from ..git import Git, MergeResult
from ..model.branch import Piece, Walk
from ..model.conflict import marker_lines, ours_side
from ..model.ids import Oid
from ..model.series import Entry, parse_series
from ..store import Store

NULL_MODE = "000000"


def steps_of(walk: Walk) -> tuple[Step, ...]:
    """Each patch as the replay takes it: its change ``trees[k] -> trees[k + 1]``."""
    return tuple(
        Step(p.name, Oid(walk.trees[k]), Oid(walk.trees[k + 1])) for k, p in enumerate(walk.pieces)
    )


def _summary(piece: Piece, raw: Sequence[tuple[str, str, str, str, str]]) -> PatchSummary:
    """What the engine needs of a patch it commits: the header and the paths (renames are
    a deletion and an addition here, which every shortcut leaves to the merge)."""
    subject, _, description = piece.message.partition("\n\n")
    files = tuple(
        FileSummary(path, False, False, old_id, new_id, old_mode, new_mode)
        for old_mode, new_mode, old_id, new_id, path in raw
    )
    paths = tuple(f.path for f in files)
    return PatchSummary(
        paths, files, " ".join(subject.split()), description, piece.author, piece.date
    )


class Carrier:
    """The engine over the import's patches, for the replay onto one upstream commit."""

    def __init__(self, git: Git, walk: Walk, onto: Oid) -> None:
        self.git = git
        self.take_merge = walk.take_merge
        self.whole: list[str] = []  # patches that took the merge's version (--take-merge)
        self.steps = steps_of(walk)
        raws = git.raw_diffs([(s.before, s.after) for s in self.steps])
        self.paths = {s.name: [r[4] for r in raw] for s, raw in zip(self.steps, raws, strict=True)}
        entries = [Entry(p.name, p.tag or "essential") for p in walk.pieces]
        header = "# import branch\n"
        series = parse_series(header + "".join(e.render() for e in entries))
        summaries = {p.name: _summary(p, raw) for p, raw in zip(walk.pieces, raws, strict=True)}

        def load(entry: Entry) -> LoadedPatch:
            return LoadedPatch(entry, b"", summary=summaries[entry.name])

        def default_author() -> tuple[str, str]:
            return git.ident()[0], git.commit_date(onto)

        self.onto = onto
        # A cache of its own, never saved: its entries name throwaway trees of the replay.
        self.engine = Engine(git, series, load, onto, default_author, Store(""))

    def close(self) -> None:
        self.engine.close()

    def _narrow(self, entries: dict[str, tuple[str, str] | None]) -> Oid:
        """A tree of these entries alone: merged on their own, file by file, with no rename
        across the rest of the tree to find (and nothing of its size to read)."""
        return self.git.edit_tree(self.git.fmt.empty_tree, entries)

    def _where_stuck(
        self, merged: tuple[str, str] | None, sides: Sequence[tuple[str, str] | None]
    ) -> tuple[str, str] | None:
        """A file of the merge's version less the later patches' changes that did not merge
        (``merged``, with markers): each conflicting region from the merge's side, the rest
        without the later changes; None (take the merge's file whole) where the file cannot
        be read so: a side missing or holding marker lines of its own, no markers."""
        git = self.git
        if merged is None or any(e is None for e in sides):
            return None
        for entry in sides:
            assert entry is not None
            if marker_lines(git.read_blob(entry[1]).decode("utf-8", "surrogateescape")):
                return None
        data = git.read_blob(merged[1])
        ours = ours_side(data)
        if ours is None or ours == data:
            return None
        mode = sides[0][0] if sides[0] else merged[0]
        return mode, git.write_blob(ours)

    def run(
        self,
        start: int,
        tree: Oid,
        parent: Oid,
        labels: tuple[str, str],
        resolution: Oid,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[list[Done], tuple[str, Oid, MergeResult] | None]:
        """Replay steps[start:] onto ``tree`` (the commit ``parent``'s): the patches done,
        and the first conflict the merge's tree ``resolution`` cannot settle."""
        placer = Placer(self.engine, parent, [s.name for s in self.steps])
        done, conflicts = replay(
            self.git,
            self.steps,
            start,
            tree,
            labels,
            placer=placer,
            progress=progress,
            resolve=self.resolver(resolution),
        )
        return done, (conflicts[0] if conflicts else None)

    def commit(self, parent: Oid, tree: Oid, name: str) -> Oid:
        return self.engine.commit(parent, tree, name)

    def resolver(self, resolution: Oid) -> Resolver:
        """The merge's own resolution (see the module docstring)."""
        git = self.git
        owners: dict[str, str] = {}
        for step in self.steps:
            for path in self.paths[step.name]:
                owners[path] = step.name
        index = {s.name: k for k, s in enumerate(self.steps)}
        last = self.steps[-1].after if self.steps else Oid("")
        upstream = git.tree_of(self.onto)
        taken = merge_resolver(git, resolution, owners)

        def resolve(step: Step, tree: Oid, merged: MergeResult) -> Oid | None:
            found = taken(step, tree, merged)
            if found is not None or not merged.conflicted:
                return found
            name = step.name
            paths = list(merged.conflicted)
            mine = self.steps[index[name]].after
            merge, up, old, had = (
                git.entries_at(t, paths) for t in (resolution, upstream, last, mine)
            )
            chosen: dict[str, tuple[str, str] | None] = {}
            rest = []
            for p in paths:
                if owners.get(p) == name or merge.get(p) == up.get(p):
                    chosen[p] = merge.get(p)  # its last patch, or the merge took upstream's
                elif merge.get(p) == old.get(p):
                    chosen[p] = had.get(p)  # the merge kept the branch's file as it was
                else:
                    rest.append(p)
            if rest:  # the merge's version less the later patches' changes, file by file
                base, ours, theirs = (
                    self._narrow({p: e.get(p) for p in rest}) for e in (old, merge, had)
                )
                back = git.merge_trees(base, ours, theirs, ("merge", "without later"))
                stuck = set(rest) & set(back.conflicted)
                if stuck and not self.take_merge:
                    return None
                if stuck:  # --take-merge: the later changes come with this patch, there
                    self.whole.append(name)
                less = git.entries_at(back.tree, rest)
                for p in rest:
                    if p not in stuck:
                        chosen[p] = less.get(p)
                    else:
                        sides = (merge.get(p), old.get(p), had.get(p))
                        chosen[p] = self._where_stuck(less.get(p), sides) or merge.get(p)
            return git.edit_tree(merged.tree, chosen)

        return resolve
