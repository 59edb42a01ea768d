"""Is each applied commit still exactly its patch file? Proven by content, never assumed.

For every applied patch the commit's change (its parent tree to its tree) is compared with the
patch file:

- ``exact``: the file's ``index`` lines name the commit's blobs, *and* its hunks applied to the
  preimage blob give that very blob (so a hand edit of a ``+`` line with stale index lines is
  caught: it no longer hashes to the id the line names);
- ``carried``: the same lines added and removed, at another place (a merge carried it), or
  exactly what the three-way merge of the patch file onto its parent's tree gives (upstream
  already had part of it, or all: an empty commit), as ``push --onto`` makes it;
- ``edited``: the patch file was edited by hand since the commit was made: the operation log's
  last record of the file proves the commit, the file on disk is another text. ``push``, ``pop``
  and ``refresh`` apply the new version;
- ``differs``: the commit was changed (``git commit --amend``, ``rebase -i``): nothing the log
  recorded proves it. ``pop``, ``push`` and a ``refresh`` that moves the base refuse to drop it;
  ``refresh`` with no base move adopts it into the patch file, ``--discard-changes`` drops it.

Whether a patch file's hunks give its index lines is cached by the file's digest, and the
verdicts ``exact`` and ``carried`` by the commit and that digest (`_ConsistencyCache`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...checkout import Checkout, PatchSummary
from ...engine.cache import SECTION as BUILT_SECTION
from ...engine.cache import chain_key
from ...errors import PatchstackError, RefusedError
from ...git import Git, RawDiff, TempIndex
from ...journal.oplog import newest
from ...model.ids import ObjectFormat, Oid
from ...model.series import Entry, Series
from ...model.stack import Stack
from ...store import Store

if TYPE_CHECKING:
    from ...engine.chain import Engine
    from ...engine.verdicts import Classified
    from ...model.patchfile import FileDiff, Patch

EXACT, CARRIED, EDITED, DIFFERS = "exact", "carried", "edited", "differs"


@dataclass(frozen=True)
class Proof:
    verdicts: dict[str, str]  # applied patch name -> one of the four

    def named(self, verdict: str) -> list[str]:
        return [n for n, v in self.verdicts.items() if v == verdict]


def prove(ws: Checkout, series: Series, stack: Stack) -> Proof:
    git = ws.git
    parents = _parent_trees(stack)
    consistent = _ConsistencyCache(git, ws.store)
    verdicts: dict[str, str] = {}
    applied = []
    stats = _StatMemo(ws)
    memo: set[str] = set()
    below = (stack.base, *(ap.commit for ap in stack.applied))
    for i, ap in enumerate(stack.applied):
        if ap.name not in series:
            continue
        entry = series.entry(ap.name)
        if known := stats.verdict(entry, ap.commit):
            verdicts[ap.name] = known  # the file as it was when this commit was proven
            memo.add(ap.name)
            continue
        data, summary = ws.proven_bytes(entry)  # parsed only when its bytes are new
        known = consistent.verdict(ap.commit, data, entry.strip_level) or _built(
            ws.store, below[i], ap.commit, entry, data
        )
        if known:
            verdicts[ap.name] = known
        else:
            applied.append((ap, entry, data, summary))
    raws = git.raw_diffs([(parents[ap.commit], ap.tree) for ap, *_rest in applied])
    pending = []
    matched = []
    for (ap, entry, data, summary), raw in zip(applied, raws, strict=True):
        if _ids_match(summary, raw, git.fmt):
            matched.append((ap, entry, data))
        else:
            pending.append((ap, data, ws.read_patch(entry)[1]))
    unknown = [(ap, entry, data) for ap, entry, data in matched if not consistent.knows(data)]
    consistent.read_ahead(
        f.old_id for _ap, entry, _d in unknown for f in ws.read_patch(entry)[1].files if f.old_id
    )
    for ap, entry, data in matched:
        if consistent.knows(data) or consistent.check(data, ws.read_patch(entry)[1]):
            verdicts[ap.name] = EXACT
        else:
            pending.append((ap, data, ws.read_patch(entry)[1]))
    recorded = _recorded_files(ws, [ap.name for ap, _d, _p in pending])
    placed = _Placement(ws, series, stack)
    try:
        with git.temp_index() as idx:
            for ap, data, patch in pending:
                strip = series.entry(ap.name).strip_level
                if _applies_to(idx, parents[ap.commit], data, strip) == ap.tree:
                    verdicts[ap.name] = EXACT  # no full index lines, or renames: git apply says
                    continue
                actual = _actual(git, parents[ap.commit], ap.tree, ap.name)
                if actual is not None and _same_change(patch, actual):
                    verdicts[ap.name] = CARRIED
                    continue
                if placed.gives(ap.name, parents[ap.commit], ap.tree):
                    verdicts[ap.name] = CARRIED  # the merge put only part of it, or nothing, there
                    continue
                old = recorded.get(ap.name)
                proves_old = (
                    old is not None
                    and old != data
                    and _applies_to(idx, parents[ap.commit], old, strip) == ap.tree
                )
                verdicts[ap.name] = EDITED if proves_old else DIFFERS
    finally:
        placed.close()
    for ap, entry, data, _summary in applied:
        if verdicts[ap.name] in (EXACT, CARRIED):  # (the other two depend on the log)
            consistent.remember(ap.commit, data, entry.strip_level, verdicts[ap.name])
    for ap in stack.applied:
        if ap.name not in memo and verdicts.get(ap.name) in (EXACT, CARRIED):
            stats.remember(series.entry(ap.name), ap.commit, verdicts[ap.name])
    return Proof(verdicts)


class _StatMemo:
    """The verdicts ``exact`` and ``carried`` by a patch file's stat data (size, times,
    inode) and the commit, as git's index keeps a file's id: a file left alone since a
    command proved its commit is not read and hashed again, so a pop of one patch of a long
    series does not read every other one. A file changed less than two seconds before it
    was proven is not kept (an edit in the same tick would not change its stat data)."""

    RACY = 2.0  # seconds

    def __init__(self, ws: Checkout) -> None:
        self.ws = ws
        self.now = time.time()

    def _key(self, entry: Entry) -> tuple[str, list[int] | None]:
        name = f"s {self.ws.series_dir}/{entry.name} p{entry.strip_level}"
        try:
            st = os.stat(os.path.join(self.ws.series_dir, entry.name))  # (a series name)
        except OSError:
            return name, None
        if not stat.S_ISREG(st.st_mode) or self.now - st.st_mtime <= self.RACY:
            return name, None
        return name, [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]

    def verdict(self, entry: Entry, commit: str) -> str | None:
        name, key = self._key(entry)
        found = self.ws.store.get(SECTION, name) if key is not None else None
        if not isinstance(found, (list, tuple)) or len(found) != 3:
            return None
        seen, proven, verdict = found
        return (
            verdict
            if list(seen) == key and proven == commit and verdict in (EXACT, CARRIED)
            else None
        )

    def remember(self, entry: Entry, commit: str, verdict: str) -> None:
        name, key = self._key(entry)
        if key is not None:
            self.ws.store.put(SECTION, name, [key, commit, verdict])


class _Placement:
    """Is a commit exactly what placing its patch file on its parent's tree gives, the way
    ``push`` places it (the canonical chain's change merged three-way, `Engine.carry`)? Then
    the commit is the patch file's, carried: ``push --onto`` and ``worktree --onto`` make such
    commits where upstream already holds part of a patch, or all of it (an empty commit). The
    engine is made only when a commit needs this proof."""

    def __init__(self, ws: Checkout, series: Series, stack: Stack) -> None:
        self.ws, self.series, self.stack = ws, series, stack
        self.engine: Engine | None = None

    def gives(self, name: str, parent_tree: str, tree: str) -> bool:
        from ..state import make_engine

        try:
            if self.engine is None:
                self.engine = make_engine(self.ws, self.series, self.stack)
            k = self.series.index(name) + 1
            before, after = self.engine.canonical(k - 1), self.engine.canonical(k)
            carried = self.engine.carry(before, Oid(parent_tree), after, name)
        except PatchstackError:  # the file does not apply where it was made: not proven
            return False
        return carried == tree

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()


def remember_exact(ws: Checkout, made: Iterable[tuple[str, str, int, bool]]) -> None:
    """Record commits a push made from their patch file, as (commit, SHA-256 of the patch
    file, strip level, by the fast path): the commit's tree is the file applied to its parent's
    (``git apply``, or each file diff's hunks gave the blob its index line names: then the
    file is consistent too), so the commit is ``exact``; the next command need not prove it
    again."""
    store = ws.store
    for commit, digest, strip, by_ids in made:
        if by_ids:
            store.put(SECTION, f"c {digest}", True)
        store.put(SECTION, f"v {commit} {digest} p{strip}", EXACT)


def _built(store: Store, parent: str, commit: str, entry: Entry, data: bytes) -> str | None:
    """``exact`` when the engine made ``commit`` from these very bytes on ``parent`` (the
    canonical chain it keeps, `Engine.extend`: the file applied to its parent, or a refresh's
    commit it learned as such), as it takes such a commit itself; else None (to be proven).
    ``PATCHSTACK_NO_CHAIN_PROOF=1`` proves every one."""
    if os.environ.get("PATCHSTACK_NO_CHAIN_PROOF"):
        return None
    made = store.get(BUILT_SECTION, chain_key(parent, hashlib.sha1(data).hexdigest(), entry))
    return EXACT if made == commit and commit != parent else None


def _applies_to(idx: TempIndex, tree: str, data: bytes, strip: int) -> str | None:
    """The tree ``data`` makes of ``tree`` with ``git apply`` (None when it does not apply)."""
    idx.read_tree(tree)
    ok, _err = idx.apply(data, strip)
    return idx.write_tree() if ok else None


def refuse_dropping(proof: Proof, names: Sequence[str], verb: str) -> None:
    """Refuse (exit 2) when a commit that differs from its patch file would be replaced."""
    lost = [n for n in names if proof.verdicts.get(n) == DIFFERS]
    if lost:
        shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        raise RefusedError(
            f"the commit of {shown} differs from its patch file (amended, or edited by a"
            f" rebase); {verb} would lose what the commit changed",
            f"adopt the commit into the patch file with 'patchstack refresh --patch {lost[0]}',"
            f" or drop its changes with '{verb} --discard-changes'; nothing was changed",
        )


def _parent_trees(stack: Stack) -> dict[str, str]:
    trees = (stack.base_tree, *(ap.tree for ap in stack.applied))
    return {ap.commit: trees[i] for i, ap in enumerate(stack.applied)}


def _ids_match(patch: PatchSummary, raw: list[RawDiff], fmt: ObjectFormat) -> bool:
    """True when the commit's blobs and modes are exactly those the patch's full index lines
    and mode lines name (a mode the patch does not state must not change)."""
    got = {path: (old, new, om, nm) for om, nm, old, new, path in raw}
    if len(got) != len(patch.files):
        return False
    for f in patch.files:
        if f.renamed or f.copied or not fmt.is_full(f.new_id) or not fmt.is_full(f.old_id):
            return False
        found = got.get(f.path)
        if found is None or found[:2] != (f.old_id, f.new_id):
            return False
        om, nm = found[2], found[3]
        if f.old_mode is None and f.new_mode is None:
            if om != nm:
                return False
        elif (f.old_mode or om, f.new_mode or nm) != (om, nm):
            return False
    return True


SECTION = "proven"  # of the one cache (`store`)


class _ConsistencyCache:
    """Does a patch file's every hunk, applied to the blob its index line names, give the blob
    its index line names? Keyed by the file's digest (``c <sha256>``), in the ``proven``
    section of the one cache.

    The same section keeps the verdicts ``exact`` and ``carried`` of (commit, patch file)
    pairs (``v <commit> <sha256> p<strip>``): a commit id fixes its parent and its tree, so
    the verdict cannot change."""

    def __init__(self, git: Git, store: Store) -> None:
        self.git = git
        self.store = store
        self.blobs: dict[str, bytes] = {}  # read ahead, by id

    def knows(self, data: bytes) -> bool:
        return self.store.get(SECTION, f"c {hashlib.sha256(data).hexdigest()}") is True

    def verdict(self, commit: str, data: bytes, strip: int) -> str | None:
        found = self.store.get(SECTION, f"v {commit} {hashlib.sha256(data).hexdigest()} p{strip}")
        return found if found in (EXACT, CARRIED) else None

    def remember(self, commit: str, data: bytes, strip: int, verdict: str) -> None:
        key = f"v {commit} {hashlib.sha256(data).hexdigest()} p{strip}"
        self.store.put(SECTION, key, verdict)

    def read_ahead(self, oids: Iterable[str]) -> None:
        """Read the preimages the checks will want in pipelined batches, not one by one."""
        fmt = self.git.fmt
        wanted = [o for o in dict.fromkeys(oids) if fmt.is_full(o) and not fmt.is_null(o)]
        for oid, found in zip(wanted, self.git.read_objects(wanted), strict=True):
            if found is not None and found[0] == "blob":
                self.blobs[oid] = found[1]

    def check(self, data: bytes, patch: Patch) -> bool:
        if self.knows(data):
            return True
        from ...engine.fastpath import proven_postimage  # (not loaded when all is known)

        fmt = self.git.fmt
        for fd in patch.files:
            if fd.binary:
                continue  # the data is the blob: its id was compared with the commit's
            old_id = fd.old_id or ""
            if fmt.is_null(old_id):
                old: bytes | None = None
            elif old_id in self.blobs:
                old = self.blobs[old_id]
            else:
                found = self.git.read_object(old_id)
                if found is None:
                    return False
                old = found[1]
            if proven_postimage(fd, old, fmt) is None:
                return False
        self.store.put(SECTION, f"c {hashlib.sha256(data).hexdigest()}", True)
        return True


def _actual(git: Git, parent: str, tree: str, name: str) -> Patch | None:
    diff = git.diff_patch(parent, tree)
    if not diff.strip():
        return None
    try:
        from ...model.patchfile import parse_patch

        return parse_patch(diff, name)
    except PatchstackError:
        return None


def _same_change(a: Patch, b: Patch) -> bool:
    """The same lines added and removed in the same files, and the same modes."""

    def mode(f: FileDiff) -> tuple[str | None, ...]:
        if f.old_path is None or f.new_path is None:
            return (f.old_mode if f.new_path is None else None, f.new_mode)
        return (f.old_mode, f.new_mode) if f.old_mode != f.new_mode else ()

    def key(patch: Patch) -> list[tuple[str, tuple[str | None, ...], tuple[str, ...]]]:
        return sorted(
            (f.path, mode(f), tuple(ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"))
            for f in patch.files
        )

    return key(a) == key(b)


def _recorded_files(ws: Checkout, names: Sequence[str]) -> dict[str, bytes]:
    """The bytes of these patch files as the operation log last recorded them."""
    if not names:
        return {}
    last = newest(ws.git)
    if last is None:
        return {}
    listing = ws.git.ls_tree_paths(last.state.series, list(names))
    return {n: ws.git.read_blob(oid) for n, (_mode, oid) in listing.items()}


def remember_refresh(
    ws: Checkout,
    engine: Engine,
    series: Series,
    base: Oid,
    commits: dict[str, Oid],
    classified: Classified,
) -> None:
    """Tell the next commands what this refresh proved: each commit it made is its patch
    file applied to its parent (an unchanged file: the commit has the blobs of the old one,
    which the file made; a rewritten file is the commit's own diff), so the commit is exact
    (`proof.remember_exact`) and, from the new base on, the series' canonical chain
    (`Engine.learn_chain`). Otherwise a series whose files have no full index lines (quilt's)
    was proven and applied again by ``git apply`` patch by patch: 20 s for the next ``status``
    and 37 s for the next ``push --all`` of 1,000 patches."""
    made = []
    chain: list[tuple[Entry, bytes, Oid]] = []
    on_chain = True
    for e in series.entries:
        if e.name in series.deferred:
            continue  # not on the chain (`Engine.extend`)
        commit = commits.get(e.name)
        if commit is None:
            on_chain = False
            continue
        data = classified.data.get(e.name) or engine.patch(e.name).data
        digest = hashlib.sha256(data).hexdigest()
        made.append((commit, digest, e.strip_level, e.name in classified.data))
        if on_chain:
            chain.append((e, data, commit))
    remember_exact(ws, made)
    engine.learn_chain(base, chain)
