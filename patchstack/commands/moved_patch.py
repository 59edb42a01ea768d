"""The merge driver's case of one patch changed on both sides where one side also moved it
(refreshed it onto a new base): the two diffs no longer share their context, line numbers or
``index`` lines, so merged as text they clash everywhere. Each side's version is re-made on the
merged place instead, with the package's own engine, and merged there:

1. Each version's place is what its ``index`` lines say: the blobs it was made on. A side
   moved the patch when one of its files was made on another blob than the common version's;
   both sides moving it is not merged here (the series merge names two different bases).
2. Each version is applied where it was made (its blobs, in a temporary index): its tree
   before and after, in the object database of the fork (the repository the blobs are in).
3. Each is carried onto the moved side's place by merge-ort (`engine.contract.place`, as a
   refresh carries it), and the three results are merged by merge-ort: the merged patch is
   that place and that tree as ``format-patch`` writes it, with the descriptions merged as in
   `model.patchmerge`.

Whatever fails (a blob the fork does not have, a version that does not apply or carry, the two
edits clashing on the new base) is a conflict named in words; the driver leaves git's markers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..engine.contract import place
from ..errors import InputError, PatchstackError
from ..git import Git, find_repo
from ..model import message
from ..model.diff import Patch
from ..model.patchfile import parse_patch
from ..model.patchmerge import PatchMerge, TextMerge, merge_description, whole_conflict
from ..model.series import parse_series

Place = Mapping[str, tuple[str, str] | None]  # path -> (mode, blob) before; None: created

_SIDES = ("base", "ours", "theirs")


@dataclass(frozen=True)
class _Version:
    label: str
    data: bytes
    patch: Patch
    place: Place


def _place(patch: Patch) -> Place | None:
    """Where the patch was made, from its ``index`` lines (None: not told, e.g. abbreviated
    ids or binary data)."""
    found: dict[str, tuple[str, str] | None] = {}
    for f in patch.files:
        if f.old_path is None:
            found[f.new_path or ""] = None
            continue
        oid, mode = f.old_id, f.old_mode
        if not oid or len(oid) not in (40, 64) or set(oid) == {"0"}:
            return None
        found[f.old_path] = (mode or "100644", oid)
    return found


def _moved(common: Place, side: Place) -> bool:
    return any(side[p] != common[p] for p in side.keys() & common.keys())


def merge_moved(
    base: bytes, ours: bytes, theirs: bytes, merge: TextMerge, path: str, where: str
) -> PatchMerge | None:
    """The merge of a patch one side moved (None: no side moved it, or its places are not
    told: the text merge decides)."""
    versions = []
    for label, data in zip(_SIDES, (base, ours, theirs), strict=True):
        try:
            patch = parse_patch(data, path)
        except InputError:
            return None
        at = _place(patch)
        if at is None:
            return None
        versions.append(_Version(label, data, patch, at))
    o, a, b = versions
    moved = [v for v in (a, b) if _moved(o.place, v.place)]
    if not moved:
        return None
    if len(moved) == 2:
        return _conflict(base, ours, theirs, "both sides moved the patch (both refreshed)")
    try:
        diff = _remade(o, a, b, moved[0], where, path)
    except _Cannot as exc:
        return _conflict(base, ours, theirs, str(exc))
    (o_head, _), (a_head, _), (b_head, _) = map(message.mail_parts, (base, ours, theirs))
    head, clashes = merge_description(o_head, a_head, b_head, merge)
    conflicts = ("the description was changed on both sides",) if clashes else ()
    return PatchMerge(head + diff, conflicts)


class _Cannot(Exception):
    """Why the versions cannot be re-made on the merged place (said as the conflict)."""


def _conflict(base: bytes, ours: bytes, theirs: bytes, why: str) -> PatchMerge:
    return PatchMerge(whole_conflict(ours, base, theirs), (why,))


def _remade(o: _Version, a: _Version, b: _Version, mover: _Version, where: str, path: str) -> bytes:
    """The diff part of the merged patch on ``mover``'s place (`_Cannot` when there is none)."""
    target: dict[str, tuple[str, str] | None] = dict(mover.place)
    others = sorted({p for v in (o, a, b) for p in v.place} - target.keys())
    base = _series_base(where, path, mover.label) if others else None
    if others and base is None:
        raise _Cannot(
            f"{others[0]} is in a version of the patch but not in the {mover.label} one, which"
            f" moved it, and the {mover.label} side's series base is not known: merge by hand"
        )
    blobs = [e[1] for v in (o, a, b) for e in v.place.values() if e is not None]
    with _fork_with(blobs + ([base] if base else []), where) as git:
        if base is not None:  # the files only the other versions touch: as on the new base
            found = git.entries_at(git.tree_of(base), others)
            target.update({p: found.get(p) for p in others})
        results = {}
        pre_target = _tree(git, target)
        for v in (o, a, b):
            before = pre_target if v is mover else _tree(git, v.place)
            after = _applied(git, before, v, path)
            if v is mover:  # made there already
                results[v.label] = after
                continue
            carried = place(git, before, pre_target, after, ("new base", v.label))
            if not carried.clean:
                raise _Cannot(
                    f"the {v.label} version does not carry onto the {mover.label} side's new"
                    f" base: {', '.join(carried.conflicted) or 'conflict'}"
                )
            results[v.label] = carried.tree
        merged = place(git, results["base"], results["ours"], results["theirs"], ("ours", "theirs"))
        if not merged.clean:
            raise _Cannot(
                "the diff was changed on both sides, and the changes clash on the new base: "
                + ", ".join(merged.conflicted)
            )
        author, date = git.ident()
        parent = git.commit_tree(pre_target, [], "place\n", author, date)
        child = git.commit_tree(merged.tree, [parent], "merged\n", author, date)
        mail = git.format_patch(child)
    _head, diff = message.mail_parts(mail)
    return diff


