"""The conflicts of a replay, triaged and reported at once: which are the user's real work.

A conflict is a **knock-on** when it conflicts only because an earlier patch that conflicted
or was deferred is missing (its *root*): say patch 1 creates ``dflash_info.py`` and
conflicts, then every later patch editing that file is a modify/delete of a file neither base
ever had. That is proven, never guessed from the lines: of the (up to three) nearest missing
patches touching every conflicted file, the nearest R such that, merged onto the tree the
patch was placed on (with the roots R waits for in turn, each conflict resolved as that patch
has it), the patch merges cleanly, is its root. Anything else is **primary**: upstream changed
the lines the patch expected (or no one missing patch alone is why).

A patch left out for needing a missing one's lines (`engine.needs`: placed without its root it
would not be its own change) is never placed; it is proven the same way (`Waiting`): merged
with its root in place, it is a knock-on of it when that merge is clean, else primary, its
hunks those of that merge. Either way it waits for its root (deferred after it).

The reports are built for all conflicts together: the merged files and the new base's entries
are read in one batch, and the primary hunks' upstream commits are traced at their place in
one walk (`culprits`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..git import Git, MergeResult
from ..model.conflict import Conflict, one_side
from ..model.ids import Oid
from . import culprits
from .contract import enabled, place_fast
from .evidence import superseded

if TYPE_CHECKING:
    from .renames import RenameProof

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
    held: str | None = None  # a `Waiting` patch's root: merged with it in place (primary)


@dataclass(frozen=True)
class Waiting:
    """A patch left out for needing ``root``'s lines (`engine.needs`), never placed: the tree
    it would have been placed on, the paths where it needs them, why (``note``), and the
    patches before it missing from that tree, as `Failed` has them."""

    name: str
    onto: Oid
    root: str
    paths: tuple[str, ...]
    note: str
    missing: tuple[str, ...] = ()


REPLAYED = "replayed"  # a kept key's first part: the replay's merge of a conflict (`Proofs`)


class Proofs(dict[tuple[str, ...], MergeResult]):
    """The proof merges of a replay (``memo`` below), each made once; ``made``: those
    `_merge_with` made (or a ``loader`` gave: kept by an earlier command), which a later
    command may take. ``replayed``: the replay's own merges of its conflicts, which `reports`
    puts in under the same keys; kept too (under `REPLAYED`), a later command takes one only
    for a root (`root`): a root's merge counts for whether it is clean and for the patch's
    side of each conflict (`_as_the_patch_has_it`), neither of which the labels of its markers
    change, where a patch's own merge is its report, markers and all.
    ``loader``: called at the first lookup, the merges kept from before (never overriding
    one of this command's)."""

    def __init__(
        self, loader: Callable[[], Mapping[tuple[str, ...], MergeResult]] | None = None
    ) -> None:
        super().__init__()
        # in the order made, the loaded first: a kept list cut to its last entries drops the
        # oldest (a set's order is its hashes', another in every process)
        self.made: dict[tuple[str, ...], None] = {}
        self.replayed: dict[tuple[str, ...], MergeResult] = {}
        self.loader = loader

    def get(self, key: tuple[str, ...], default: MergeResult | None = None) -> MergeResult | None:  # type: ignore[override]
        if self.loader is not None:
            loaded, self.loader = self.loader(), None
            for k, v in loaded.items():
                if k[:1] == (REPLAYED,):
                    if kept_replays():  # (switched off mid-refresh: none taken)
                        self.replayed.setdefault(k[1:], v)
                elif k not in self:
                    self[k] = v
                    self.made[k] = None
        return super().get(key, default)

    def root(self, key: tuple[str, ...]) -> MergeResult | None:
        """The merge of a root under ``key``: a proof's, else a replay's (this command's or
        kept)."""
        return self.get(key) or self.replayed.get(key)

    def kept(self) -> list[tuple[tuple[str, ...], MergeResult]]:
        """What a later command may take: the proof merges made, and the replays'."""
        made = [(k, self[k]) for k in self.made if k in self]
        return made + [((REPLAYED, *k), v) for k, v in self.replayed.items()]


def kept_replays() -> bool:
    """Are the replay's merges of its conflicts kept for a later command's proofs? (Not with
    ``PATCHSTACK_NO_PROOF_KEEP=1``: the proof merges of the roots are made again.)"""
    return os.environ.get("PATCHSTACK_NO_PROOF_KEEP") is None


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
    held: Sequence[Waiting] = (),
    memo: dict[tuple[str, ...], MergeResult] | None = None,
    waits: Mapping[str, str] | None = None,
    renames: RenameProof | None = None,
) -> list[Conflict]:
    """The report of every conflict of ``failed``, triaged (see the module docstring), then
    of each patch ``held`` for a missing one; ``attribute``: name the upstream commits of each
    primary hunk; ``tick(done, total)``: told as the reports are built (the progress bar keeps
    moving); ``change_of(name)``: a patch's change (its tree before, after), to merge a
    conflict again with its root in place (without it every conflict is primary); ``memo``:
    the proofs' merges made so far (a replay's, kept across calls), each made once;
    ``waits``: the root each held patch waits for (those ``held`` wait for theirs);
    ``renames``: the replay's proof that merge-ort pairs a lost file with none
    (`renames.RenameProof`), so that a proof merge is made on the patch's paths alone where it
    holds (`contract.place_region`), as the replay's own merges are."""
    if not failed and not held:
        return []
    # Conflicts placed on the same tree (a run of them) merge the same roots there: each
    # merge is made once (`merge-tree` is a function of its trees and labels; a proof uses
    # only whether it is clean and the patch's side, so the replay's own merge of a conflict
    # stands for it).
    if memo is None and enabled():
        memo = {}
    if memo is not None and change_of is not None:
        for f in failed:
            change = change_of(f.name)
            if change is not None:
                key = (change[0], f.onto, change[1], f.name)
                memo.setdefault(key, f.merged)
                if isinstance(memo, Proofs) and kept_replays():
                    memo.replayed.setdefault(key, f.merged)
    known: dict[str, str | None] = {**(waits or {}), **{h.name: h.root for h in held}}
    roots: list[str | None] = []  # each conflict's root; None: primary
    touched: dict[str, frozenset[str]] = {}  # (asked for each missing patch of each conflict)

    def touches(name: str) -> frozenset[str]:
        found = touched.get(name)
        if found is None:
            found = touched[name] = frozenset(paths_of(name))
        return found

    for i, f in enumerate(failed):
        if tick is not None:
            tick(i + 1, len(failed) + 1)
        roots.append(_root(git, f, touches, change_of, memo, known, renames))
        known[f.name] = roots[-1]
    proven = {h.name: _held(git, h, change_of, memo, known, renames) for h in held}
    failed = [*failed, *(p for p in proven.values() if p is not None)]
    roots += [None] * (len(failed) - len(roots))
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

    files: list[tuple[str, bytes | None, bytes]] = []
    for i, f in enumerate(failed):
        for path in f.merged.conflicted:
            text = blob(merged_entries[i].get(path))
            if text:
                # a knock-on's lines are not traced: it waits for its root, not for upstream
                base = blob(new_entries.get(path)) if roots[i] is None else None
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
            root=root or f.held,
        )
        if f.held:  # primary, and waiting for its root all the same
            report = replace(report, note=next(h.note for h in held if h.name == f.name), held=True)
        if root is None:
            report = replace(report, superseded=superseded(report, git.show_file))
        out.append(report)
    out += [
        Conflict(h.name, h.paths, kind=KNOCK_ON, root=h.root, note=h.note, held=True)
        for h in held
        if proven[h.name] is None
    ]
    return out


