"""The placement contract: where a patch lands, and what every shortcut must prove.

**The contract.** Patch k is the change ``C[k-1] -> C[k]`` of the canonical chain (`chain`:
the series base plus each patch file applied exactly where it was made). Placed on a tree
``T``, it gives the tree of git's merge-ort three-way merge with base ``C[k-1]``, ours ``T``
and theirs ``C[k]`` (`place`): what ``git cherry-pick`` and ``git rebase`` give, one patch at
a time, rename and folder-rename detection included (git's default makes a file added to a
folder that the other side renamed a conflict naming the suggested path; with
``merge.directoryRenames=true`` in the repository it moves there, as rebase moves it). A
placement that changes nothing (the tree already holds the patch) makes no commit: the patch
is left unapplied and said to be upstream's, as rebase drops a commit that becomes empty.

**Shortcuts.** Everything faster is a shortcut that may take only a case it can prove gives
the contract's tree, and each one is off when ``PATCHSTACK_NO_FAST_PATH=1`` (`enabled`):

- the trivial cases: ``T == C[k-1]`` gives ``C[k]``; ``C[k-1] == C[k]`` gives ``T``;
- carrying by ids (`fastpath.ProvenStream.carry`): every path the patch changes is in ``T``
  what it is in ``C[k-1]`` (mode and id), so the merge takes the patch's side there and ours
  everywhere else, *unless renames reach across paths* (`rename_free`);
- merges of the last tree git can read (the anchor) and merge runs (`placer`): several
  proven patches merged at once, where the docstring there shows the three versions of every
  path are those of each patch's own merge;
- the merge of the patch's paths alone (`place_region`): the three trees cut down to what
  is at the paths the patch changes, merged, and put back into ours, when no rename can reach
  across those paths. On a large upstream move this is most of a replay: merge-ort walks and
  pairs every file upstream changed (7,000 for a fork six months behind), the cut trees hold a
  few. Where ours has every one of those paths as the base has it, the merge's tree is the
  patch's there, and no merge is asked (``PATCHSTACK_NO_REGION_CARRY=1``: asked).

The canonical chain itself is not a placement: ``C[k]`` is what ``git apply`` makes of the
patch file on ``C[k-1]``, and its shortcut (`fastpath.ProvenStream.commit`: hunks applied in
Python, proven by the blob ids the file names) gives ``git apply``'s tree.

**Proving a new shortcut.** State the condition under which its result equals `place`'s,
put it behind `enabled`, and let the differential generator (``tests/differential.py``) find
out: it compares ``check``, ``refresh`` and ``push --onto`` with and without shortcuts against
``git rebase`` on random repositories whose patches and upstream moves rename files and
folders, delete, change modes and types, and take patches verbatim or differently.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..git import Git, MergeResult, RawDiff
from ..model import paths
from ..model.ids import Oid

if TYPE_CHECKING:
    from .renames import RenameProof

NULL_MODE = "000000"
TREE_MODE = "040000"
GITLINK = "160000"


def enabled() -> bool:
    """Are the shortcuts on? (``PATCHSTACK_NO_FAST_PATH=1`` turns every one off; read at each
    use, so that one process can compare both ways.)"""
    return not os.environ.get("PATCHSTACK_NO_FAST_PATH")


def carries() -> bool:
    """Is a region whose three versions ours leaves as the base has them taken as the
    patch's without a merge (`place_region`)? Not with ``PATCHSTACK_NO_REGION_CARRY=1``."""
    return os.environ.get("PATCHSTACK_NO_REGION_CARRY") is None


def place(
    git: Git,
    before: str,
    tree: str,
    after: str,
    labels: tuple[str, str],
    base_label: str | None = None,
) -> MergeResult:
    """The contract: the change ``before -> after`` placed on ``tree`` by merge-ort."""
    from .merging import merge  # (and the culprit tracing: not for a command that merges nothing)

    return merge(git, before, tree, after, labels, base_label)


def rename_free(
    diff: Sequence[RawDiff],
    in_ours: Callable[[str], str | None],
    trees_in_base: Callable[[Iterable[str]], set[str]],
) -> bool:
    """Can no rename detection reach across the paths of ``diff`` (the patch's change, as a
    raw diff of ``C[k-1] -> C[k]``) when it is merged into ours? Then a merge that finds every
    path of ``diff`` in ours as it is in the base is decided path by path.

    ``in_ours(folder)``: the mode of that folder's entry in ours (None: absent);
    ``trees_in_base(folders)``: those of the folders that are folders in the base.

    merge-ort finds renames on each side separately, among the files that side deleted and
    added. On the patch's side: it renames only when the patch both deletes and adds a file,
    and a rename out of a folder it empties carries ours' new files of that folder along;
    such a patch is left to the merge. On ours' side: a folder of the base that ours no
    longer has may have been renamed, and the patch's new files in it would follow; so every
    folder leading to a file the patch adds must be in ours, or not in the base either.
    (Files ours renamed away from a path the patch changes are caught by the caller: the path
    is not in ours as in the base.)
    """
    added = [d[4] for d in diff if d[0] == NULL_MODE]
    deleted = [d[4] for d in diff if d[1] == NULL_MODE]
    if added and deleted:
        return False
    missing = {
        folder
        for path in added
        for folder in paths.leading_dirs(path)
        if in_ours(folder) != TREE_MODE
    }
    return not (missing and trees_in_base(sorted(missing)))


