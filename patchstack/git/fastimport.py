"""One ``git fast-import`` stream: many blobs and commits, one process, one pack."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from .. import lock
from ..errors import GitFailure
from ..model.ids import Oid
from .base import encode_path
from .process import failure

if TYPE_CHECKING:
    from .objects import Objects

Change = tuple[str, str, str] | tuple[str, str]


def quote_path(path: str) -> bytes:
    """A path as fast-import reads it: C-quoted when it starts with '"' or holds a newline."""
    raw = encode_path(path)
    if b"\n" in raw or raw.startswith(b'"'):
        raw = b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'
    return raw


class FastImport:
    """Commits are made on a scratch branch of the stream that never becomes a ref: it is
    reset to nothing before every checkpoint and before the end (where fast-import writes its
    branches), so nothing but objects is left behind, and no ref ever names an object of the
    scratch store, which a killed command leaves to be dropped (`git gc`, `git fsck` and `git
    log --all` stop at a ref to an object the repository does not have). Each commit names its
    parent (``from``), so the branch's own tip is never used. ``commit`` returns the new
    commit's id (asked with ``get-mark``)."""

    SCRATCH = "refs/patchstack/scratch"

    def __init__(self, git: Objects, throwaway: bool = False) -> None:
        """``throwaway``: the pack goes to the scratch store, if any (`git.scratch`)."""
        self.null = git.fmt.null
        self.hexsz = git.fmt.hexsz
        # In the scratch store a checkpoint's pack stays a pack: under fastimport.unpackLimit
        # (100 objects) fast-import would start unpack-objects to make them loose objects, one
        # process per checkpoint, and publishing packs the store whole anyway.
        packed = ["-c", "fastimport.unpackLimit=0"] if throwaway and git.scratch else []
        self.proc = git.spawn(
            [*packed, "fast-import", "--quiet", "--force", "--done", "--cat-blob-fd=1"],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            throwaway=throwaway,
        )
        self.mark = 0
        self.closed = False
        self.marks: dict[str, int] = {}  # commits of this stream: `from <id>` cannot see them

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
        except BrokenPipeError:
            self._fail()

    def _fail(self) -> NoReturn:
        self.closed = True
        err = b""
        if self.proc.stderr is not None:
            self.proc.kill()
            err = self.proc.stderr.read()
        self.proc.wait()
        raise failure(["fast-import"], self.proc.returncode or 1, err)

    def blob(self, data: bytes) -> str:
        self.mark += 1
        self._write(b"blob\nmark :%d\ndata %d\n%s\n" % (self.mark, len(data), data))
        return f":{self.mark}"

    def commit(
        self,
        parent: str,
        author: str,
        raw_date: str,
        message: bytes,
        changes: Sequence[Change],
        named: bool = True,
    ) -> Oid:
        """``changes``: (mode, blob id or mark, path) to set, ("D", path) to delete; a tree
        for the path "" sets the whole tree. An empty ``parent`` makes a root commit.

        ``named=False``: the commit is returned as its mark (":<n>"), which this stream takes
        wherever it takes a commit, and `ids` names later, many at once: no round trip per
        commit (fast-import builds it while the caller goes on)."""
        self.mark += 1
        if parent in self.marks:
            parent = f":{self.marks[parent]}"
        who = f"{author} {raw_date}".encode("utf-8", "surrogateescape")
        scratch = self.SCRATCH.encode()
        out = [b"reset %s\n\n" % scratch] if not parent else []
        out.append(
            b"commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s\n"
            % (scratch, self.mark, who, who, len(message), message)
        )
        if parent:
            out.append(b"from %s\n" % parent.encode())
        for change in changes:
            if change[0] == "D":
                out.append(b"D " + quote_path(change[1]) + b"\n")
            else:
                mode, ref, path = change  # type: ignore[misc]
                out.append(f"M {mode} {ref} ".encode() + (quote_path(path) or b'""') + b"\n")
        out.append(b"\n")
        if not named:
            self._write(b"".join(out))
            return Oid(f":{self.mark}")
        out.append(b"get-mark :%d\n" % self.mark)
        line = self._answer(b"".join(out)).decode()
        if len(line) != self.hexsz:
            self._fail()
        self.marks[line] = self.mark
        return Oid(line)

    def ids(self, commits: Sequence[str]) -> list[Oid]:
        """Commits named by their ids: the marks of this stream asked together (in chunks
        whose answers fit a pipe's buffer), the others as they are."""
        marks = list(dict.fromkeys(c for c in commits if c.startswith(":")))
        known: dict[str, Oid] = {}
        for at in range(0, len(marks), 256):
            chunk = marks[at : at + 256]
            self._write(b"".join(b"get-mark %s\n" % m.encode() for m in chunk))
            for m in chunk:
                line = self._answer(b"").decode()
                if len(line) != self.hexsz:
                    self._fail()
                known[m] = Oid(line)
                self.marks[line] = int(m[1:])
        return [known.get(c, Oid(c)) for c in commits]

    def _answer(self, request: bytes) -> bytes:
        """Send ``request`` and read the one line fast-import answers on its cat-blob stream."""
        self._write(request)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail()
        line = self.proc.stdout.readline()
        if not line.endswith(b"\n"):
            self._fail()
        return line[:-1]

    def tree_of(self, commit: str) -> Oid:
        """The tree of a commit of this stream (or any commit), as fast-import knows it."""
        ref = f":{self.marks[commit]}" if commit in self.marks else commit
        answer = self._answer(b'ls %s ""\n' % ref.encode())
        words = answer.split(b"\t", 1)[0].split(b" ")
        if len(words) != 3 or words[1] != b"tree":
            raise GitFailure(f"git fast-import: no tree for {commit}: {answer!r}")
        return Oid(words[2].decode())

    def checkpoint(self) -> None:
        """Make every object of the stream so far visible to other git processes (fast-import
        finishes its pack; the answer to the ``get-mark`` after it says it is done)."""
        if self.mark:
            self._answer(b"%scheckpoint\nget-mark :%d\n" % (self._unset(), self.mark))
            lock.point("stream-checkpoint")

    def _unset(self) -> bytes:
        """The scratch branch reset to nothing: the checkpoint or end after it deletes the
        ref (were one left by an older version) instead of writing it."""
        return f"reset {self.SCRATCH}\nfrom {self.null}\n\n".encode()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(self._unset() + b"done\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.stdout.close()
        err = self.proc.stderr.read() if self.proc.stderr is not None else b""
        if self.proc.wait() != 0:
            raise failure(["fast-import"], self.proc.returncode, err)
