"""Building stacks in the object database.

The canonical chain: a patch applies exactly where it was made, on the series base plus every
earlier patch of the full series. ``C[0]`` is the base tree and ``C[k]`` the tree after the
k-th patch; applying uses ``git apply --cached`` on a temporary index, which never uses fuzz.

Any other place is reached by a three-way merge, like a cherry-pick: to put patch k on a tree
``T`` that is not ``C[k-1]`` (the stack lacks an earlier patch, or the base moved), merge
``C[k-1] -> T`` with ``C[k-1] -> C[k]`` using git's merge-ort (``merge-tree --write-tree``).
When ``T == C[k-1]`` the result is ``C[k]`` with no work at all. So ``push --only essential``
works when an essential patch's context was shaped by a diagnostic one, and the result of a
selection depends only on the set of patches selected, which is why ``pop --only X`` gives the
same tree as ``pop --all`` then ``push --except X``.

Results are cached in the git directory (``patchstack/cache``) keyed by their inputs; commits
are deterministic (committer = author, with the patch's date), so a re-push produces the very
same commit ids and the cache only saves the processes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ConflictError, InputError, PatchstackError
from ..git import Git, MergeResult, TempIndex
from ..model import paths
from ..model.conflict import Conflict, ConflictHunk
from ..model.ids import Oid
from ..model.series import Entry, Series
from ..store import Store
from . import contract
from .cache import Cache, chain_key

if TYPE_CHECKING:  # imported where a chain is built (not by status, nor a skip that builds none)
    from .committer import Committer
    from .fastpath import ProvenStream
    from .loaded import LoadedPatch


@dataclass
class Engine:
    git: Git
    series: Series
    load: Callable[[Entry], LoadedPatch]
    canonical_base: Oid  # the commit the patch files were made against
    default_author: Callable[[], tuple[str, str]]
    store: Store
    # A conflict settled without asking (a recorded resolution): (patch, base, ours, theirs,
    # the merge) -> the settled tree, or None.
    settle: Callable[[str, Oid, Oid, Oid, MergeResult], Oid | None] | None = None
    settled: list[str] = field(default_factory=list, init=False)  # patches it settled
    cache: Cache = field(init=False)
    shortcuts: bool = field(init=False)  # `contract.enabled` when the engine was made
    _chain: list[Oid] = field(default_factory=list, init=False)  # C[k]
    _commits: list[Oid] = field(default_factory=list, init=False)  # K[k]: C[k] as a commit
    _loaded: dict[str, LoadedPatch] = field(default_factory=dict, init=False)
    _index: TempIndex | None = field(default=None, init=False)
    _index_tree: Oid | None = field(default=None, init=False)
    # Commits made from their patch file on the canonical chain, with the SHA-256 of the file,
    # its strip level and whether the fast path made them (each file diff's hunks gave the
    # blob its index line names) or ``git apply`` did: `commands.proof` would find them exact,
    # and is told instead (`proof.remember_exact`). Without it a series whose files have no
    # full index lines (quilt's) was proven again by ``git apply``, 30 ms a patch.
    proven: list[tuple[Oid, str, int, bool]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.cache = Cache(self.git, self.store)
        self.shortcuts = contract.enabled()
        self._chain = [self.git.tree_of(self.canonical_base)]
        self._commits = [self.canonical_base]

    @functools.cached_property
    def committer(self) -> Committer:
        from .committer import Committer

        return Committer(self.git, self.cache, self.default_author)

    def close(self) -> None:
        """Let go of the temporary index (the results are saved with the checkout's cache)."""
        if self._index is not None:
            self._index.__exit__()
            self._index = None

    def seed(self, chain: Sequence[Oid]) -> None:
        """Take C[0..n] as known (a refresh computed them) instead of applying the files."""
        self._chain = list(chain)

    def patch(self, name: str) -> LoadedPatch:
        if name not in self._loaded:
            self._loaded[name] = self.load(self.series.entry(name))
        return self._loaded[name]

    # -- the canonical chain -------------------------------------------------------------------

    def canonical(self, k: int) -> Oid:
        """C[k]: the tree after the first k patches of the series on the canonical base."""
        if len(self._chain) <= k:
            self.extend(k)
        return self._chain[k]

    def canonical_commit(self, k: int) -> Oid:
        """K[k]: the commit of patch k on K[k-1], K[0] being the canonical base."""
        if len(self._commits) <= k:
            self.extend(k)
        return self._commits[k]

    def extend(self, k: int, tick: Callable[[], None] | None = None) -> None:
        """Compute K[j] and C[j] up to k: from the cache, else in one fast-import stream with
        hunks applied in Python and proven by blob ids, else with ``git apply``. A patch that
        does not apply where it was made but is contained there already (it applies in
        reverse: the base took it, and a refresh kept it as upstream's) adds nothing:
        ``C[j] = C[j-1]`` and ``K[j] = K[j-1]``, the one rule every builder follows."""
        from . import fastpath

        entries = self.series.entries
        session: ProvenStream | None = None
        unresolved: list[int] = []
        self._check_cached(k)
        ahead = fastpath.ReadAhead(k)  # over entries[0:k]: patch j is entries[j - 1]
        marked = self.series.deferred.keys() | self.series.upstream.keys()
        for j in range(len(self._commits), k + 1):
            parent = self._commits[j - 1]
            if entries[j - 1].name in marked:  # not on this chain: its file is an older one
                self._commits.append(parent)
                self._chain.append(self._chain[j - 1])
                if not self._chain[j - 1]:  # its parent's tree is the stream's, not known yet
                    unresolved.append(j)
                if tick:
                    tick()
                continue
            lp = self.patch(entries[j - 1].name)
            key = self._chain_key(parent, lp)
            commit = self.cache.get(key)
            if commit is not None and commit != parent:
                # Made from this file on this parent before (or learned from a refresh that
                # made it so): exact, as `commands.proof` would prove it again.
                digest = hashlib.sha256(lp.data).hexdigest()
                self.proven.append((Oid(commit), digest, lp.entry.strip_level, False))
            if commit is None and self.shortcuts and self._provable(lp):
                session = session or fastpath.ProvenStream(self.git, parent)
                due = ahead.due(j - 1)
                if due is not None:
                    session.prefetch(
                        p
                        for e in entries[due.start : due.stop]
                        for p in self.patch(e.name).patch.paths
                    )
                commit = session.commit(parent, lp, self.committer)
                if commit is not None:
                    digest = hashlib.sha256(lp.data).hexdigest()
                    self.proven.append((commit, digest, lp.entry.strip_level, True))
            if commit is None:
                if session is not None:
                    session.close()
                    session = None
                ahead.closed()
                self._resolve(unresolved)
                tree = self._apply_or_contained(self._chain[j - 1], lp)
                if tree is None:
                    commit = parent
                    tree = self._chain[j - 1]
                else:
                    commit = self.committer.commit(parent, tree, lp)
                    digest = hashlib.sha256(lp.data).hexdigest()
                    self.proven.append((commit, digest, lp.entry.strip_level, False))
                self._chain.append(tree)
            else:
                self._chain.append(Oid(""))
                unresolved.append(j)
            self._commits.append(commit)
            self.cache.put(key, commit)
            if tick:
                tick()
        if session is not None:
            session.close()
        self._resolve(unresolved)

    def _apply_or_contained(self, tree: Oid, lp: LoadedPatch) -> Oid | None:
        """The tree ``lp`` makes of ``tree`` (``git apply``), or None when ``tree`` contains it
        already (it applies in reverse); a ConflictError when neither."""
        key = f"contained {tree} {lp.digest} p{lp.entry.strip_level}"
        if self.cache.get(key) == tree:
            return None
        try:
            return self.apply_exact(tree, lp)
        except ConflictError:
            if self._index is None:
                self._index = self.git.temp_index()
            self._index.read_tree(tree)
            self._index_tree = None
            contained, _err = self._index.apply(lp.data, lp.entry.strip_level, reverse=True)
            if not contained:
                raise
            self.cache.put(key, tree)
            return None

    def contained(self, k: int) -> bool:
        """Does patch k of the series add nothing to the chain (its base holds it already)?"""
        return self.canonical_commit(k) == self.canonical_commit(k - 1)

    def _provable(self, lp: LoadedPatch) -> bool:
        """Can the fast path prove this patch at all (full index lines, text, no renames)?
        Others go to ``git apply`` without opening a stream that reads ahead for them."""
        from . import fastpath

        return all(fastpath.provable(f, self.git.fmt) for f in lp.patch.files)

    def _chain_key(self, parent: Oid, lp: LoadedPatch) -> str:
        return chain_key(parent, lp.digest, lp.entry)

    def learn_chain(self, base: Oid, made: Sequence[tuple[Entry, bytes, Oid]]) -> None:
        """Take these commits, each on the one before it from ``base``, as the canonical chain
        of patch files with these bytes (a refresh made them: each commit's tree is its file
        applied to its parent's, the author, date and message its own), so that the next push
        does not apply the files again (``git apply``, 30 ms a patch without full index
        lines). Saved with the cache (`close`)."""
        from .loaded import LoadedPatch

        parent = base
        for entry, data, commit in made:
            lp = LoadedPatch(entry, data)
            self.cache.put(self._chain_key(parent, lp), commit)
            parent = commit

    def _check_cached(self, k: int) -> None:
        """Ask at once whether the cached chain commits up to K[k] still exist."""
        parent = self._commits[-1]
        found = []
        for j in range(len(self._commits), k + 1):
            value = self.cache.peek(
                self._chain_key(parent, self.patch(self.series.entries[j - 1].name))
            )
            if value is None:
                break
            found.append(value)
            parent = Oid(value)
        self.cache.check(found)

    def _resolve(self, js: list[int]) -> None:
        for j, tree in zip(js, self.git.trees_of([self._commits[j] for j in js]), strict=True):
            self._chain[j] = tree
        js.clear()

    def check_through(self, tree: Oid, lp: LoadedPatch) -> None:
        """Refuse a patch whose paths go through a symlink, file or submodule of ``tree`` that
        the patch does not delete itself (a patch may turn a file into a folder)."""
        dirs = {d for f in lp.patch.files for p in f.paths for d in paths.leading_dirs(p)}
        if not dirs:
            return
        deleted = {f.old_path for f in lp.patch.files if f.old_path and f.new_path != f.old_path}
        modes = self.git.entry_modes(tree, sorted(dirs))
        modes = {d: (None if d in deleted else m) for d, m in modes.items()}
        for f in lp.patch.files:
            for p in f.paths:
                problem = paths.through_problem(p, modes)
                if problem:
                    raise InputError(
                        lp.shown or lp.entry.name,
                        f.lineno,
                        paths.refusal(p, problem),
                        "a patch may only change files inside the work tree; fix the patch",
                    )

    def apply_exact(self, tree: Oid, lp: LoadedPatch) -> Oid:
        self.check_through(tree, lp)
        key = f"apply {tree} {lp.digest} p{lp.entry.strip_level}"
        cached = self.cache.get(key)
        if cached:
            return cached
        if self._index is None:
            self._index = self.git.temp_index()
        if self._index_tree != tree:
            self._index.read_tree(tree)
        ok, err = self._index.apply(lp.data, lp.entry.strip_level)
        if not ok:
            self._index_tree = None
            from .merging import misfit_notes  # (a failure's: not every push's imports)

            notes = misfit_notes(self.git, tree, lp.patch)
            raise ConflictError(
                f"patch '{lp.entry.name}' does not apply where it was made"
                " (the series base plus the patches before it)",
                Conflict(lp.entry.name, lp.patch.paths, detail="\n".join([*notes, err.strip()])),
                "the patch file no longer matches the series: fix it, or run 'patchstack refresh'",
            )
        result = self._index.write_tree()
        self._index_tree = result
        self.cache.put(key, result)
        return result

    # -- placing patches -----------------------------------------------------------------------

    def place(self, tree: Oid, name: str, selected: Sequence[str] = ()) -> Oid:
        """The tree of patch ``name`` placed on ``tree`` (`contract.place`); ConflictError when
        it does not merge."""
        k = self.series.index(name) + 1
        before = self.canonical(k - 1)
        after = self.canonical(k)
        result = self.carry(before, tree, after, name)
        if isinstance(result, MergeResult) and self.settle is not None:
            settled = self.settle(name, before, tree, after, result)
            if settled is not None:
                self.settled.append(name)
                return settled
        if isinstance(result, MergeResult):
            report = self.conflict_report(
                name, result.tree, result.conflicted, result.messages, selected
            )
            raise ConflictError(
                f"patch '{name}' conflicts with the tree it is pushed onto",
                report,
                _conflict_hint(report),
            )
        return result

    def carry(self, before: Oid, tree: Oid, after: Oid, name: str) -> Oid | MergeResult:
        """The change ``before -> after`` (patch ``name``) placed on ``tree`` by the contract's
        merge, remembered in the cache; the merge itself when it does not merge cleanly."""
        if tree == before:
            return after
        if before == after:
            return tree
        key = f"merge {before} {tree} {after}"
        cached = self.cache.get(key)
        if cached:
            return cached
        result = contract.place_fast(self.git, before, tree, after, ("current", name))
        if not result.clean:
            return result
        self.cache.put(key, result.tree)
        return result.tree

    def commit(self, parent: Oid, tree: Oid, name: str) -> Oid:
        """The commit of patch ``name`` with ``tree`` on ``parent`` (`Committer.commit`)."""
        return self.committer.commit(parent, tree, self.patch(name))

    # -- reports -------------------------------------------------------------------------------

    def conflict_report(
        self, name: str, merged: Oid, files: Sequence[str], detail: str, selected: Sequence[str]
    ) -> Conflict:
        """The hunks of a failed placement, and the unselected patches before ``name`` that
        added lines the patch expected (pushing them too would likely help)."""
        from .merging import conflict_hunks

        hunks = conflict_hunks(self.git, merged, files)
        culprits = self.culprits(name, hunks, files, selected)
        return Conflict(name, tuple(files), tuple(hunks), culprits, detail, merged)

    def culprits(
        self,
        name: str,
        hunks: Sequence[ConflictHunk],
        files: Sequence[str],
        selected: Sequence[str],
    ) -> tuple[str, ...]:
        """The patches before ``name``, not in ``selected``, that touch ``files`` and added
        lines the conflicting hunks expected (every one touching them, when no hunk says)."""
        k = self.series.index(name)
        found = []
        chosen = set(selected)
        expected = {ln.strip() for h in hunks for ln in h.expected if ln.strip()}
        for entry in self.series.entries[:k]:
            if entry.name in chosen:
                continue
            lp = self.patch(entry.name)
            if not set(lp.patch.paths) & set(files):
                continue
            added = {ln.strip() for f in lp.patch.files for h in f.hunks for ln in h.added}
            if not expected or added & expected:
                found.append(entry.name)
        return tuple(found)


def _conflict_hint(report: Conflict) -> str:
    """The next step of a failed placement: the unselected patches the report names, when it
    names any; otherwise the tree under the patch changed its lines, and no patch helps."""
    if report.culprits:
        return (
            f"carry the patches it leans on too ({', '.join(report.culprits)}): 'push"
            " --with-deps' and 'pop --keep-deps' add them (nothing was changed)"
        )
    return (
        "the tree it is pushed onto changed these lines, not a missing patch: 'patchstack"
        " refresh' carries the series onto it and stops here for you to resolve"
        " (nothing was changed)"
    )


def no_base_error(base: str) -> PatchstackError:
    return PatchstackError(
        f"the series base {base[:12]} is not in this repository",
        "fetch it (git fetch), or run 'patchstack refresh --onto REV' to rebase the series",
    )
