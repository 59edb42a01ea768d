"""The real index and work tree: moved from one tree to another by ``read-tree``, which
carries the user's uncommitted edits and refuses, before writing anything, to overwrite them.

**git's index lock.** A publish holds ``index.lock`` in the git directory for as long as it
changes the index and the work tree (`HeldIndex`), as every git command that writes the index
does, so a ``git commit`` or ``git add`` meanwhile is refused by git itself, as git refuses
two. patchstack's own git processes work meanwhile in a copy of the index (`GitBase.index_file`,
a hard link at first); committing renames it over the real index, and a rollback before that
leaves the real index as it was. The lock file holds a note (``patchstack <pid>``), never index
data, so that one left by a killed patchstack is recognised: the next command, holding the
repository lock (so that no patchstack is still running), removes it
(`clear_stale_index_lock`); a lock of git's own is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Collection, Mapping, Sequence

from ..errors import RefusedError
from ..lock import point
from .base import GitBase, decode_path, encode_path
from .index import OTHERS, TempIndex, untracked_in
from .listings import Listings

CHECKOUT_WORKERS = 8  # at most: each is a process, and a move writes a few thousand files
NOTE = b"patchstack "  # how patchstack's index lock begins (git's own holds index data)
DRAFT = ".patchstack-"  # index.lock.patchstack-<pid>: the note before it becomes the lock
HELD = "patchstack-index-held"  # the index a publish works in, in the git directory
KEPT = "patchstack-index-kept"  # the real index as it was, once the held one replaced it


class HeldIndex:
    """git's index lock, held by this process (see the module docstring)."""

    def __init__(self, git: GitBase) -> None:
        self.git = git
        self.index = os.path.join(git.git_dir, "index")
        self.lock = self.index + ".lock"
        self.held = os.path.join(git.git_dir, HELD)
        self.kept = os.path.join(git.git_dir, KEPT)
        self.committed = False
        self.released = False
        _take_lock(self.lock)
        try:
            _remove(self.held, self.kept)
            if os.path.exists(self.index):
                try:
                    os.link(self.index, self.held)
                except OSError:  # a file system without hard links
                    shutil.copy2(self.index, self.held)
        except BaseException:
            _remove(self.held, self.lock)
            raise
        git.index_file = self.held

    def commit(self) -> None:
        """Make the held index the real one (the old one is kept until `release`)."""
        _remove(self.kept)
        if os.path.exists(self.index):
            os.link(self.index, self.kept)
        if os.path.exists(self.held):
            os.replace(self.held, self.index)
        self.committed = True
        if self.git.index_file == self.held:
            self.git.index_file = None  # from now on (a hook, say) the real one, new

    def roll_back(self) -> None:
        """The real index as it was before this publish (after `commit` too); released."""
        if self.committed:
            if os.path.exists(self.kept):
                os.replace(self.kept, self.index)
            else:
                _remove(self.index)
            self.committed = False
        self.release()

    def release(self) -> None:
        """Drop the lock (once: after that the lock file may be another git's)."""
        if self.git.index_file == self.held:
            self.git.index_file = None
        if not self.released:
            self.released = True
            _remove(self.held, self.kept, self.lock)


def index_locked(path: str) -> RefusedError:
    return RefusedError(
        f"git's index is locked ({path}): a git command is running in this work tree",
        "wait for it to finish and run the command again (if no git command is running,"
        " remove that file); nothing was changed",
    )


def _take_lock(lock: str) -> None:
    """Create ``lock`` holding its note, never empty: an empty lock a kill left between its
    creation and its note would read as git's own and never be removed. The note is written
    to a draft first and linked in place (exclusive, like ``O_EXCL``); a draft a kill leaves
    is removed with the lock (`clear_stale_index_lock`)."""
    draft = f"{lock}{DRAFT}{os.getpid()}"
    with open(draft, "wb") as f:
        f.write(NOTE + f"{os.getpid()}\n".encode())
    point("index-note")
    try:
        os.link(draft, lock)
    except FileExistsError:
        raise index_locked(lock) from None
    except OSError:  # a file system without hard links: created, then written
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise index_locked(lock) from None
        with os.fdopen(fd, "wb") as f:
            f.write(NOTE + f"{os.getpid()}\n".encode())
    finally:
        _remove(draft)


