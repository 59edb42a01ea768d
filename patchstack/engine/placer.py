"""Placing a replay's patches on the new base: one fast-import stream for every commit, and
one process (``merge-tree``) for each patch that needs a three-way merge.

The replay carries patch k from the old canonical chain (``C[k] -> C[k+1]``) onto the new tree
``T[k]``. A patch whose files upstream did not touch is committed in the stream, proven by blob
ids (`fastpath.ProvenStream`), and its tree exists only inside the stream until it ends. A
patch that needs a merge needs ``merge-tree`` (git < 2.40 has no ``--merge-base``) to see an
"ours" commit of ``T[k]`` and a "theirs" commit of ``C[k+1]`` whose one merge base has the
tree ``C[k]``.

**The anchor.** The last tree the replay knows outside the stream is the anchor ``A = T[m]``
(the new base, a merge's result, an applied commit's tree, a canonical tree). When every patch
from m to k-1 was committed by the proven path and only changed files that existed (no file
added or deleted), merging ``C[m] -> C[k+1]`` into ``T[m]`` gives exactly ``T[k+1]``, the tree
the merge of patch k alone onto ``T[k]`` gives:

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..git import FastImport, MergeResult
from ..model.ids import Oid
from .chain import Engine
from .fastpath import ProvenStream
from .merging import readable
from .replay import Done, Step

PREFETCH_WINDOW = 64  # patches


class Placer:
    """The commits of a replay on the new base (`replay.replay` drives it)."""

    def __init__(self, engine: Engine, parent: Oid, names: Sequence[str]) -> None:
        self.engine = engine
        self.git = engine.git
        self.parent = parent
        self.names = list(names)
        self.session: ProvenStream | None = None
        self.index = {n: i for i, n in enumerate(self.names)}
        self.fetched = 0  # the stream has looked up what the patches before this one change
        self.paths: dict[str, Sequence[str]] = {}  # what each patch changes, once read
        self.steps_before: list[Oid] = []
        self.anchor: tuple[int, Oid] = (0, Oid(""))  # (m, T[m]), T[m] readable by git
        self.followed = False  # every patch since the anchor was proven and changed files only

    def begin(self, steps: Sequence[Step], start: int, tree: Oid) -> None:
        self.steps_before = [s.before for s in steps]  # C[0..n-1]
        self.anchor = (start, tree)
        self.followed = True

    def broken(self) -> None:
        """T no longer follows C from the anchor on (see the module docstring)."""
        self.followed = False

    def _open(self) -> ProvenStream:
        if self.session is None:
            self.session = ProvenStream(self.git, self.parent)
        return self.session

    def _prefetch(self, start: int) -> None:
        """Have the stream look up what the next patches change, at once (a window of them:
        after a merge the tree is another, and it is looked up again)."""
        end = start + PREFETCH_WINDOW
        self._open().prefetch(self._paths(start, end))
        self.fetched = end

    def _paths(self, start: int, end: int) -> list[str]:
        """The paths patches ``start`` to ``end - 1`` change."""
        for name in self.names[start:end]:
            if name not in self.paths:
                self.paths[name] = self.engine.patch(name).patch.paths
        return [p for n in self.names[start:end] for p in self.paths[n]]

    @property
    def stream(self) -> FastImport:
        return self._open().stream

    def place(self, name: str) -> Oid | None:
        """Patch ``name`` on the current parent by the proven path, or None."""
        lp = self.engine.patch(name)
        if self.index[name] >= self.fetched:
            self._prefetch(self.index[name])
        commit = self._open().commit(self.parent, lp, self.engine)
        if commit is None:
            return None
        if any(f.old_path is None or f.new_path is None for f in lp.patch.files):
            self.followed = False  # a file added or deleted
        self.parent = commit
        return commit

    def tree(self) -> Oid:
        """The tree of the last commit made (known to the stream)."""
        return self.stream.tree_of(self.parent)

    def merge(
        self, i: int, step: Step, tree: Oid, labels: tuple[str, str], base_label: str
    ) -> MergeResult:
        """Patch i (``step``) merged onto ``tree`` (= T[i]), as `merging.merge` would."""
        git = self.git
        if self.followed:
            m, anchor = self.anchor
            result = git.merge_trees(self.steps_before[m], anchor, step.after, labels)
            if result.clean:
                return readable(git, result)
        if git.batch_merges():  # trees merged as they are: ``tree`` must be visible to git
            self.stream.checkpoint()
            return readable(git, git.merge_trees(step.before, tree, step.after, labels), base_label)
        base = git.throwaway_commit(step.before, None, "base")
        theirs = git.throwaway_commit(step.after, base, labels[1])
        ours = git.stream_commit(self.stream, tree, base, labels[0])
        return readable(git, git.merge_commits(ours, theirs, labels), base_label)

    def commit(self, i: int, name: str, tree: Oid) -> Oid:
        """The commit of patch i whose tree is ``tree`` (readable by git: a merge's result,
        an applied commit's or a canonical tree), on the current parent; it is the anchor."""
        session = self._open()
        lp = self.engine.patch(name)
        commit = session.commit_tree(self.parent, lp, self.engine, tree)
        if commit is None:
            session.stream.checkpoint()
            commit = self.engine.commit(self.parent, tree, name)
        session.moved(tree, self._paths(i + 1, self.fetched))
        self.parent = commit
        self.anchor = (i + 1, tree)
        self.followed = True
        return commit

    def resolve(self, done: list[Done]) -> None:
        """Close the stream and fill in the trees of the commits it made."""
        if self.session is not None:
            self.session.close()
            self.session = None
        pending = [i for i, d in enumerate(done) if not d.tree]
        trees = self.git.trees_of([done[i].commit or "" for i in pending])
        for i, t in zip(pending, trees, strict=True):
            done[i] = replace(done[i], tree=t)
        for i, d in enumerate(done):
            if not d.parent:  # carried onto the result of the patch before it
                done[i] = replace(d, parent=done[i - 1].tree)