def _series_base(where: str, path: str, label: str) -> str | None:
    """The ``# base:`` of the series on side ``label`` of the merge git is making in the
    repository at ``where``: ours is HEAD, theirs the commit ``git merge`` names in its
    ``GITHEAD_<id>`` variable (or MERGE_HEAD, CHERRY_PICK_HEAD, REBASE_HEAD)."""
    try:
        git = find_repo(where)
    except PatchstackError:
        return None
    try:
        if label == "ours":
            revs = ["HEAD"]
        else:
            revs = [k[len("GITHEAD_") :] for k in os.environ if k.startswith("GITHEAD_")]
            revs += ["MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD"]
        folder = os.path.dirname(path)
        while True:
            name = f"{folder}/series" if folder else "series"
            for rev in revs:
                data = git.show_file(rev, name)
                if data is not None:
                    try:
                        return parse_series(data.decode("utf-8", "surrogateescape"), name).base
                    except InputError:
                        return None
            if not folder:
                return None
            folder = os.path.dirname(folder)
    finally:
        git.close()


def _tree(git: Git, place_: Place) -> str:
    with git.temp_index() as idx:
        idx.set_entries([(m, oid, p) for p, e in place_.items() if e is not None for m, oid in [e]])
        return idx.write_tree()


def _applied(git: Git, before: str, v: _Version, path: str) -> str:
    with git.temp_index() as idx:
        idx.read_tree(before)
        ok, said = idx.apply(v.data)
        if not ok:
            raise _Cannot(
                f"the {v.label} version of {path} does not apply where its index lines say:"
                f" {said.strip().splitlines()[0] if said.strip() else 'git apply failed'}"
            )
        return idx.write_tree()


@contextmanager
def _fork_with(blobs: list[str], where: str) -> Iterator[Git]:
    """The repository that holds these blobs: the one the series folder is in, or the one
    around it (a series kept in its own repository inside the fork's work tree)."""
    tried = []
    start = where
    for _ in range(2):
        try:
            git = find_repo(start)
        except PatchstackError:
            break
        found = git.has_objects(blobs)
        if all(found.values()):
            try:
                yield git
            finally:
                git.close()
            return
        tried.append(git.top)
        git.close()
        start = os.path.dirname(os.path.normpath(git.top))
    raise _Cannot(
        f"the objects the patch was made on are not in {' or '.join(tried) or where}: fetch"
        " the new upstream ('git fetch') and merge again"
    )