def _remove(*paths: str) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


class Worktree(Listings):
    def lock_index(self) -> HeldIndex:
        """Hold git's index lock (refused at once when git holds it)."""
        return HeldIndex(self)

    def clear_stale_index_lock(self) -> bool:
        """Remove the index lock a killed patchstack left (call with the repository lock
        held: then no patchstack process is running); git's own lock is left alone."""
        lock = os.path.join(self.git_dir, "index.lock")
        for name in os.listdir(self.git_dir):
            if name.startswith(f"index.lock{DRAFT}"):  # a killed patchstack's draft note
                _remove(os.path.join(self.git_dir, name))
        try:
            with open(lock, "rb") as f:
                mine = f.read(len(NOTE)) == NOTE
        except FileNotFoundError:
            return False
        if mine:
            _remove(os.path.join(self.git_dir, HELD), os.path.join(self.git_dir, KEPT), lock)
        return mine

    def checkout_tree(self, old: str, new: str) -> subprocess.CompletedProcess[bytes]:
        """Move the index and work tree from tree ``old`` to ``new``, keeping local edits
        (the caller reads the refusal from the result). Files are written by parallel workers
        (git's parallel checkout, for moves of 100 files or more) unless the user chose how
        many: a pop of 1,000 patches writes 760 files in 0.22 s instead of 0.34 s on 2 cores."""
        chosen = self.config("checkout.workers") is not None  # the user's choice stands
        count = min(CHECKOUT_WORKERS, os.cpu_count() or 1)
        workers = [] if chosen else ["-c", f"checkout.workers={count}"]
        return self.run(*workers, "read-tree", "-m", "-u", old, new, check=False)

    def index_entries(self, paths: Sequence[str]) -> tuple[dict[str, tuple[str, str]], set[str]]:
        """The real index (or the held one) at ``paths``: path -> (mode, id) of its plain
        stage-0 entries (none for an unmerged path, nor one marked skip-worktree or
        assume-unchanged, whose file git leaves alone), and the paths whose stat data git finds
        changed (``diff-files``: a stat-dirty file may hold the entry's bytes still)."""
        entries: dict[str, tuple[str, str]] = {}
        dirty: set[str] = set()
        asked = list(dict.fromkeys(paths))
        for at in range(0, len(asked), 500):  # a command line at a time
            chunk = asked[at : at + 500]
            out = self.run("ls-files", "-s", "-v", "-z", "--", *chunk).stdout
            for rec in out.split(b"\0"):
                if rec:
                    meta, name = rec.split(b"\t", 1)
                    tag, mode, oid, stage = meta.decode().split()
                    if tag == "H" and stage == "0":  # (S: skip-worktree, lower case: assumed)
                        entries[decode_path(name)] = (mode, oid)
            out = self.run("diff-files", "-z", "--name-only", "--", *chunk).stdout
            dirty.update(decode_path(p) for p in out.split(b"\0") if p)
        return entries, dirty

    def write_entries(
        self, entries: Mapping[str, tuple[str, str]], tree: str | None = None
    ) -> None:
        """Write these (mode, id) into the work tree as ``checkout-index --force`` writes them,
        from an index of their own: the real index is not written (its entries keep their stat
        data, and git reads nothing again). The ``.gitattributes`` files of ``tree`` on their
        way are in that index too (git reads a checkout's attributes from the index first, as
        ``read-tree -u`` to ``tree`` reads them), not written."""
        if not entries:
            return
        from .attributes import attribute_files  # (only a stop's move writes these)

        found = self.ls_tree_paths(tree, attribute_files(entries)) if tree else {}
        both = {**{p: e for p, e in found.items() if p not in entries}, **entries}
        with TempIndex(self) as idx:
            idx.set_entries([(mode, oid, path) for path, (mode, oid) in both.items()])
            data = b"".join(encode_path(p) + b"\0" for p in entries)
            self.run("checkout-index", "--force", "-z", "--stdin", input=data, env=idx.env)

    def untracked(self, exclude: str | None = None) -> list[str]:
        """The untracked files git does not ignore (`TempIndex.scan`'s list), but for those
        in the folder ``exclude``; a nested repository's folder ends in '/'."""
        return untracked_in(self.run(*OTHERS).stdout, exclude)

    def ignored_in_the_way(self, created: Sequence[str], removed: Collection[str]) -> list[str]:
        """The ignored files a move that creates the paths ``created`` (and removes the
        tracked paths ``removed``) would overwrite: read-tree takes them for expendable. Each
        created path that is there already (an ignored file, or a folder of them), and each of
        its folders that is a file or a link, unless the move removes it; only those that
        exist are asked of git."""
        there: list[str] = []
        seen: set[str] = set()
        for path in created:
            if os.path.lexists(os.path.join(self.top, path)):
                there.append(path)
            folder = path
            while "/" in folder:
                folder = folder.rpartition("/")[0]
                if folder in seen:
                    break
                seen.add(folder)
                full = os.path.join(self.top, folder)
                if folder not in removed and (
                    os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full))
                ):
                    there.append(folder)
        return sorted(self.ignored(there))

    def ignored(self, paths: Sequence[str]) -> set[str]:
        """Those of ``paths`` (untracked files, or folders) that git ignores."""
        found: set[str] = set()
        asked = list(dict.fromkeys(paths))
        for at in range(0, len(asked), 500):  # a command line at a time
            out = self.run(
                "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--",
                *asked[at : at + 500],
            ).stdout  # fmt: skip
            found.update(decode_path(p) for p in out.split(b"\0") if p)
        return found

    def stage_files(self, paths: Sequence[str]) -> bool:
        """Make the index hold these work-tree files as they are (as ``git add`` stages them,
        with their stat data), removing those that are missing: one process, where index
        entries set from a tree and refreshed cost two. Where a path is no file, it is git's
        ``update-index --add --remove``'s, not ``git add``'s: a folder where the index has a
        file removes that entry (and adds none of the folder's files); a folder holding a
        repository of its own is staged as a submodule; a path under what is now a file is
        missing (removed). False, and nothing changed, when git refuses one: a folder where
        the index has no file (an untracked folder, or a tracked folder's own path)."""
        data = b"".join(encode_path(p) + b"\0" for p in paths)
        proc = self.run(
            "update-index", "--add", "--remove", "-z", "--stdin", input=data, check=False
        )
        return proc.returncode == 0

    def refresh_index(self) -> None:
        self.run("update-index", "-q", "--refresh", check=False)

    def reset_index(self, tree: str) -> None:
        """Make the real index hold ``tree``, keeping stat data of unchanged entries."""
        self.run("read-tree", "--reset", tree)
        self.refresh_index()

    def set_index_entries(
        self, tree: str, paths: Sequence[str], env: Mapping[str, str] | None = None
    ) -> None:
        """Make the index (the real one, or ``env``'s) hold ``tree``'s version of ``paths``,
        removing those ``tree`` lacks."""
        if not paths:
            return
        listed = self.ls_tree_paths(tree, paths)
        records = [
            f"{mode} {oid}\t".encode() + encode_path(path) for path, (mode, oid) in listed.items()
        ]
        records += [
            b"0 " + self.fmt.null.encode() + b"\t" + encode_path(p)
            for p in paths
            if p not in listed
        ]
        self.run("update-index", "-z", "--index-info", input=b"\0".join(records) + b"\0", env=env)

    def commit_all(self, message: str, env: Mapping[str, str]) -> str:
        """Stage everything and commit (the demo's sandbox repositories)."""
        self.run("add", "-A", env=env)
        self.run("commit", "-q", "--no-verify", "-m", message, env=env)
        return self.oid("rev-parse", "HEAD")

    def am(self, paths: Sequence[str], env: Mapping[str, str]) -> None:
        self.run("am", "-q", "--committer-date-is-author-date", "--", *paths, env=env)

    def fetch(self, remote: str = "origin") -> None:
        self.run("fetch", "-q", remote)
