"""The forward moves of the work tree (a publish's ``read-tree -m -u``), and what they must not
overwrite.

``read-tree -m -u`` refuses, before writing anything, to overwrite a file with uncommitted
edits or an untracked file; an *ignored* file it takes for expendable: a ``.env`` where a patch
(or upstream, in a refresh) adds one is overwritten, an ignored folder where a file goes is
removed, an ignored file where a folder goes is replaced. The snapshot leaves ignored files out,
so ``undo`` could not give them back either. So every move first asks which ignored files are
where it writes (`Git.ignored_in_the_way`) and refuses, naming them, as it refuses for an
untracked file. The paths a move wrote are noted in ``touched``, so that a rollback puts back
those alone, and only where they still hold what the move wrote (`restore.put_back`): nothing the
user wrote meanwhile is touched.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence

from .. import lock
from ..checkout import Checkout
from ..errors import RefusedError
from ..git import Git, RawDiff
from ..git.objects import file_bytes, staged_mode
from ..model.ids import Oid
from .blobs import nested
from .snapshot import Snapshot


def move_tree(ws: Checkout, old: Oid, new: Oid, touched: list[str]) -> None:
    """Move the index and work tree from commit ``old`` to ``new``, keeping the user's edits.
    Stale stat information can make read-tree refuse wrongly, so the index is refreshed and
    the move tried once more before reporting."""
    git = ws.git
    diffs = git.changed_entries(*git.trees_of([old, new]))
    _refuse_ignored(ws, diffs)
    changed = [d[4] for d in diffs]
    proc = git.checkout_tree(old, new)
    if proc.returncode != 0:
        git.refresh_index()
        proc = git.checkout_tree(old, new)
    if proc.returncode != 0:
        dirty = git.dirty(exclude=ws.in_tree, paths=changed)
        in_the_way = sorted(set(changed) & set(dirty.modified + dirty.untracked + dirty.unmerged))
        if in_the_way:
            raise edits_in_the_way(in_the_way)  # refused before writing anything
        touched.extend(changed)  # (a full disk, say: some may be written)
        raise git_refused(proc.stderr)
    touched.extend(changed)
    lock.point("publish-worktree")


def move_overlay(
    ws: Checkout,
    src: Oid,
    dst: Oid,
    overlaid: Sequence[str],
    touched: list[str],
    index_tree: Oid | None = None,
    written: list[Oid] | None = None,
) -> None:
    """Move a work tree that holds ``src`` (the old HEAD's tree with ``overlaid`` as they are
    in the work tree) to tree ``dst``, the index to ``index_tree`` (``dst`` when None). The
    files ``overlaid`` are staged as they are (``src`` holds them so), so the move is
    ``read-tree``'s own two-tree merge, which refuses before writing anything an edit or an
    untracked file in the way; what is in the way is asked of git only then, to name it.
    ``written`` gets the trees whose versions the paths in ``touched`` may hold."""
    git = ws.git
    diffs = git.changed_entries(src, dst)
    changed = {d[4] for d in diffs}
    if overlaid and not git.stage_files(overlaid):
        # Their entries, which have no stat data now, are refreshed by the status below;
        # read-tree refuses an entry without stat data.
        git.set_index_entries(src, list(overlaid))
        git.dirty(exclude=ws.in_tree, paths=sorted(overlaid))
    _refuse_ignored(ws, diffs)
    shown = None if index_tree in (None, dst) else _showing(ws, src, dst, Oid(index_tree))
    to = shown[0] if shown else dst
    if written is not None:  # (a move that fails half way may have written ``to``'s files)
        written.extend([to, dst] if shown else [dst])
    proc = git.checkout_tree(src, to)
    if proc.returncode != 0:
        git.refresh_index()  # (refused before it wrote anything: once more, as move_tree does)
        proc = git.checkout_tree(src, to)
    if proc.returncode != 0:
        dirty = git.dirty(exclude=ws.in_tree, paths=sorted(changed | set(overlaid)))
        in_the_way = sorted(
            (changed & set(dirty.modified + dirty.unmerged + dirty.untracked)) - set(overlaid)
        )
        if in_the_way:
            raise edits_in_the_way(in_the_way)
        touched.extend(sorted(changed))
        raise git_refused(proc.stderr)
    touched.extend(sorted(changed | (set(shown[1]) if shown else set())))
    lock.point("publish-worktree")
    if shown:
        git.write_entries(shown[1], dst)
        lock.point("publish-worktree")
    elif index_tree not in (None, dst):
        git.set_index_entries(Oid(index_tree), git.changed_paths(Oid(index_tree), dst))


SHOWN_OFF = "PATCHSTACK_NO_SHOWN_MOVE"  # set: move to the shown tree, then set the index


def _showing(
    ws: Checkout, src: Oid, dst: Oid, index_tree: Oid
) -> tuple[Oid, dict[str, tuple[str, str]]] | None:
    """A stop's move without writing the index after ``read-tree``: each index write after it
    hashes again every file it wrote in the same second (git's racily clean entries: 3,345
    files at a first stop). (the tree to move to, the files of ``dst`` to write then): the
    move goes to the index's tree but where ``src`` already holds ``dst``'s version (those
    entries are set to the index's tree first, and ``read-tree`` keeps them, file and all),
    and ``dst``'s files where it differs from the index are written from an index of their
    own. The user's edits are guarded as ``read-tree src dst`` guards them: a path the move
    leaves alone whose file is to be written must be clean (or absent, with no file in the
    way), and its index entry ``src``'s. None, having changed nothing, where that cannot be
    shown, or for a submodule, an attributes file, a deletion or a file turned into a folder:
    the caller moves to ``dst`` and sets the index's entries after (so too in a sparse
    checkout, and for a file marked skip-worktree or assume-unchanged)."""
    git = ws.git
    sparse = (git.config("core.sparseCheckout") or "false").lower()  # (cone rules: read-tree's)
    if os.environ.get(SHOWN_OFF) or sparse not in ("false", "no", "off", "0"):
        return None
    diffs = git.changed_entries(index_tree, dst)
    paths = [d[4] for d in diffs]
    if not paths or nested(paths):
        return None
    at_src = git.ls_tree_paths(src, paths)
    kept: list[str] = []  # src holds dst's version: the index's entries set first
    write: dict[str, tuple[str, str]] = {}  # dst's files written after the move
    alone: list[str] = []  # of those, the paths the move itself leaves alone (src == index)
    for old_mode, new_mode, old_id, new_id, path in diffs:
        was, shown = at_src.get(path), (new_mode, new_id)
        if "160000" in (old_mode, new_mode, (was or ("",))[0]) or new_mode == "000000":
            return None
        if path.rpartition("/")[2] == ".gitattributes":
            return None
        if was == shown:
            kept.append(path)
            continue
        write[path] = shown
        if was == (None if old_mode == "000000" else (old_mode, old_id)):
            alone.append(path)
    entries, stat_dirty = git.index_entries(sorted(write))
    if any(entries.get(p) != at_src.get(p) for p in write):
        return None  # something staged there: read-tree's own rules decide
    if any(p in stat_dirty for p in alone):
        return None
    top = git.top
    if any(p not in entries and (os.path.lexists(f"{top}/{p}") or _in_way(top, p)) for p in alone):
        return None  # an untracked file where one is written
    if not _rules_as_shown(git, dst, write):
        return None
    to = git.edit_tree(index_tree, {p: at_src.get(p) for p in kept})
    git.set_index_entries(index_tree, kept)
    return to, write


def _rules_as_shown(git: Git, dst: Oid, paths: Iterable[str]) -> bool:
    """Whether each ``.gitattributes`` on the way of ``paths`` is in the work tree as ``dst``
    has it (or missing in both): ``checkout-index`` reads the work tree's rules first,
    ``read-tree -u`` the new index's."""
    from ..git.attributes import attribute_files  # (a stop's move only)

    rules = attribute_files(paths)
    wanted = git.ls_tree_paths(dst, rules)
    for rule in rules:
        full = os.path.join(git.top, rule)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            if rule in wanted:
                return False
            continue
        there = staged_mode(st), git.fmt.blob_id(file_bytes(full, st))
        if there != wanted.get(rule):
            return False
    return True


