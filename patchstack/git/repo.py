"""The repository object: every part of the git boundary in one class, and how it is found."""

from __future__ import annotations

import os

from ..errors import PatchstackError
from ..model.ids import ObjectFormat
from .fastimport import FastImport
from .index import TempIndex
from .interactive import Interactive
from .linked import Linked
from .mail import Mail
from .merge import Merges
from .process import run_git
from .refs import Refs
from .worktree import Worktree


class Git(Worktree, Linked, Merges, Refs, Mail, Interactive):
    """A repository: runs git there and returns values (ids, paths, listings)."""

    def temp_index(self) -> TempIndex:
        return TempIndex(self)

    def fast_import(self) -> FastImport:
        return FastImport(self)


def find_repo(start: str) -> Git:
    proc = run_git(
        [
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--absolute-git-dir",
            "--git-common-dir",
            "--show-object-format",
        ],
        cwd=start,
        check=False,
    )
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) < 4:
        raise _no_work_tree(start)
    top, git_dir, common, fmt = lines[:4]
    return Git(top, git_dir, os.path.normpath(common), ObjectFormat(fmt.strip()))


def _no_work_tree(start: str) -> PatchstackError:
    """Why there is no work tree here: inside a git directory, a bare repository, or none."""
    proc = run_git(
        ["rev-parse", "--is-inside-git-dir", "--is-bare-repository", "--absolute-git-dir"],
        cwd=start,
        check=False,
    )
    found = proc.stdout.decode("utf-8", "surrogateescape").split()
    if proc.returncode != 0 or len(found) < 3:
        return PatchstackError(
            f"not inside a git work tree: {start}", "run patchstack inside a git repository"
        )
    inside, bare, git_dir = found[0] == "true", found[1] == "true", found[2]
    if bare:
        return PatchstackError(
            f"{git_dir} is a bare repository: it has no work tree to apply patches in",
            "run patchstack in a clone of it, or in a worktree made with 'git worktree add'",
        )
    top = _top_of(git_dir)
    where = f"cd {top}" if top else "cd to the folder the repository's files are in"
    what = "inside the git directory" if inside else "in a git directory without a work tree"
    return PatchstackError(
        f"{what} {git_dir}, not in a work tree", f"run patchstack in the work tree: {where}"
    )


def _top_of(git_dir: str) -> str | None:
    """The work tree of a git directory: the folder holding ``.git``, or the one a linked
    worktree's ``gitdir`` file names."""
    if os.path.basename(git_dir) == ".git":
        return os.path.dirname(git_dir)
    try:
        with open(os.path.join(git_dir, "gitdir"), encoding="utf-8", errors="surrogateescape") as f:
            dot_git = f.read().strip()
    except OSError:
        return None
    return os.path.dirname(dot_git) if dot_git else None


def init_repo(path: str, branch: str = "main") -> Git:
    os.makedirs(path, exist_ok=True)
    run_git(["init", "-q", "-b", branch, "--", path])
    return find_repo(path)


def clone(src: str, dest: str) -> Git:
    run_git(["clone", "-q", "--", src, dest])
    return find_repo(dest)


def ident_env(name: str, email: str, date: str | None = None) -> dict[str, str]:
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env