def _is_file(entry: tuple[str, str] | None) -> bool:
    return entry is not None and entry[0] not in (TREE_MODE, GITLINK)


def lost_files(
    changed: Iterable[str],
    base: Mapping[str, tuple[str, str]],
    ours: Mapping[str, tuple[str, str]],
) -> dict[str, str] | None:
    """The files a patch changes that its base has and ours has not (path -> the base's
    blob): merge-ort looks for where ours renamed them. None when ours has a gitlink there
    (not judged)."""
    lost: dict[str, str] = {}
    for path in changed:
        entry, mine = base.get(path), ours.get(path)
        if not _is_file(entry) or _is_file(mine):
            continue
        if mine is not None and mine[0] == GITLINK:
            return None
        assert entry is not None
        lost[path] = entry[1]
    return lost


def place_region(
    git: Git,
    before: str,
    tree: str,
    after: str,
    diff: Sequence[RawDiff],
    labels: tuple[str, str],
    base_label: str | None = None,
    renames: RenameProof | None = None,
) -> MergeResult | None:
    """`place` of the change ``before -> after`` (``diff``: its raw diff) computed on the
    patch's paths alone; None when that cannot be proven to give `place`'s result.

    Cut each tree down to what it has at the paths ``diff`` changes (a file, a whole folder
    where a file was, a file where a folder leads) and merge those: every path outside is
    ours', since the patch's side does not change it and, with these conditions, no rename
    moves anything across:

    - each file the patch changes that the base has is a file in ours too (ours deleted or
      renamed none of them: merge-ort's rename detection on ours' side looks only for the
      sources the other side changed, and there are none), or ``renames`` proves that no
      file ours added is alike enough to be taken for one (`renames.RenameProof`);
    - each folder leading to a file the patch adds is in ours, or not in the base either (no
      folder rename of ours' can take the file along);
    - the patch empties no folder of the base, or adds no file (no folder rename of its own
      can take files of ours' along: a folder is renamed by the renames out of it, and a
      patch that adds nothing has none); its own file renames pair paths of the patch only,
      as in the whole merge;
    - the merge of the cut trees writes no path the three cut trees do not have (no
      ``file~side`` of a file/folder conflict, whose name depends on the whole tree).
    """
    if not enabled() or not diff or tree == before:
        return None
    changed = [d[4] for d in diff]
    folders = {f for p in changed for f in paths.leading_dirs(p)}
    wanted = sorted(set(changed) | folders)
    base, ours, theirs = (git.entries_at(t, wanted) for t in (before, tree, after))
    lost = lost_files(changed, base, ours)
    if lost is None:
        return None
    adds = any(d[0] == NULL_MODE for d in diff)
    for old_mode, new_mode, _o, _n, path in diff:
        leading = paths.leading_dirs(path)
        if old_mode == NULL_MODE and any(
            ours.get(f, ("",))[0] != TREE_MODE and base.get(f, ("",))[0] == TREE_MODE
            for f in leading
        ):
            return None
        if (
            new_mode == NULL_MODE
            and adds
            and any(
                base.get(f, ("",))[0] == TREE_MODE and theirs.get(f, ("",))[0] != TREE_MODE
                for f in leading
            )
        ):
            return None
    if lost and (renames is None or not renames.none_alike(before, tree, lost)):
        return None

    def cut(entries: dict[str, tuple[str, str]]) -> Oid:
        keep = {p: entries[p] for p in changed if p in entries}
        keep.update({f: entries[f] for f in folders if f in entries and entries[f][0] != TREE_MODE})
        return git.edit_tree(git.fmt.empty_tree, keep)

    from .merging import merge

    cuts = [cut(base), cut(ours), cut(theirs)]
    if cuts[0] == cuts[1] and carries():
        # Ours has the base's version of every path the patch changes: merge-ort takes the
        # patch's side at each (nothing changed on ours' side, so no content merge, no rename
        # of ours', no message), and its tree is the patch's cut tree.
        made = git.files_of(cuts[2])
        return MergeResult(put_back(git, tree, git.files_of(cuts[1]), made), True, (), "")
    # a clean merge that names no side is the same under any labels (`_unlabelled`)
    key, unlabelled = (*cuts, *labels, base_label or ""), tuple(cuts)
    regions = _while_kept(_REGIONS, git) if remembers() else None
    result = (regions.get(key) or regions.get(unlabelled)) if regions is not None else None
    if result is None:
        result = merge(git, cuts[0], cuts[1], cuts[2], labels, base_label)
        if regions is not None:
            regions[key] = result
            if _unlabelled(result, (*labels, base_label or "")):
                regions[unlabelled] = replace(result, sides=())
    have = {p for c in cuts for p in git.files_of(c)}
    made = git.files_of(result.tree)
    if not set(made) <= have:
        return None
    # Has ``tree`` (ours) a folder where ``before`` (the base) has a file? Then a conflicting
    # merge of the whole trees may say more than the cut's: git's merge-ort (2.39) reports every
    # such path the patch's side leaves alone as "CONFLICT (file/directory): directory in the way
    # of PATH from THEIRS; moving it to PATH~THEIRS instead" (its tree keeps ours' folder, no
    # file is moved: the merge's own words, in its conflict report), so such a conflict is the
    # whole merge's (structural seed 278, `tests/test_structural.py`). A path inside the cut
    # costs the whole merge too, where the cut's merge would have said the same.
    if not result.clean and git.folder_for_file(before, tree):
        return None
    return replace(result, tree=put_back(git, tree, git.files_of(cuts[1]), made))