def _root(
    git: Git,
    f: Failed,
    paths_of: Callable[[str], Collection[str]],
    change_of: Callable[[str], tuple[Oid, Oid] | None] | None,
    memo: dict[tuple[str, ...], MergeResult] | None = None,
    known: Mapping[str, str | None] | None = None,
    renames: RenameProof | None = None,
) -> str | None:
    """The missing patch ``f`` is a knock-on of: of the `ROOTS` nearest missing patches
    touching its conflicted files, the nearest R such that ``f`` merges cleanly once R is
    applied onto the tree it was placed on, with the roots R waits for in turn (``known``: the
    root of each conflict triaged before ``f``; `_clean_with`); as ``push R`` brings back what
    waits for it, resolving R makes ``f``'s conflict go away. None when no one such patch
    does (upstream's lines, or several missing patches each short of the others): primary."""
    paths = f.merged.conflicted
    near = [p for p in f.missing if any(path in paths_of(p) for path in paths)]
    if change_of is None or not paths or not near:
        return None
    if not all(any(path in paths_of(p) for p in near) for path in paths):
        return None
    known = known or {}

    def with_its_roots(name: str) -> list[str]:
        return _with_roots(name, f.missing, known)

    # The root named is one whose lines f needs: the nearest that lets f merge (the nearest in
    # its file may be another's neighbour). Each is tried alone, never all at once first: one
    # that does not let f merge can take away what the right one gives (a marked-upstream
    # patch's conflict taken as it has it undoes upstream's edit f expects; label seed 8200023).
    for name in reversed(near[-ROOTS:]):
        if _clean_with(git, f, with_its_roots(name), change_of, memo, renames):
            return name
    return None