def _in_way(top: str, path: str) -> bool:
    """Whether a folder on the way to ``path`` is a file or a symbolic link."""
    at = top
    for part in path.split("/")[:-1]:
        at = os.path.join(at, part)
        if os.path.islink(at) or (os.path.lexists(at) and not os.path.isdir(at)):
            return True
        if not os.path.lexists(at):
            return False
    return False


def check_writes(ws: Checkout, paths: Sequence[str]) -> None:
    """A file write must replace a file: never a symbolic link (which ``os.replace`` would
    turn into a copy, leaving the file it pointed at behind) or a folder."""
    for path in paths:
        if os.path.islink(path) or os.path.isdir(path):
            what = "a symbolic link" if os.path.islink(path) else "a folder"
            shown = ws.display(path)
            real = shlex.quote(os.path.realpath(path))
            how = (
                f"make it a plain file (cp --remove-destination {real} {shlex.quote(shown)})"
                if os.path.islink(path)
                else "move it away"
            )
            raise RefusedError(
                f"{shown} is {what}; this command would replace it with a file",
                how + " and run the command again; nothing was changed",
            )


def check_unmoved(ws: Checkout, old_head: Oid, before: Snapshot, taken_before: bool) -> None:
    """HEAD (and the index, for a state taken before the index lock) is what the plan was
    made on: a 'git commit' that finished just before the lock was taken is named."""
    git = ws.git
    now = git.head() if taken_before else before.head  # (a snapshot taken now read HEAD)
    if before.head != old_head or now != old_head:
        moved = now if now != old_head else before.head
        raise RefusedError(
            f"HEAD moved while this command ran (now {(moved or '')[:12]})",
            "run the command again; nothing was changed",
        )
    if taken_before and before.index is not None:
        with git.temp_index() as idx:
            idx.copy_from(git.index_path)
            if idx.try_write_tree() != before.index:
                raise RefusedError(
                    "the index changed while this command ran (a 'git add'?)",
                    "run the command again; nothing was changed",
                )


