"""Experiment worktrees, and the scratch worktrees bisect tests in.

``patchstack worktree DIR`` builds "REV + the selected patches" in the object database exactly
as ``push --onto`` does (the engine: the canonical chain, then three-way placement), and adds a
linked git worktree at DIR whose HEAD is detached at the top patch commit. The patches there are
ordinary patch commits, so ``status``, ``push`` and ``pop`` work in DIR; a note in DIR's own git
dir (`checkout.experiment_path`) points the commands run there at the series DIR was made
from, and names DIR's own operation log. The user's worktree, index, HEAD and branch are never
touched.

Making and removing DIR are entries of the operation log of the checkout the command ran in
(`journal.trees`): ``undo`` there removes a tree it made, or makes a removed tree again with its
commits, files and log; a command killed half way leaves an interrupted entry that every
command there names and ``undo`` takes back. Removing is refused while DIR holds what the series
does not (edits, amended patch commits, patches not in the series, commits that are not
patches), unless ``--force``.

Bisect tests in a scratch worktree in the temporary folder: locked with its owner's process id
as the reason (so ``git worktree prune`` leaves it alone while it runs), removed when the bisect
ends however it ends (`scratch`), and removed by the next bisect when its owner was killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import lock
from ..checkout import Checkout
from ..errors import GitFailure, PatchstackError, RefusedError
from ..git import Git, WorktreeInfo, find_repo
from ..journal.trees import LOG_PREFIX, TreeChange, TreeState, capture, read_note
from ..model import selection
from ..model.ids import Oid
from ..model.selection import Selector
from ..model.series import Series
from ..model.stack import AppliedPatch, stack_from_history
from ..model.trailers import PATCH_COMMIT_GREP
from ..progress import QUIET, Progress
from ..transaction import Plan, publish
from .refresh.proof import DIFFERS
from .state import make_engine, read_stack, resolve_rev
from .status import status

if TYPE_CHECKING:
    from ..engine.build import Built
    from ..engine.chain import Engine

SCRATCH_PREFIX = "patchstack-bisect-"
_SCRATCH_REASON = "patchstack bisect scratch (pid {pid})"


@dataclass(frozen=True)
class Experiment:
    path: str
    head: Oid
    base: Oid  # the commit below the applied patches now
    made_on: Oid  # the commit it was made on
    onto: str | None  # --onto as given, None for the series base
    patches: tuple[str, ...]  # applied now
    selection: tuple[str, ...]  # the selector options it was made with, as given
    missing: bool  # its folder is gone


def selected_names(series: Series, sel: Selector) -> list[str]:
    """The patches a --only/--except selection carries, in series order (no filter: all)."""
    return selection.push_target(series, (), Selector(None, True, sel.only, sel.except_))


def selector_words(sel: Selector) -> tuple[str, ...]:
    words: list[str] = []
    if sel.only is not None:
        words += ["--only", ",".join(sel.only)]
    if sel.except_ is not None:
        words += ["--except", ",".join(sel.except_)]
    return tuple(words)


def build_on(
    engine: Engine, git: Git, base: Oid, names: Sequence[str], progress: Progress = QUIET
) -> Oid:
    """The commit "``base`` + ``names``", built as ``push --onto`` builds it; ConflictError
    (with the conflict report) when a patch does not apply there."""
    if not names:
        return base
    return build_stack(engine, git, base, names, progress=progress).head


def build_stack(
    engine: Engine,
    git: Git,
    base: Oid,
    names: Sequence[str],
    keep: Sequence[AppliedPatch] = (),
    progress: Progress = QUIET,
) -> Built:
    """`build_on`'s build, with its commits; on ``keep`` (patches placed on ``base`` before,
    by this engine or another: bisect's older versions of a patch) when given."""
    from ..engine.build import build

    return build(engine, base, git.tree_of(base), keep, list(names), progress)


# -- experiment worktrees -------------------------------------------------------------------


