"""Three-way merges with readable conflict markers, and the conflict report they lead to.

git labels the markers of a merge with the throwaway commits it merged (`git.merge`); a merged
tree that goes into the user's work tree gets labels that say what each side is instead (the
new base, the old base, the patch). A report lists each conflicting region with what the patch
expected there, what is there now and what it wants; `blame` adds the upstream commits that
changed those lines between the old and the new base, traced at their place (`culprits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..git import Git, MergeResult
from ..model.conflict import Conflict, ConflictHunk, parse_markers, relabel
from ..model.diff import Patch
from ..model.ids import Oid
from ..model.misfits import created_but_there, notes_for
from . import culprits


def merge(
    git: Git,
    base: str,
    ours: str,
    theirs: str,
    labels: tuple[str, str],
    base_label: str | None = None,
) -> MergeResult:
    """``merge_trees`` with git's messages in the caller's words; with ``base_label`` the
    conflict markers inside the merged files are relabelled too (for a tree the user sees)."""
    return readable(git, git.merge_trees(base, ours, theirs, labels), base_label)


def readable(git: Git, result: MergeResult, base_label: str | None = None) -> MergeResult:
    """A merge's messages (and with ``base_label`` its conflict markers) in the caller's
    words instead of the ids of the commits merged."""
    messages = result.messages
    for oid, label in result.sides:
        messages = messages.replace(oid, label)
    tree = result.tree
    if base_label is not None and not result.clean and result.conflicted:
        tree = _relabel_tree(git, tree, result.conflicted, dict(result.sides), base_label)
    return replace(result, tree=tree, messages=messages)


def _relabel_tree(
    git: Git, tree: Oid, paths: Sequence[str], names: dict[str, str], base_label: str
) -> Oid:
    listing = git.entries_at(tree, list(paths))
    changes: dict[str, tuple[str, str] | None] = {}
    for path in paths:
        if path not in listing or listing[path][0] in ("040000", "160000"):
            continue
        mode, oid = listing[path]
        if git.fmt.is_null(oid):  # git 2.39's merge-ort can leave one in a file/folder conflict
            continue
        changes[path] = (mode, git.write_blob(relabel(git.read_blob(oid), names, base_label)))
    return git.edit_tree(tree, changes) if changes else tree


def conflict_hunks(git: Git, merged: Oid, files: Sequence[str]) -> list[ConflictHunk]:
    """The conflicting regions of ``files`` in the merged tree."""
    hunks: list[ConflictHunk] = []
    listing = git.ls_tree_paths(merged, list(files))
    for path in files:
        found = listing.get(path)
        if found and found[0] not in ("040000", "160000") and not git.fmt.is_null(found[1]):
            text = git.read_blob(found[1]).decode("utf-8", "surrogateescape")
            hunks.extend(parse_markers(path, text))
    return hunks


def blame(
    git: Git, name: str, merged: MergeResult, old_base: str | None, new_base: str
) -> Conflict:
    """The report of a patch that did not merge onto ``new_base``, each region with the
    upstream commits (``old_base..new_base``) that changed its lines, traced at its place
    (`culprits`); none where they cannot be told."""
    return blame_first(git, unblamed(git, name, merged), old_base, new_base)


def unblamed(git: Git, name: str, merged: MergeResult) -> Conflict:
    """The report of a patch that did not merge, its regions' upstream commits not traced yet
    (`blame_first` traces them)."""
    files = merged.conflicted
    listing = git.ls_tree_paths(merged.tree, list(files))
    hunks: list[ConflictHunk] = []
    for path in files:
        if path in listing and listing[path][0] not in ("040000", "160000"):
            text = git.read_blob(listing[path][1]).decode("utf-8", "surrogateescape")
            hunks += parse_markers(path, text)
    return Conflict(name, files, tuple(hunks), (), merged.messages.strip(), merged.tree)


def blame_first(
    git: Git,
    report: Conflict,
    old_base: str | None,
    new_base: str,
    count: int | None = None,
    walk: culprits.Walk | None = None,
) -> Conflict:
    """``report`` (`unblamed`) with the upstream commits of its first ``count`` regions (None:
    every one) traced, in one walk of their files only: a file's trace does not depend on
    the other files walked with it (``--first-parent`` compares each commit with its first
    parent only), so what is traced is what tracing every file gives."""
    first = report.hunks if count is None else report.hunks[:count]
    paths = list(dict.fromkeys(h.path for h in first))
    if not paths or report.merged_tree is None:
        return report
    listing = git.ls_tree_paths(report.merged_tree, paths)
    texts = [(p, git.show_file(new_base, p), git.read_blob(listing[p][1])) for p in paths]
    found = culprits.attribute(git, old_base, new_base, texts, walk)
    traced = {p: iter(each) for p, each in zip(paths, found, strict=True)}
    hunks = tuple(next(traced[h.path]) if h.path in traced else h for h in report.hunks)
    return replace(report, hunks=hunks)


def misfit_notes(git: Git, tree: Oid, patch: Patch) -> list[str]:
    """Why ``patch`` does not apply to the files of ``tree``, where a reason can be named."""
    files = [f for f in patch.files if f.old_path and f.hunks]
    made = [f.new_path for f in patch.files if f.old_path is None and f.new_path]
    listing = git.ls_tree_paths(tree, [*(f.old_path for f in files if f.old_path), *made])
    notes = [created_but_there(made, [p for p in made if p in listing])]
    for f in files:
        found = listing.get(f.old_path or "")
        notes += notes_for(f, git.read_blob(found[1]) if found else None)
    return [n for n in notes if n]
