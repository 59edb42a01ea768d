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
        raise PatchstackError(
            f"not inside a git work tree: {start}", "run patchstack inside a git repository"
        )
    top, git_dir, common, fmt = lines[:4]
    return Git(top, git_dir, os.path.normpath(common), ObjectFormat(fmt.strip()))


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