def put_back(git: Git, tree: str, gone: Iterable[str], made: Mapping[str, tuple[str, str]]) -> Oid:
    """``tree`` with the files ``gone`` removed, then the files ``made`` written: in one
    edit (its trees written once) when no path of one is a folder of a path of the other
    (then both orders give the same tree: a folder is kept exactly when a file is left in
    it); else in two, as said."""
    put: dict[str, tuple[str, str] | None] = dict(made)
    out = dict.fromkeys(gone)
    clash = {f for p in (*out, *put) for f in paths.leading_dirs(p)}
    if clash & (out.keys() | put.keys()) or not enabled():
        return git.edit_tree(git.edit_tree(tree, out), put)
    return git.edit_tree(tree, out | put)


def place_fast(
    git: Git,
    before: str,
    tree: str,
    after: str,
    labels: tuple[str, str],
    base_label: str | None = None,
    renames: RenameProof | None = None,
) -> MergeResult:
    """`place`, by `place_region` where it can prove the same result (``renames``: the
    command's proof for a patch whose files ours lost). A clean merge of the same three trees
    made before under other labels is that one (`_unlabelled`)."""
    key = (before, tree, after)
    made = _while_kept(_CLEAN, git) if enabled() and all(map(git.is_id, key)) else None
    if made is not None and key in made:
        return made[key]
    diff = git.changed_entries(before, after)
    found = place_region(git, before, tree, after, diff, labels, base_label, renames)
    if found is None:
        found = place(git, before, tree, after, labels, base_label)
    if made is not None and _unlabelled(found, (*labels, base_label or "")):
        made[key] = replace(found, sides=())
    return found


# Clean merges by their trees, whatever their labels (a verdict's check of a patch where it
# lands on the old base is the merge its landing made): per repository, for the command.
_CLEAN: weakref.WeakKeyDictionary[Git, tuple[str | None, dict[Any, MergeResult]]]
_CLEAN = weakref.WeakKeyDictionary()


# The merges of cut trees made, by their trees and labels: the same region met again in the
# command (a verdict's search merges a patch onto upstream's commits, a knock-on proof a root
# onto another conflict's tree: ours differs outside the region only) is the merge made.
_REGIONS: weakref.WeakKeyDictionary[Git, tuple[str | None, dict[Any, MergeResult]]]
_REGIONS = weakref.WeakKeyDictionary()


def _while_kept(
    memo: weakref.WeakKeyDictionary[Git, tuple[str | None, dict[Any, MergeResult]]], git: Git
) -> dict[Any, MergeResult]:
    """``memo``'s merges for ``git``, made since its scratch store (`git.scratch`) was
    made: when the store is dropped (what no plan reaches goes with it), so are they."""
    found = memo.get(git)
    if found is None or found[0] != git.scratch:
        found = memo[git] = (git.scratch, {})
    return found[1]


def remembers() -> bool:
    """Is a region's merge made once a command (`place_region`)? Not with
    ``PATCHSTACK_NO_REGION_MEMO=1``."""
    return os.environ.get("PATCHSTACK_NO_REGION_MEMO") is None


def forget_clean(git: Git) -> None:
    """Drop the merges kept (a publish may have changed what decides one: the work tree's
    ``.gitattributes``)."""
    _CLEAN.pop(git, None)
    _REGIONS.pop(git, None)


def _unlabelled(merged: MergeResult, labels: Sequence[str]) -> bool:
    """Is ``merged`` what the same merge gives under any labels? A clean merge is (no
    markers), when git's messages name neither side (the labels name a side in
    the markers and the messages only)."""
    named = [*labels, *(x for side in merged.sides for x in side)]
    return merged.clean and not any(n and n in merged.messages for n in named)
