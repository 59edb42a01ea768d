"""The repository object: every part of the git boundary in one class, and how it is found."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from ..errors import PatchstackError
from ..model.ids import ObjectFormat, Oid
from .fastimport import FastImport
from .index import TempIndex
from .interactive import Interactive
from .linked import Linked
from .mail import Mail
from .merge import MergeResult, Merges
from .process import check_version, learn_version, run_git, version_env
from .refs import Refs
from .similarity import Similarity
from .worktree import Worktree


class Git(Worktree, Linked, Merges, Similarity, Refs, Mail, Interactive):
    """A repository: runs git there and returns values (ids, paths, listings)."""

    def merge_trees(
        self, base: str, ours: str, theirs: str, labels: tuple[str, str]
    ) -> MergeResult:
        return self._no_null_entries(super().merge_trees(base, ours, theirs, labels))

    def merge_commits(self, ours: str, theirs: str, labels: tuple[str, str]) -> MergeResult:
        return self._no_null_entries(super().merge_commits(ours, theirs, labels))

    def _no_null_entries(self, merged: MergeResult) -> MergeResult:
        """git 2.39's merge-ort can write, for a file/folder conflict at a path the other
        side's folder rename moved, a tree entry of no mode and the null id (``git
        cherry-pick`` then fails: "cache entry has null sha1"), and every later read of that
        tree fails ("malformed mode in tree entry"): a refresh's skip could not show the next
        stop, and ``check`` without the shortcuts stopped with an error (structural seed 310).
        Such an entry names no content: the merge's tree is taken without it."""
        if merged.clean or not merged.conflicted:
            return merged
        found = self.entries_at(merged.tree, list(merged.conflicted))
        null = {path: None for path, (_mode, oid) in found.items() if self.fmt.is_null(oid)}
        if not null:
            return merged
        return replace(merged, tree=self.edit_tree(merged.tree, null))

    def temp_index(self) -> TempIndex:
        return TempIndex(self)

    def fast_import(self) -> FastImport:
        return FastImport(self)

    def drop_dangling_scratch(self) -> Oid | None:
        """Delete the scratch ref of fast-import streams (`FastImport.SCRATCH`) when it names
        an object this repository does not have, as an older version killed mid-replay left
        it (``git gc``, ``git fsck`` and ``git log --all`` stop at it); the id it held, or
        None when there is no such ref (one that names an object is left alone)."""
        held = self.resolve(FastImport.SCRATCH)
        if held is None or self.has_objects([held])[held]:
            return None
        return held if self.set_ref(FastImport.SCRATCH, None, held) else None


_PLACES = ("--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format")
_HEAD = ("--symbolic-full-name", "HEAD", "--")  # (``--``: HEAD is a revision, not a file)
HEAD_AT_START_OFF = "PATCHSTACK_NO_HEAD_AT_START"


def find_repo(start: str) -> Git:
    """The repository whose work tree holds ``start``, with a git patchstack supports
    (`process.check_version`; its version told by this first process, `version_env`), and
    the branch HEAD is on (`Refs.head_ref`) in the same process: ``--symbolic-full-name
    HEAD`` says what ``symbolic-ref -q HEAD`` says (``HEAD`` where it is detached), except on
    an unborn branch, where it fails and the places are asked alone
    (``PATCHSTACK_NO_HEAD_AT_START=1``: always)."""
    args = ["rev-parse", "--path-format=absolute", *_PLACES]
    with_head = not os.environ.get(HEAD_AT_START_OFF)
    told = version_env()
    proc = run_git([*args, *_HEAD] if with_head else args, cwd=start, check=False, env=told or None)
    stderr = learn_version(proc.stderr) if told else proc.stderr
    check_version()  # an old git's answers are not read
    if proc.returncode != 0 and with_head:  # an unborn branch (or no repository)
        with_head = False
        proc = run_git(args, cwd=start, check=False)
        stderr = proc.stderr
    if proc.returncode != 0:
        raise not_a_work_tree(start, stderr.decode("utf-8", "replace"))
    lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")[:-1]
    told_head = with_head and len(lines) == len(_PLACES) + 2 and lines[-1] == "--"
    head = lines[len(_PLACES)] if told_head else None
    if head is not None:
        del lines[len(_PLACES) :]
    if len(lines) != len(_PLACES):  # a path with a newline in it: one answer at a time
        lines = [
            run_git(args[:2] + [place], cwd=start).stdout.decode("utf-8", "surrogateescape")[:-1]
            for place in _PLACES
        ]
    top, git_dir, common, fmt = lines
    git = Git(top, git_dir, os.path.normpath(common), ObjectFormat(fmt.strip()))
    git.found_from = start
    if head is not None:  # (a ref's name holds no newline)
        git.knows_head_ref(None if head == "HEAD" else head)
    return git


def not_a_work_tree(start: str, said: str) -> PatchstackError:
    """Why git found no work tree at ``start``, in git's words, and what to do."""
    if "dubious ownership" in said:
        found = re.search(r"repository at '(.*)'", said)
        where = found.group(1) if found else start
        advice = re.search(r"git config --global --add safe\.directory .*", said)
        step = (
            advice.group(0).strip()
            if advice
            else f"git config --global --add safe.directory {where}"
        )
        return PatchstackError(
            f"git refuses to work in {where}: the repository belongs to {_owner(where)}, not to"
            " you (git's safe.directory check)",
            f"if you trust it, run '{step}'; or run patchstack as that user",
        )
    in_git_dir = _in_a_git_dir(start)
    if in_git_dir is not None:
        return in_git_dir
    fatal = next((ln for ln in said.splitlines() if ln.startswith("fatal:")), "")
    return PatchstackError(
        f"not inside a git work tree: {start}" + (f" (git: {fatal})" if fatal else ""),
        "run patchstack inside a git repository",
    )


def _owner(path: str) -> str:
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "another user"
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _in_a_git_dir(start: str) -> PatchstackError | None:
    """Why there is no work tree here when ``start`` is in a git directory: inside one, or a
    bare repository; None when there is no git directory either."""
    proc = run_git(
        ["rev-parse", "--is-inside-git-dir", "--is-bare-repository", "--absolute-git-dir"],
        cwd=start,
        check=False,
    )
    found = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(found) < 3:
        return None
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
