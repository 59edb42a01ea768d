"""Many blobs read in the background: a ``cat-file --batch`` of its own, its names written to
a file first (git never waits for the next ones) and its answers read in chunks of up to a
MiB (a pipe made as large where the system allows), so that another thread can read and
hash thousands of files while the command's own processes merge (`engine.lineindex`'s
prefetch). Nothing but this stream is used by its reader: the persistent batch processes
stay the command thread's."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO

from ..errors import GitFailure
from .base import GitBase, encode_path
from .objects import batch_header
from .process import spawn

_CHUNK = 1 << 20
_F_SETPIPE_SZ = 1031  # (Linux; elsewhere the pipe keeps its size)


class BlobStream:
    """The answers of a started `start_blob_stream`, in the order of its names: (size,
    content) of each, or None for a missing one. ``kill`` ends git wherever it is (a stream
    nobody finishes is killed with the command's processes, `GitBase.close`)."""

    def __init__(self, names: Sequence[str], proc: subprocess.Popen[bytes], errors: IO[bytes]):
        self.names, self._proc, self._errors = list(names), proc, errors

    def __iter__(self) -> Iterator[tuple[int, bytes] | None]:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf, at = b"", 0
        for _name in self.names:
            nl = buf.find(b"\n", at)
            while nl < 0:
                buf, at = buf[at:] + self._more(fd), 0
                nl = buf.find(b"\n", at)
            found = batch_header(buf[at:nl])
            if found is None:
                at = nl + 1
                yield None
                continue
            size = found[1]
            end = nl + 1 + size
            if len(buf) < end + 1:  # the rest of this blob: chunks joined once
                parts, have = [buf[at:]], len(buf) - at
                while have < end + 1 - at:
                    parts.append(self._more(fd))
                    have += len(parts[-1])
                buf, nl, end, at = b"".join(parts), nl - at, end - at, 0
            yield size, buf[nl + 1 : end]
            at = end + 1
        self.close()

    def _more(self, fd: int) -> bytes:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            code = self._proc.wait()
            self._errors.seek(0)
            said = self._errors.read()[-2000:].decode("utf-8", "replace").strip()
            raise GitFailure(f"git cat-file --batch ended early ({code}): {said}")
        return chunk

    def kill(self) -> None:
        """End git wherever it is (from any thread: its reader meets the end and closes)."""
        if self._proc.poll() is None:
            self._proc.kill()

    def close(self) -> None:
        """End git (killed if it runs still) and its files, in the reader's thread; idempotent."""
        self.kill()
        self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._errors.close()


def start_blob_stream(git: GitBase, names: Sequence[str]) -> BlobStream:
    """A `BlobStream` of ``names`` (ids) in ``git``'s repository, started now: read it in any
    one thread. (A function, not a part of `Git`: only a refresh that may follow code asks.)"""
    with tempfile.TemporaryFile() as listed:
        listed.write(b"".join(encode_path(n) + b"\n" for n in names))
        listed.seek(0)
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the stream's end)
        proc = spawn(["cat-file", "--batch"], git.top, stdin=listed, stderr=errors)
    assert proc.stdout is not None
    with contextlib.suppress(OSError):
        fcntl.fcntl(proc.stdout.fileno(), _F_SETPIPE_SZ, _CHUNK)
    git._background.append(proc)  # (killed by `close` if the command ends first)
    return BlobStream(names, proc, errors)
