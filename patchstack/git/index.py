"""A throwaway index file inside the git directory, for building trees without touching the
user's index or work tree."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..model.ids import Oid
from .base import GitBase, decode_path, encode_path
from .process import failure

T = TypeVar("T")


class TempIndex:
    def __init__(self, git: GitBase) -> None:
        self.git = git
        fd, self.path = tempfile.mkstemp(prefix="patchstack-index-", dir=git.git_dir)
        os.close(fd)
        os.unlink(self.path)
        self.env = {"GIT_INDEX_FILE": self.path}

    def __enter__(self) -> TempIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        for p in (self.path, self.path + ".lock"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    def read_tree(self, tree: str) -> None:
        self.git.run("read-tree", tree, env=self.env)

    def apply(self, patch: bytes, strip: int = 1, reverse: bool = False) -> tuple[bool, str]:
        proc = self.git.run(
            "apply",
            "--cached",
            f"-p{strip}",
            "--whitespace=nowarn",
            *(("--reverse", "--check") if reverse else ()),
            "-",
            input=patch,
            env=self.env,
            check=False,
        )
        return proc.returncode == 0, proc.stderr.decode("utf-8", "replace")

    def add_paths(self, paths: Sequence[str], force: bool = False) -> None:
        """Stage these work-tree paths (literally: no globs, no pathspec magic); ``force``:
        ignored ones too (files a stop wrote, which the user's ignore rules may match)."""
        if not paths:
            return
        data = b"\0".join(encode_path(p) for p in paths)
        self.git.run(
            "add", "-A", *(["--force"] if force else []), "--pathspec-from-file=-",
            "--pathspec-file-nul", input=data, env=self.env,
        )  # fmt: skip

    def write_tree(self) -> Oid:
        return self.git.oid("write-tree", env=self.env)

    def checkout_to(self, folder: str) -> None:
        """Write every file of this index into ``folder`` (not a work tree of the repository:
        a plain folder a user's program runs in)."""
        prefix = os.path.join(os.path.abspath(folder), "")
        self.git.run("checkout-index", "--all", "--force", f"--prefix={prefix}", env=self.env)

    def copy_from(self, index_file: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.copy2(index_file, self.path)  # keeps mtime: racy entries stay racy

    def try_write_tree(self) -> Oid | None:
        """The index as a tree, or None when it cannot be one (unmerged entries). An index of
        the same bytes as one asked before in this command is that one's tree, asked of git
        once: a publish checks that the index it holds is the one its snapshot read, a copy
        of the same file (``PATCHSTACK_NO_SAME_INDEX=1``: git is asked each time)."""
        key = None
        if not os.environ.get(SAME_INDEX_OFF):
            with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as f:
                key = ("index-tree", hashlib.sha256(f.read()).hexdigest())
        memo = self.git._memo
        if key is not None and key in memo:
            found: Oid | None = memo[key]
            return found
        proc = self.git.run("write-tree", env=self.env, check=False)
        tree = Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None
        if key is not None:
            memo[key] = tree
        return tree

    def scan(
        self, exclude: str | None, meanwhile: Callable[[], T]
    ) -> tuple[list[tuple[str, str]], list[str], T]:
        """(index mode, path) of the tracked entries whose file may differ (stat data, no
        refresh), and the untracked, not ignored files (folders of nested repositories end in
        '/'), from two git processes running at once while ``meanwhile`` runs here: the work
        tree is read three ways at the same time."""
        procs = [
            self.git.spawn(args, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env)
            for args in (_DIFF_FILES, OTHERS)
        ]
        try:
            done = meanwhile()
        finally:
            outs = [proc.communicate() for proc in procs]
        for args, proc, (_out, err) in zip((_DIFF_FILES, OTHERS), procs, outs, strict=True):
            if proc.returncode != 0:
                raise failure(args, proc.returncode, err)
        return _stat_dirty(outs[0][0]), untracked_in(outs[1][0], exclude), done

    def set_entries(self, records: Sequence[tuple[str, str, str]]) -> None:
        """(mode, oid, path) records; mode "0" removes the path."""
        if records:
            data = b"".join(
                f"{mode} {oid}\t".encode() + encode_path(path) + b"\0"
                for mode, oid, path in records
            )
            self.git.run("update-index", "-z", "--index-info", input=data, env=self.env)


SAME_INDEX_OFF = "PATCHSTACK_NO_SAME_INDEX"
_DIFF_FILES = ("diff-files", "-z", "--no-renames")
OTHERS = ("ls-files", "-z", "--others", "--exclude-standard")


def _stat_dirty(out: bytes) -> list[tuple[str, str]]:
    recs = out.split(b"\0")
    result = []
    for meta, path in zip(recs[0::2], recs[1::2], strict=False):
        if meta.startswith(b":"):
            result.append((meta[1:].split()[0].decode(), decode_path(path)))
    return list(dict.fromkeys(result))


def untracked_in(out: bytes, exclude: str | None) -> list[str]:
    prefix = exclude.rstrip("/") + "/" if exclude else None
    found = (decode_path(p) for p in out.split(b"\0") if p)
    return [p for p in found if not (prefix and (p + "/").startswith(prefix))]
