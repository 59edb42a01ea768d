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

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import ConflictError, InputError, PatchstackError
from ..git import Git, MergeResult, TempIndex
from ..model import paths
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.series import Entry, Series
from ..model.stack import AppliedPatch
from . import fastpath
from .cache import Cache
from .fastpath import ProvenStream
from .loaded import LoadedPatch, commit_message
from .merging import conflict_hunks, merge, misfit_notes


@dataclass
class Engine:
    git: Git
    series: Series
    load: Callable[[Entry], LoadedPatch]
    canonical_base: Oid  # the commit the patch files were made against
    default_author: Callable[[], tuple[str, str]]
    cache: Cache = field(init=False)
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
        self.cache = Cache(self.git)
        self._chain = [self.git.tree_of(self.canonical_base)]
        self._commits = [self.canonical_base]

    def close(self, save_cache: bool = True) -> None:
        if self._index is not None:
            self._index.__exit__()
            self._index = None
        if save_cache:
            self.cache.save()

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
            self._extend(k)
        return self._chain[k]

    def canonical_commit(self, k: int) -> Oid:
        """K[k]: the commit of patch k on K[k-1], K[0] being the canonical base."""
        if len(self._commits) <= k:
            self._extend(k)
        return self._commits[k]

    def _extend(self, k: int, tick: Callable[[], None] | None = None) -> None:
        """Compute K[j] and C[j] up to k: from the cache, else in one fast-import stream with
        hunks applied in Python and proven by blob ids, else with ``git apply``."""
        entries = self.series.entries
        session: ProvenStream | None = None
        unresolved: list[int] = []
        self._check_cached(k)
        ahead = fastpath.ReadAhead(k)  # over entries[0:k]: patch j is entries[j - 1]
        for j in range(len(self._commits), k + 1):
            lp = self.patch(entries[j - 1].name)
            parent = self._commits[j - 1]
            key = self._chain_key(parent, lp)
            commit = self.cache.get(key)
            if commit is None and fastpath.FAST_PATH and self._provable(lp):
                session = session or ProvenStream(self.git, parent)
                due = ahead.due(j - 1)
                if due is not None:
                    session.prefetch(
                        p
                        for e in entries[due.start : due.stop]
                        for p in self.patch(e.name).patch.paths
                    )
                commit = session.commit(parent, lp, self)
                if commit is not None:
                    digest = hashlib.sha256(lp.data).hexdigest()
                    self.proven.append((commit, digest, lp.entry.strip_level, True))
            if commit is None:
                if session is not None:
                    session.close()
                    session = None
                ahead.closed()
                self._resolve(unresolved)
                tree = self.apply_exact(self._chain[j - 1], lp)
                commit = self.commit(parent, tree, lp.entry.name)
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

    def _provable(self, lp: LoadedPatch) -> bool:
        """Can the fast path prove this patch at all (full index lines, text, no renames)?
        Others go to ``git apply`` without opening a stream that reads ahead for them."""
        return all(fastpath.provable(f, self.git.fmt) for f in lp.patch.files)

    def _chain_key(self, parent: Oid, lp: LoadedPatch) -> str:
        entry = lp.entry
        return f"chain {parent} {lp.digest} {entry.strip_level} {entry.name} {entry.tag}"

    def learn_chain(self, base: Oid, made: Sequence[tuple[Entry, bytes, Oid]]) -> None:
        """Take these commits, each on the one before it from ``base``, as the canonical chain
        of patch files with these bytes (a refresh made them: each commit's tree is its file
        applied to its parent's, the author, date and message its own), so that the next push
        does not apply the files again (``git apply``, 30 ms a patch without full index
        lines). Saved with the cache (`close`)."""
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
            value = self.cache.entries.get(
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
        """Refuse a patch whose paths go through a symlink, file or submodule of ``tree``."""
        dirs = {d for f in lp.patch.files for p in f.paths for d in paths.leading_dirs(p)}
        if not dirs:
            return
        modes = self.git.entry_modes(tree, sorted(dirs))
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
        """The tree of patch ``name`` carried onto ``tree``; ConflictError when it cannot merge."""
        k = self.series.index(name) + 1
        before = self.canonical(k - 1)
        after = self.canonical(k)
        if tree == before:
            return after
        self.check_through(tree, self.patch(name))
        result = self.carry(before, tree, after, name)
        if isinstance(result, MergeResult):
            raise ConflictError(
                f"patch '{name}' conflicts with the tree it is pushed onto",
                self.conflict_report(
                    name, result.tree, result.conflicted, result.messages, selected
                ),
                "push the patches it depends on too, or resolve with 'patchstack refresh'",
            )
        return result

    def carry(self, before: Oid, tree: Oid, after: Oid, name: str) -> Oid | MergeResult:
        """The change ``before -> after`` (patch ``name``) carried onto ``tree`` by a three-way
        merge, remembered in the cache; the merge itself when it does not merge cleanly."""
        if tree == before:
            return after
        if before == after:
            return tree
        key = f"merge {before} {tree} {after}"
        cached = self.cache.get(key)
        if cached:
            return cached
        result = merge(self.git, before, tree, after, ("current", name))
        if not result.clean:
            return result
        self.cache.put(key, result.tree)
        return result.tree

    def commit(self, parent: Oid, tree: Oid, name: str) -> Oid:
        lp = self.patch(name)
        author = lp.patch.author
        date = lp.patch.date
        if not author or not date:
            default_author, default_date = self.default_author()
            author = author or default_author
            date = date or default_date
        message = commit_message(lp)
        digest = hashlib.sha1(f"{author}\0{date}\0{message}".encode("utf-8", "surrogateescape"))
        key = f"commit {parent} {tree} {digest.hexdigest()}"
        cached = self.cache.get(key)
        if cached:
            return cached
        oid = self.git.commit_tree(tree, [parent], message, author, date)
        self.cache.put(key, oid)
        return oid

    def build(
        self,
        base: Oid,
        base_tree: Oid,
        keep: Sequence[AppliedPatch],
        names: Sequence[str],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[tuple[str, Oid, Oid]]:
        """Commits for ``names`` on top of ``keep`` (on ``base``): [(name, commit, tree)].

        ``progress(done, total)`` is called as patches are made.
        """
        parent = keep[-1].commit if keep else base
        tree = keep[-1].tree if keep else base_tree
        selected = [p.name for p in keep] + list(names)
        last = max((self.series.index(n) + 1 for n in names), default=0)
        total = max(0, last + 1 - len(self._commits)) + len(names)
        done = [0]

        def tick() -> None:
            done[0] += 1
            if progress:
                progress(done[0], total)

        # Every placement needs the canonical chain up to its patch: made in one stream.
        self._extend(last, tick)
        built: list[tuple[str, Oid, Oid]] = []
        session: ProvenStream | None = None  # off the canonical chain: blob-proven commits
        pending: list[int] = []  # entries of `built` made by the stream, trees not known yet

        ahead = fastpath.ReadAhead(len(names))

        def settle() -> Oid:
            """Close the stream and fill in the trees of its commits; the current tree."""
            nonlocal session
            if session is not None:
                session.close()
                session = None
                ahead.closed()
            for i, t in zip(
                pending, self.git.trees_of([built[i][1] for i in pending]), strict=True
            ):
                built[i] = (built[i][0], built[i][1], t)
            pending.clear()
            return built[-1][2] if built else tree

        for at, name in enumerate(names):
            k = self.series.index(name) + 1
            if parent == self.canonical_commit(k - 1):
                settle()
                parent, tree = self.canonical_commit(k), self.canonical(k)
            else:
                commit = None
                if fastpath.FAST_PATH and self._provable(self.patch(name)):
                    session = session or ProvenStream(self.git, parent)
                    due = ahead.due(at)
                    if due is not None:
                        rest = names[due.start : due.stop]
                        session.prefetch(p for n in rest for p in self.patch(n).patch.paths)
                    commit = session.commit(parent, self.patch(name), self)
                if commit is not None:
                    parent, tree = commit, Oid("")
                    pending.append(len(built))
                else:
                    tree = settle()
                    tree = self.place(tree, name, selected)
                    parent = self.commit(parent, tree, name)
            built.append((name, parent, tree))
            tick()
        settle()
        return built

    # -- reports -------------------------------------------------------------------------------

    def conflict_report(
        self, name: str, merged: Oid, files: Sequence[str], detail: str, selected: Sequence[str]
    ) -> Conflict:
        """The hunks of a failed placement, and the unselected patches before ``name`` that
        added lines the patch expected (pushing them too would likely help)."""
        hunks = conflict_hunks(self.git, merged, files)
        k = self.series.index(name)
        culprits = []
        expected = {ln.strip() for h in hunks for ln in h.expected if ln.strip()}
        for entry in self.series.entries[:k]:
            if entry.name in selected:
                continue
            lp = self.patch(entry.name)
            if not set(lp.patch.paths) & set(files):
                continue
            added = {ln.strip() for f in lp.patch.files for h in f.hunks for ln in h.added}
            if not expected or added & expected:
                culprits.append(entry.name)
        return Conflict(name, tuple(files), tuple(hunks), tuple(culprits), detail, merged)


def no_base_error(base: str) -> PatchstackError:
    return PatchstackError(
        f"the series base {base[:12]} is not in this repository",
        "fetch it (git fetch), or run 'patchstack refresh --onto REV' to rebase the series",
    )