def _refuse_ignored(ws: Checkout, diffs: Sequence[RawDiff]) -> None:
    created = [d[4] for d in diffs if d[0] == "000000"]
    if not created:
        return
    removed = {d[4] for d in diffs if d[1] == "000000"}
    found = ws.git.ignored_in_the_way(created, removed)
    if found:
        raise ignored_in_the_way(found, "this command")


def ignored_in_the_way(paths: Sequence[str], who: str) -> RefusedError:
    shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")
    one = len(paths) == 1
    return RefusedError(
        f"{'an ignored file is' if one else 'ignored files are'} in the way: {shown} ({who}"
        f" would overwrite {'it' if one else 'them'}, and git keeps no copy of ignored files)",
        f"move {'it' if one else 'them'} away (or delete what you do not need) and run the"
        " command again; nothing was changed",
    )


def edits_in_the_way(paths: Sequence[str], foldable: bool = True) -> RefusedError:
    """The refusal of a move over uncommitted edits. Not ``foldable``: no patch touches the
    files (`refresh.inway`), so folding them into one (`refresh` without a move) is no way."""
    ways = (
        "commit them, capture them with 'patchstack new', or fold them with 'patchstack refresh'"
        if foldable
        else "commit them, or capture them with 'patchstack new' (no patch changes them)"
    )
    return RefusedError(
        "uncommitted edits in files this command would change: " + ", ".join(paths),
        ways + "; nothing was changed",
    )


def git_refused(stderr: bytes) -> RefusedError:
    return RefusedError(
        "git refused to update the work tree: " + stderr.decode("utf-8", "replace").strip(),
        "nothing was changed",
    )
