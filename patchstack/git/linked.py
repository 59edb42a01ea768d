"""Linked worktrees (experiment trees and bisect's scratch trees) and the tracked-file listing
doctor reads; no domain logic."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from ..errors import PatchstackError
from ..model.ids import Oid
from .base import decode_path
from .listings import Listings

_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
_PARALLEL = ("-c", "checkout.workers=0")  # one checkout worker per core


@dataclass(frozen=True)
class WorktreeInfo:
    path: str
    head: Oid  # empty in a worktree whose branch has no commit yet
    branch: str | None  # refs/heads/..., None when detached
    git_dir: str  # its administrative folder
    locked: str | None  # the lock reason ("" when locked without one)
    prunable: bool  # its folder is gone


class Linked(Listings):
    def worktree_add(self, path: str, commit: str, lock_reason: str | None = None) -> None:
        """A linked worktree at ``path`` (absolute, new or empty) with a detached HEAD at
        ``commit``. With ``lock_reason`` it is a scratch tree: locked (``git worktree prune``
        leaves it alone; the reason names its owner), not checked out, and no hook runs."""
        args = [*_PARALLEL, "worktree", "add", "--quiet", "--detach"]
        if lock_reason is not None:
            args = [*_NO_HOOKS, *args, "--no-checkout", "--lock", "--reason", lock_reason]
        existed = os.path.isdir(path)
        # The new tree's checkout writes its own index, never the copy of this one's that a
        # publish holds (`worktree.HeldIndex`): git passes GIT_INDEX_FILE on to it.
        held, self.index_file = self.index_file, None
        try:
            proc = self.run(*args, "--", path, commit, check=False)
        finally:
            self.index_file = held
        if proc.returncode == 0:
            return
        said = proc.stderr.decode("utf-8", "replace").strip()
        if any(os.path.realpath(wt.path) == os.path.realpath(path) for wt in self.worktrees()):
            # git made the tree, and then its post-checkout hook failed (git keeps the tree)
            self.worktree_remove(path)
            if existed:
                os.makedirs(path, exist_ok=True)
            hook = os.path.join(
                self.top, self.out("rev-parse", "--git-path", "hooks/post-checkout")
            )
            raise PatchstackError(
                f"the post-checkout hook failed (exit {proc.returncode}) after git made the"
                f" worktree at {path}" + (f": {said}" if said else ""),
                f"fix the hook ({os.path.normpath(hook.strip())}) so that it succeeds, then run"
                " the command again; the worktree was removed again, nothing was changed",
            )
        if "missing but already registered worktree" in said:
            hint = (
                f"a worktree whose folder is gone is still registered at {path}: unregister it"
                " ('patchstack worktree --remove DIR' for one patchstack made, else"
                " 'git worktree prune'), then run the command again; nothing was changed"
            )
        elif "already exists" in said:
            hint = "give a new or empty folder; nothing was changed"
        else:
            hint = "nothing was changed"
        raise PatchstackError(f"git could not make a worktree at {path}: {said}", hint)

    def worktree_remove(self, path: str) -> None:
        """Unregister the linked worktree at ``path`` and delete it (even locked, edited, or
        already gone)."""
        self.run("worktree", "remove", "--force", "--force", "--", path)

    def worktrees(self) -> list[WorktreeInfo]:
        """Every worktree of the repository, the main one first, each with its git dir."""
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        admin: dict[str, str] = {}  # the real path of a linked worktree -> its git dir
        folder = os.path.join(self.common_dir, "worktrees")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            with (
                contextlib.suppress(OSError),
                open(os.path.join(folder, name, "gitdir"), "rb") as f,
            ):
                dotgit = os.fsdecode(f.read().rstrip(b"\n"))
                admin[os.path.realpath(os.path.dirname(dotgit))] = os.path.join(folder, name)
        result: list[WorktreeInfo] = []
        for block in out.split(b"\0\0"):
            fields: dict[str, str] = {}
            for rec in block.split(b"\0"):
                key, _, value = os.fsdecode(rec).partition(" ")
                if key:
                    fields[key] = value
            if "worktree" not in fields:
                continue
            path = fields["worktree"]
            git_dir = admin.get(os.path.realpath(path), "" if result else self.common_dir)
            result.append(
                WorktreeInfo(
                    path,
                    Oid(fields.get("HEAD", "")),
                    fields.get("branch"),
                    git_dir,
                    fields.get("locked"),
                    "prunable" in fields,
                )
            )
        return result

    def lock_reasons(self) -> list[str]:
        """The lock reasons of the locked linked worktrees, read from git's administrative
        files, no process (a check every command can afford)."""
        folder = os.path.join(self.common_dir, "worktrees")
        reasons = []
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            with (
                contextlib.suppress(OSError),
                open(os.path.join(folder, name, "locked"), "rb") as f,
            ):
                reasons.append(os.fsdecode(f.read()).strip())
        return reasons

    def switch_detached(self, commit: str) -> None:
        """This (scratch) worktree: HEAD detached at ``commit``, index and files exactly its
        tree, every untracked and ignored file removed; no hook runs."""
        self.run(*_NO_HOOKS, *_PARALLEL, "checkout", "--quiet", "--detach", "--force", commit)
        self._memo["head_ref"] = None  # (`Refs.head_ref`: detached now)
        self.run(*_NO_HOOKS, "clean", "-ffdxq")

    def ls_files(self) -> list[str]:
        """Every tracked path of the index."""
        out = self.run("ls-files", "-z").stdout
        return [decode_path(p) for p in out.split(b"\0") if p]
