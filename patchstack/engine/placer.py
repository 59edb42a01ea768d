"""Placing a replay's patches on the new base: one fast-import stream for every commit, and
one process (``merge-tree``) for each patch that needs a three-way merge.

The replay carries patch k from the old canonical chain (``C[k] -> C[k+1]``) onto the new tree
``T[k]``. A patch whose files are in ``T[k]`` what they were in ``C[k]`` is committed in the
stream with its entries of ``C[k+1]`` (`fastpath.ProvenStream.carry`: the merge would take
them, ours being the base on each of its paths), and its tree exists only inside the stream
until it ends. A
patch that needs a merge needs ``merge-tree`` (git < 2.40 has no ``--merge-base``) to see an
"ours" commit of ``T[k]`` and a "theirs" commit of ``C[k+1]`` whose one merge base has the
tree ``C[k]``.

**The anchor.** The last tree the replay knows outside the stream is the anchor ``A = T[m]``
(the new base, a merge's result, an applied commit's tree, a canonical tree). When every patch
from m to k-1 was carried that way and only changed files that existed (no file
added or deleted), and each step from m to k starts where the one before it ends (`_joined`:
not across a step with a change of its own, a deferred patch brought back or one marked
upstream's, whose trees are of another chain), merging ``C[m] -> C[k+1]`` into ``T[m]``
gives exactly ``T[k+1]``, the tree the merge of patch k alone onto ``T[k]`` gives:

- on every path those patches changed, ``T[m]`` and ``C[m]`` agree (the proof of each patch
  was that its preimage in T is its preimage in C) and so do ``T[k]`` and ``C[k]``: both merges
  take the C side there;
- on every other path, ``C[m] = C[k]`` and ``T[m] = T[k]``: both merges see the same three
  versions;
- renames: the paths where base and ours differ, and how, are the same in both merges, and the
  extra changes on the C side are modifications of files ours did not change, which are
  neither rename sources nor new files in a folder (no directory renames either).

So the merge is of three throwaway commits written with no process (`Git.throwaway_commit`):
a root commit of ``C[m]`` and, on it, one of ``C[k+1]`` and one of ``A``. They make a graph of
their own, whose merge base git finds at once (the canonical chain's own commits would make git
walk the upstream history to find it). When the condition does not hold (a patch added or
deleted a file, was skipped, conflicted, or was already upstream), or the merge does not come
out clean (the report must be the one of patch k alone), the merge is made exactly as
described: "ours" is a commit of ``T[k]`` made in the stream, which is checkpointed so that
``merge-tree`` sees it.

**Merge runs.** A merge costs a process on git < 2.49 (Debian 12's 2.39: 7-15 ms each, most
of a replay), so the patches k..j that follow a patch needing a merge are merged with it in
one: ``C[m] -> C[j+1]`` into the anchor ``T[m]`` (or ``C[k] -> C[j+1]`` into ``T[k]`` when the
anchor does not hold), when each of them only modifies files that exist in ``T[m]`` (no file
added, deleted or renamed, no ``.gitattributes``), no two of them change the same path, and
none is skipped, empty, applied on another base than its own or a step with a change of its
own (a run across an upstream-marked step once merged a deferred patch's change, which its
recorded trees hold, into the patch before it). Then, for every path p of
patch q in the run, the merge sees the very three versions the merge of patch q alone
would: its base ``C[m][p] = C[q][p]`` or, where the proven patches since the anchor changed
p, ``T[m][p] = C[m][p]`` (their proof) so that both merges take the C side; no other patch of
the run touches p, and with no file added or deleted on the C side there are no renames or
directory renames to find, so each file is merged on its own, as merge-ort does when nothing
is renamed. ``T[q+1]`` is then ``T[q]`` with q's paths as the merge left them: patch q's
commit is made in the stream from those entries alone. A run whose merge conflicts keeps the
patches before the first conflicting one (their files merged cleanly, on their own) and
leaves that one to be merged alone, for its own report. `tests/test_replay_exact.py` checks
the trees patch by patch against ``git rebase``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..git import FastImport, MergeResult, RawDiff
from ..model.ids import Oid
from .chain import Engine
from .contract import place_region
from .fastpath import PREFETCH_WINDOW, REGULAR, ProvenStream
from .merging import readable
from .renames import RenameProof, lost_of
from .replay import Done, Step

MERGE_RUN = 32  # patches merged in one merge-tree, at most


class Placer:
    """The commits of a replay on the new base (`replay.replay` drives it)."""

    def __init__(self, engine: Engine, parent: Oid, names: Sequence[str]) -> None:
        self.engine = engine
        self.git = engine.git
        self.git.use_scratch()  # what the replay writes is throwaway until published
        self.parent = parent
        self.names = list(names)
        self.session: ProvenStream | None = None
        self.index = {n: i for i, n in enumerate(self.names)}
        self.fetched = 0  # the stream has looked up what the patches before this one change
        self.paths: dict[str, Sequence[str]] = {}  # what each patch changes, once read
        self.steps: Sequence[Step] = ()
        self.steps_before: list[Oid] = []
        self.skip: frozenset[str] = frozenset()
        self.anchor: tuple[int, Oid] = (0, Oid(""))  # (m, T[m]), T[m] readable by git
        self.followed = False  # every patch since the anchor was proven and changed files only
        self.ahead: dict[int, Done] = {}  # patches a merge run placed, by index
        self.conflicting: set[int] = set()  # patches a merge run found conflicting
        self.diffs: dict[int, list[RawDiff]] = {}  # C[k] -> C[k+1], by `_diff`
        self.tried = 0  # merges made in the hope of saving others (anchor, runs) ...
        self.wasted = 0  # ... and those of them that did not (see `_speculate`)
        self.renames: RenameProof | None = None  # for patches whose files ours lost
        # the verdicts an earlier command's proof reached (`RenameProof.known`), if any
        self.known: Callable[[], Sequence[Sequence[str]]] | None = None
        # Steps that may need a patch left out (`needs.Needs.touches`): never in a merge run.
        self.watching: Callable[[int], bool] | None = None

    def begin(
        self,
        steps: Sequence[Step],
        start: int,
        tree: Oid,
        skip: frozenset[str] = frozenset(),
        background: bool = True,
    ) -> None:
        """``background``: the rename proof's comparison starts now, in the background (a
        replay going through every patch), else at its first question (`RenameProof.start`)."""
        self.steps = steps
        self.steps_before = [s.before for s in steps]  # C[0..n-1]
        self.skip = skip
        self.anchor = (start, tree)
        self.followed = True
        if start < len(steps) and self.engine.shortcuts:
            lost = self._lost(start, tree)
            self.renames = RenameProof(self.git, steps[start].before, tree, lost, self.known)
            self.renames.start(background)

    def _lost(self, start: int, tree: Oid) -> list[tuple[str, str]]:
        """What the patches of the replay may find that ours lost (`RenameProof`), the old
        chain's diffs of every patch read now, in one process."""
        todo = [q for q in range(start, len(self.steps)) if q not in self.diffs]
        pairs = [(self.steps[q].before, self.steps[q].after) for q in todo]
        self.diffs.update(zip(todo, self.git.raw_diffs(pairs), strict=True))
        return lost_of(self.git, (self.diffs[q] for q in range(start, len(self.steps))), tree)

    def broken(self) -> None:
        """T no longer follows C from the anchor on (see the module docstring)."""
        self.followed = False

    def _open(self) -> ProvenStream:
        if self.session is None:
            self.session = ProvenStream(self.git, self.parent, named=False)
        return self.session

    def _prefetch(self, start: int) -> None:
        """Have the stream look up what the next patches change, and the old chain's raw diff
        of each, at once (a window of them: after a merge the tree is another, and it is
        looked up again)."""
        end = min(start + PREFETCH_WINDOW, len(self.steps))
        self._open().look_up(self._paths(start, end))
        todo = [q for q in range(start, end) if q not in self.diffs]
        pairs = [(self.steps[q].before, self.steps[q].after) for q in todo]
        self.diffs.update(zip(todo, self.git.raw_diffs(pairs), strict=True))
        self.fetched = max(self.fetched, end)

    def _paths(self, start: int, end: int) -> list[str]:
        """The paths patches ``start`` to ``end - 1`` change."""
        for name in self.names[start:end]:
            if name not in self.paths:
                self.paths[name] = self.engine.patch(name).head.paths
        return [p for n in self.names[start:end] for p in self.paths[n]]

    def _diff(self, q: int) -> list[RawDiff]:
        """The old chain's raw diff of patch q, ``C[q] -> C[q+1]`` (read ahead by `_prefetch`)."""
        if q not in self.diffs:
            self._prefetch(q)
        return self.diffs[q]

    @property
    def stream(self) -> FastImport:
        return self._open().stream

    def place(self, name: str) -> Oid | None:
        """Patch ``name`` on the current parent, when upstream left its files as the old
        chain had them before it (`ProvenStream.carry`), or None."""
        if not self.engine.shortcuts:
            return None
        lp = self.engine.patch(name)
        i = self.index[name]
        if i >= self.fetched:
            self._prefetch(i)
        diff = self._diff(i)
        commit = self._open().carry(
            self.parent, lp, self.engine.committer, diff, self.steps_before[i]
        )
        if commit is None:
            return None
        if any(d[0] == "000000" or d[1] == "000000" for d in diff):
            self.followed = False  # a file added or deleted
        self.parent = commit
        return commit

    def tree(self) -> Oid:
        """The tree of the last commit made (known to the stream)."""
        return self.stream.tree_of(self.parent)

    def merge(
        self, i: int, step: Step, tree: Oid, labels: tuple[str, str], base_label: str | None
    ) -> MergeResult:
        """Patch i (``step``) merged onto ``tree`` (= T[i]), as `contract.place` would: on its
        paths alone where that is proven the same (`contract.place_region`), else from the
        anchor, else exactly."""
        git = self.git
        if self.engine.shortcuts:
            self.stream.checkpoint()  # ``tree`` readable
            found = place_region(
                git,
                step.before,
                tree,
                step.after,
                self._diff(i),
                labels,
                base_label,
                self.renames,
            )
            if found is not None:
                return found
        if self._anchored(i) and self._speculate():
            m, anchor = self.anchor
            result = git.merge_trees(self.steps_before[m], anchor, step.after, labels)
            self.tried += 1
            if result.clean:
                return readable(git, result)
            self.wasted += 1
        if git.batch_merges():  # trees merged as they are: ``tree`` must be visible to git
            self.stream.checkpoint()
            return readable(git, git.merge_trees(step.before, tree, step.after, labels), base_label)
        base = git.throwaway_commit(step.before, None, "base")
        theirs = git.throwaway_commit(step.after, base, labels[1])
        ours = git.stream_commit(self.stream, tree, base, labels[0])
        return readable(git, git.merge_commits(ours, theirs, labels), base_label)

    def _speculate(self) -> bool:
        """Is a merge that may have to be made again worth trying? An anchor merge that does
        not come out clean, or a merge run whose first patch conflicts, is made again for the
        one patch: a process saved when it works (7-15 ms), a whole merge lost when it does
        not, and on a large upstream move every merge costs hundreds of milliseconds. Once
        most of them (two at least) were lost, this replay stops trying. The trees are the
        same either way: each way is the contract's."""
        return self.wasted < 2 or self.wasted * 2 <= self.tried

    def _anchored(self, i: int) -> bool:
        """May patch i be merged from the anchor (see the module docstring)? Not when a merge
        run saw it conflict (so would this), and not when it both deletes and adds files:
        merge-ort may pair those as renames by their contents in the anchor's base, which the
        proven patches since may have changed. Nor when the anchor is T[i] itself: that
        merge is patch i's own, made exactly (with its labels) when needed."""
        if not (self.engine.shortcuts and self.followed) or i in self.conflicting:
            return False
        if self.anchor[0] == i or not self._joined(self.anchor[0], i):
            return False
        diff = self._diff(i)
        return not (any(d[0] == "000000" for d in diff) and any(d[1] == "000000" for d in diff))

    def _joined(self, m: int, k: int) -> bool:
        """Do steps m..k make one chain, each starting where the one before it ends? Not
        across a patch placed with a change of its own (a deferred patch brought back, one
        kept as upstream's): ``C[m] -> C[k+1]`` would leave that change out."""
        return all(self.steps[q].after == self.steps[q + 1].before for q in range(m, k))

    def placed(self, i: int) -> Done | None:
        """Patch i, when a merge run placed it already."""
        return self.ahead.pop(i, None)

    def merge_run(self, i: int, tree: Oid, labels: tuple[str, str]) -> Done | None:
        """Patch i (``tree`` = T[i], or "" when only the stream knows it) and the patches
        after it merged at once, when they can be (see "Merge runs" in the module docstring):
        patch i's result, the others' kept for `placed`. None: patch i is to be merged alone
        (or is not to be merged)."""
        if i in self.conflicting or not self.engine.shortcuts:
            return None
        run = self._run(i)
        if len(run) < 2:
            return None
        git = self.git
        if self.followed and self._joined(self.anchor[0], i):
            m, anchor = self.anchor
        else:
            tree = tree or self.tree()
            self.stream.checkpoint()  # T[i] made readable: it is the anchor
            m, anchor = i, tree
        paths = {q: self._paths(q, q + 1) for q in run}
        every = [p for q in run for p in paths[q]]
        ours = git.entries_at(anchor, every)
        for n, q in enumerate(run):  # each file there, and a regular one
            if any(ours.get(p, ("",))[0] not in REGULAR for p in paths[q]):
                run = run[:n]
                break
        if len(run) < 2 or not self._speculate():
            return None
        result = git.merge_trees(self.steps_before[m], anchor, self.steps[run[-1]].after, labels)
        self.tried += 1
        end = len(run)
        if not result.clean:
            owner = {p: n for n, q in enumerate(run) for p in paths[q]}
            end = min((owner.get(p, 0) for p in result.conflicted), default=0)
            self.conflicting.add(run[end])
            if end == 0:
                self.wasted += 1
                return None
        # What each path was before its patch (T[q] = T[i] there): where the proven patches
        # since the anchor changed it, what they left (T[i] = C[i] there: their proof), else
        # the anchor's.
        proven = set(self._paths(m, i)).intersection(every)
        before: dict[str, tuple[str, str] | None] = {p: ours.get(p) for p in every}
        if proven:
            left = git.entries_at(self.steps_before[i], sorted(proven))
            before.update({p: left.get(p) for p in proven})
        merged = git.entries_at(result.tree, [p for q in run[:end] for p in paths[q]])
        session = self._open()
        for n, q in enumerate(run[:end]):
            if any(merged.get(p) is None for p in paths[q]):  # not a file any more: stop here
                end = n
                break
            lp = self.engine.patch(self.steps[q].name)
            changes = [(*merged[p], p) for p in paths[q] if merged[p] != before[p]]
            commit = None
            if changes:
                commit = session.commit_entries(self.parent, lp, self.engine.committer, changes)
                self.parent = commit
            if n == 0 and tree and not commit:  # upstream has it already
                first = Done(lp.entry.name, tree, tree)
            elif n == 0:
                first = Done(lp.entry.name, tree, Oid(""), commit=self.parent)
            else:  # both trees filled in at the end (`resolve`): the tree of the last commit
                # made (its own, or the one before it when upstream has the patch already)
                # and the tree of the patch before it
                self.ahead[q] = Done(lp.entry.name, Oid(""), Oid(""), commit=self.parent)
        if end == 0:
            return None
        later = {p: before[p] for q in run[end:] for p in paths[q]}
        reached = git.edit_tree(result.tree, later) if later else result.tree
        self.anchor = (run[end - 1] + 1, reached)
        self.followed = True
        session.moved(reached, self._paths(run[end - 1] + 1, self.fetched))
        return first

    def _run(self, i: int) -> list[int]:
        """Patch i and the patches after it that may be merged with it (by what they are;
        whether their files are in the tree is for the caller to see)."""
        run: list[int] = []
        seen: set[str] = set()
        for q in range(i, min(i + MERGE_RUN, len(self.steps))):
            step = self.steps[q]
            if (
                step.name in self.skip
                or step.deferred
                or step.before == step.after
                or (q != i and (q in self.conflicting or not self._joined(q - 1, q)))
                or (q != i and self.watching is not None and self.watching(q))
            ):
                break
            if step.real is not None and step.real != (step.before, step.after):
                break  # applied elsewhere: its applied commit may be taken as it is
            lp = self.engine.patch(step.name)
            files = lp.head.files
            if not files or not self.engine.committer.streamable(lp):
                break
            if any(f.renamed or f.copied for f in files) or any(
                "000000" in (d[0], d[1]) for d in self._diff(q)
            ):
                break  # a file added, deleted or renamed
            names = set(lp.head.paths)
            if names & seen or any(p.rsplit("/", 1)[-1] == ".gitattributes" for p in names):
                break
            seen |= names
            run.append(q)
        return run

    def commit(self, i: int, name: str, tree: Oid) -> Oid:
        """The commit of patch i whose tree is ``tree`` (readable by git: a merge's result,
        an applied commit's or a canonical tree), on the current parent; it is the anchor."""
        session = self._open()
        lp = self.engine.patch(name)
        commit = session.commit_tree(self.parent, lp, self.engine.committer, tree)
        if commit is None:
            session.stream.checkpoint()
            commit = self.engine.commit(session.stream.ids([self.parent])[0], tree, name)
        session.moved(tree, self._paths(i + 1, self.fetched))
        self.parent = commit
        self.anchor = (i + 1, tree)
        self.followed = True
        return commit

    def resolve(self, done: list[Done]) -> None:
        """Name the commits the stream made (by their marks until now), close it, and fill in
        their trees."""
        if self.session is not None:
            ids = self.session.stream.ids([d.commit or "" for d in done])
            for i, (d, commit) in enumerate(zip(done, ids, strict=True)):
                if d.commit:
                    done[i] = replace(d, commit=commit)
            self.session.close()
            self.session = None
        pending = [i for i, d in enumerate(done) if not d.tree]
        trees = self.git.trees_of([done[i].commit or "" for i in pending])
        for i, t in zip(pending, trees, strict=True):
            done[i] = replace(done[i], tree=t)
        for i, d in enumerate(done):
            if not d.parent:  # carried onto the result of the patch before it
                done[i] = replace(d, parent=done[i - 1].tree)
