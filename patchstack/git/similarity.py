"""Similarity as git's rename detection sees it: which files copy detection pairs with
others (``diff-tree -C -C``), asked of git and answered in the background.

The trees compared are written by ``update-index`` and ``write-tree`` into an object
directory of their own, removed once answered: nothing is left in the repository or the
scratch store (a tree of 5,000 files is hundreds of tree objects). The comparison itself
(git reads and hashes every candidate file: about a second for a fork months behind)
writes its answer to a file while the caller goes on; `Pending.answer` waits for it, and
`close` ends one nobody waited for.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO

from ..lock import inherited_fds
from . import scratch
from .base import decode_path, encode_path
from .process import git_program, run_git, sealed_env
from .trees import Trees


class Pending:
    """A copy detection under way (`Similarity.start_alike`)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes] | None = None,
        files: tuple[IO[bytes], IO[bytes]] | None = None,
        room: tempfile.TemporaryDirectory[str] | None = None,
    ) -> None:
        self.proc, self.files, self.room = proc, files, room
        self.found: set[str] | None = None

    def answer(self) -> set[str] | None:
        """The paths asked about that git paired with a file; None when git could not say
        (two paths that cannot be in one tree, or a limit git hit and warned of)."""
        if self.proc is None or self.files is None:
            return self.found
        out, err = self.files
        with out, err:
            code = self.proc.wait()
            out.seek(0)
            err.seek(0)
            data, warned = out.read(), err.read().strip()
        self.proc, self.files = None, None
        if self.room is not None:
            self.room.cleanup()
        if code == 0 and not warned:  # "inexact rename detection was skipped", or the like
            self.found = copies_in(data)
        return self.found


def copies_in(raw: bytes) -> set[str]:
    """The added paths of ``diff-tree -z`` output found as copies (or renames)."""
    fields = raw.split(b"\0")
    copied: set[str] = set()
    i = 0
    while i < len(fields) - 1:
        status = fields[i].rsplit(b" ", 1)[-1]
        if status[:1] in (b"C", b"R"):
            copied.add(decode_path(fields[i + 2]))
            i += 3
        else:
            i += 2
    return copied


class Similarity(Trees):
    def start_alike(
        self, files: Mapping[str, str], asked: Mapping[str, str], score: int
    ) -> Pending:
        """Which paths of ``asked`` (path -> blob) copy detection pairs with one of ``files``
        (path -> blob; none of ``asked``'s paths), asked in the background: ``diff-tree -C
        -C`` from a tree of ``files`` to that tree with ``asked`` added, where every file is
        a candidate source and each added one takes its best, exact ones included, at
        ``score`` percent or more. Every blob is written as a regular file."""
        parent = scratch.PARENT if scratch.room() else self.git_dir
        room = tempfile.TemporaryDirectory(prefix="patchstack-alike-", dir=parent)
        objects = os.path.join(room.name, "objects")
        os.mkdir(objects)
        theirs = os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        stores = [os.path.join(self.common_dir, "objects"), *filter(None, [self.scratch])]
        env = {
            "GIT_INDEX_FILE": os.path.join(room.name, "index"),
            "GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(
                [*map(scratch.alternate, stores), *([theirs] if theirs else [])]
            ),
        }
        old = self._tree_in(env, files)
        new = self._tree_in(env, asked) if old else None
        if not old or not new:
            room.cleanup()
            return Pending()  # a file of one where the other has a folder
        args = [
            "diff-tree", "-r", "-z", "--no-commit-id", f"--find-copies={score}%",
            "--find-copies-harder", "-l0", "--end-of-options", old, new,
        ]  # fmt: skip
        out = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `Pending.answer`)
        err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `Pending.answer`)
        sealed = sealed_env(env)
        proc = subprocess.Popen(
            [git_program(sealed), *args],
            cwd=self.top,
            env=sealed,
            stdout=out,
            stderr=err,
            start_new_session=True,
            pass_fds=inherited_fds(),
        )
        self._background.append(proc)
        return Pending(proc, (out, err), room)

    def alike(
        self, files: Mapping[str, str], asked: Mapping[str, str], score: int
    ) -> set[str] | None:
        """`start_alike`, answered."""
        return self.start_alike(files, asked, score).answer()

    def _tree_in(self, env: Mapping[str, str], entries: Mapping[str, str]) -> str | None:
        """Add ``entries`` to the index of ``env`` and write its tree there."""
        data = b"".join(
            b"100644 " + blob.encode() + b"\t" + encode_path(path) + b"\0"
            for path, blob in entries.items()
        )
        add = run_git(["update-index", "-z", "--index-info"], self.top, data, env, check=False)
        if add.returncode:
            return None
        made = run_git(["write-tree"], self.top, None, env, check=False)
        return made.stdout.decode().strip() if made.returncode == 0 else None

    def attribute(self, name: str, paths: Sequence[str]) -> dict[str, str]:
        """The value of attribute ``name`` for each path, as git reads attributes
        (``check-attr``: "unspecified", "set", "unset" or a value)."""
        if not paths:
            return {}
        data = b"".join(encode_path(p) + b"\0" for p in paths)
        out = self.run("check-attr", "-z", "--stdin", name, input=data).stdout.split(b"\0")
        return {decode_path(out[i]): out[i + 2].decode() for i in range(0, len(out) - 2, 3)}