def create(ws: Checkout, directory: str, onto: str | None, sel: Selector) -> Experiment:
    git = ws.git
    path = os.path.abspath(os.path.join(ws.cwd, directory))
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise RefusedError(
            f"{directory} exists and is not an empty folder", "give a new or empty folder"
        )
    if _inside(path, git.top):
        raise RefusedError(
            f"{directory} is inside the work tree {git.top}",
            "give a folder beside it, for example ../" + os.path.basename(path),
        )
    series = ws.load_series()
    stack = read_stack(git)
    names = selected_names(series, sel)
    if onto is not None:
        base = resolve_rev(git, onto)
    elif series.base:
        base = resolve_rev(git, series.base)
    else:
        base = stack.base
    engine = make_engine(ws, series, stack)
    ws.progress.step("building commits")
    try:
        head = build_on(engine, git, base, names, ws.progress)
    finally:
        engine.close()
    # The tree's own log gets a name no earlier tree at this path had (`journal.trees`).
    log = f"{LOG_PREFIX}{_ref_word(os.path.basename(path))}-{secrets.token_hex(4)}/oplog"
    note = {
        "series_dir": ws.series_dir,
        "made_on": base,
        "onto": onto,
        "patches": names,
        "selection": list(selector_words(sel)),
        "log": log,
        "made_from": git.top,
    }
    made = TreeState(path, head, json.dumps(note, indent=2) + "\n")
    publish(ws, Plan("worktree", stack.head, stack.head, trees=(TreeChange(path, None, made),)))
    return Experiment(path, head, base, base, onto, tuple(names), selector_words(sel), False)


def experiments(git: Git) -> list[Experiment]:
    """The worktrees ``patchstack worktree`` made, as they are now."""
    found = []
    for wt in git.worktrees()[1:]:
        note = read_note(wt.git_dir) if wt.git_dir else None
        if note is not None and wt.head:
            found.append(_experiment(git, wt, note))
    return found


def _experiment(git: Git, wt: WorktreeInfo, note: dict[str, Any]) -> Experiment:
    stack = stack_from_history(wt.head, git.iter_first_parent(wt.head))
    onto = note.get("onto")
    return Experiment(
        wt.path,
        wt.head,
        stack.base,
        Oid(str(note.get("made_on", ""))),
        onto if isinstance(onto, str) else None,
        stack.names,
        tuple(str(w) for w in note.get("selection") or ()),
        wt.prunable or not os.path.isdir(wt.path),
    )


def remove(ws: Checkout, directory: str, force: bool) -> Experiment:
    """Remove an experiment worktree, as an entry of this checkout's log ('undo' makes it
    again); refused, naming them, when it holds uncommitted edits, commits that differ from
    their patch files, patches the series does not have, or commits that are on no branch and
    are not patches (unless ``force``: they stay in the log then)."""
    git = ws.git
    path = os.path.realpath(os.path.join(ws.cwd, directory))
    match = [wt for wt in git.worktrees()[1:] if os.path.realpath(wt.path) == path]
    if not match:
        raise PatchstackError(
            f"{directory} is not a linked worktree of this repository",
            "see 'patchstack worktree --list'",
        )
    wt = match[0]
    note = read_note(wt.git_dir) if wt.git_dir else None
    if note is None:
        raise RefusedError(
            f"{directory} was not made by 'patchstack worktree'",
            f"remove it with 'git worktree remove {directory}'; nothing was changed",
        )
    if _inside(os.path.realpath(ws.cwd), path):
        raise RefusedError(f"you are inside {directory}", "run the command from another folder")
    gone = wt.prunable or not os.path.isdir(wt.path)
    if not force and not gone:
        refuse_losses(ws, wt, note, directory)
    removed = _experiment(git, wt, note)
    state = capture(git, wt.path, ws.series_dir)
    head = git.head()
    assert head is not None
    publish(ws, Plan("worktree", head, head, trees=(TreeChange(wt.path, state, None),)))
    return removed