def _with_roots(name: str, missing: Sequence[str], known: Mapping[str, str | None]) -> list[str]:
    """``name`` and the roots it waits for in turn (``known``), those of ``missing``, in order."""
    found: set[str] = set()
    at: str | None = name
    while at is not None and at not in found:
        found.add(at)
        at = known.get(at)
    return [m for m in missing if m in found]


def _held(
    git: Git,
    h: Waiting,
    change_of: Callable[[str], tuple[Oid, Oid] | None] | None,
    memo: dict[tuple[str, ...], MergeResult] | None,
    known: Mapping[str, str | None],
    renames: RenameProof | None = None,
) -> Failed | None:
    """``h`` merged onto the tree it would have been placed on with its root applied there
    (and the roots that one waits for, each as it has it): None when that merge is clean (a
    knock-on of its root) or cannot be made (a change unknown: as `engine.needs` found it);
    else a `Failed` of that merge, onto the tree with them in place: primary."""
    if change_of is None:
        return None
    roots = _with_roots(h.root, h.missing, known) or [h.root]
    found = _merge_with(git, h.onto, h.name, roots, change_of, memo, renames)
    if found is None or found[1] is None or found[1].clean:
        return None
    return Failed(h.name, found[0], found[1], h.missing, held=h.root)


def _clean_with(
    git: Git,
    f: Failed,
    roots: Sequence[str],
    change_of: Callable[[str], tuple[Oid, Oid] | None],
    memo: dict[tuple[str, ...], MergeResult] | None = None,
    renames: RenameProof | None = None,
) -> bool:
    """Does ``f`` merge cleanly once ``roots`` are applied onto the tree it was placed on,
    each root's conflict resolved as the root has it (`_as_the_patch_has_it`)?"""
    found = _merge_with(git, f.onto, f.name, roots, change_of, memo, renames)
    return found is not None and (found[1] is None or found[1].clean)


def _merge_with(
    git: Git,
    onto: Oid,
    name: str,
    roots: Sequence[str],
    change_of: Callable[[str], tuple[Oid, Oid] | None],
    memo: dict[tuple[str, ...], MergeResult] | None = None,
    renames: RenameProof | None = None,
) -> tuple[Oid, MergeResult | None] | None:
    """(the tree, ``roots`` applied onto ``onto`` in turn, each conflict resolved as that root
    has it; ``name`` merged onto it, or None when it changes nothing), or None when a change
    is unknown. Each merge is looked up in ``memo`` first, and kept there."""
    tree = onto
    for at in [*roots, name]:
        change = change_of(at)
        if change is None:
            return None
        before, after = change
        if before != after:
            key = (before, tree, after, at)
            merged = memo.get(key) if memo is not None else None
            if merged is None and isinstance(memo, Proofs) and at != name:
                merged = memo.root(key)  # not put under the key: a patch's own merge is its report
            if merged is None:
                merged = place_fast(git, before, tree, after, ("triage", at), None, renames)
                if memo is not None:
                    memo[key] = merged
                    if isinstance(memo, Proofs):
                        memo.made[key] = None
            if at == name:
                return tree, merged
            if merged.clean:
                tree = merged.tree
                continue
            # a root's conflict resolved once (keyed by the merge's tree and conflicts)
            settled = ("settled", merged.tree, *merged.conflicted)
            found = memo.get(settled) if memo is not None else None
            tree = found.tree if found else _as_the_patch_has_it(git, merged)
            if memo is not None:
                memo[settled] = MergeResult(tree, True, (), "")
                if isinstance(memo, Proofs):
                    memo.made[settled] = None
    return tree, None  # it changes nothing: it cannot conflict once its roots are in


def _as_the_patch_has_it(git: Git, merged: MergeResult) -> Oid:
    """The tree of a patch's conflicting merge with each conflict region resolved as the patch
    has it (its side, hunk by hunk, as ``git checkout --theirs`` per hunk): the root applied
    as its author would apply it. A conflict without markers (a file's existence or type) is
    left as merge-ort left it."""
    entries = git.entries_at(merged.tree, list(merged.conflicted))
    files = {p: e for p, e in entries.items() if e[0][:2] == "10"}
    texts = dict(zip(files, git.read_objects([e[1] for e in files.values()]), strict=True))
    changes: dict[str, tuple[str, str] | None] = {}
    for path, found in texts.items():
        theirs = one_side(found[1], "theirs") if found else None
        if theirs is not None:
            changes[path] = (files[path][0], git.write_blob(theirs))
    return git.edit_tree(merged.tree, changes) if changes else merged.tree