def refuse_losses(ws: Checkout, wt: WorktreeInfo, note: dict[str, Any], directory: str) -> None:
    """What removing the tree would take from the user: uncommitted edits, commits that differ
    from their patch files, patches the series does not have, commits that are not patches."""
    git = ws.git
    other = find_repo(wt.path)
    st = None
    try:
        dirty = other.dirty()
        if dirty.clean:
            folder = note.get("series_dir")
            there = Checkout(other, str(folder) if folder else ws.series_dir, wt.path)
            st = status(there) if there.exists() else None
    finally:
        other.close()
    if not dirty.clean:
        files = list(dirty.modified + dirty.unmerged + dirty.untracked)
        raise RefusedError(
            f"{directory} has uncommitted edits or untracked files: " + ", ".join(files[:10]),
            "capture them there ('patchstack new'), or give --force to drop them;"
            " nothing was changed",
        )
    differs = [p.name for p in st.patches if p.matches == DIFFERS] if st else []
    if differs:
        raise RefusedError(
            f"in {directory} the commit of {', '.join(differs[:5])} differs from its patch file"
            " (amended, or edited by a rebase): removing the tree would lose what it changed",
            f"adopt it there ('cd {directory} && patchstack refresh --patch {differs[0]}'),"
            " or give --force ('patchstack undo' brings the tree back); nothing was changed",
        )
    if st and st.unknown_applied:
        raise RefusedError(
            f"{directory} has patches applied that the series does not have:"
            f" {', '.join(st.unknown_applied[:5])}",
            "put them back into the series file, or give --force ('patchstack undo' brings"
            " the tree back); nothing was changed",
        )
    lost = git.rev_list(
        "--invert-grep",
        "--extended-regexp",
        f"--grep={PATCH_COMMIT_GREP}",
        wt.head,
        "--not",
        "--branches",
        "--tags",
        "--remotes",
    )
    if lost:
        raise RefusedError(
            f"{directory} has {len(lost)} commit(s) that are on no branch and are not patches:"
            f" {', '.join(c[:12] for c in lost[:5])}",
            f"keep them on a branch ('git -C {directory} branch NAME'), or give --force;"
            " nothing was changed",
        )


def _ref_word(name: str) -> str:
    """A folder's name as one safe word of a ref name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:40] or "tree"


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: str, folder: str) -> bool:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(folder))
    return rel == "." or not rel.startswith("..")


# -- bisect's scratch worktrees -------------------------------------------------------------


@contextlib.contextmanager
def scratch(git: Git, commit: Oid) -> Iterator[Git]:
    """A locked scratch worktree at ``commit`` (not checked out: `Git.switch_detached` fills
    it), removed on the way out, on error and on Ctrl-C alike."""
    remove_stale_scratch(git)
    parent = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
    path = os.path.join(parent, os.path.basename(git.top.rstrip("/")) or "tree")
    added = False
    tree: Git | None = None
    try:
        with lock.critical():
            git.worktree_add(path, commit, _SCRATCH_REASON.format(pid=os.getpid()))
            added = True
        tree = find_repo(path)
        yield tree
    finally:
        with lock.critical():
            if tree is not None:
                tree.close()
            if added:
                git.worktree_remove(path)
            shutil.rmtree(parent, ignore_errors=True)


def remove_stale_scratch(git: Git) -> list[str]:
    """Remove the scratch worktrees of bisects and probe runs that were killed; their paths.
    Every command calls it (`cli.app.Options.checkout`): what git lists as locked is read from
    its files first, and git is run only when a dead process's scratch tree is there."""
    if not any(_stale(reason) for reason in git.lock_reasons()):
        return []
    removed = []
    for wt in git.worktrees()[1:]:
        if _stale(wt.locked or ""):
            with contextlib.suppress(GitFailure):  # (another command removed it meanwhile)
                git.worktree_remove(wt.path)
            parent = os.path.dirname(wt.path)
            if os.path.basename(parent).startswith(SCRATCH_PREFIX):
                shutil.rmtree(parent, ignore_errors=True)
            removed.append(wt.path)
    return removed


def _stale(reason: str) -> bool:
    """Is this the lock reason of a scratch tree whose process is gone?"""
    m = re.fullmatch(r"patchstack bisect scratch \(pid (\d+)\)", reason)
    return m is not None and not _alive(int(m.group(1)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
