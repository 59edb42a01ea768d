"""Which upstream commit deleted a file, or took a line out of it: history walks that end
at the first answer (relocate names these commits)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

from ..model.ids import Oid
from .base import decode_path
from .process import failure, spawn
from .trees import Trees

_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
NO_WALK_DRAIN = "PATCHSTACK_NO_WALK_DRAIN"  # set: a deletion walk's answers read when asked
PATHSPEC_MAX = 16  # paths git is given as a pathspec; beyond, git walks all and they are filtered


class Deletions(Trees):
    def deleted_by(self, rng: str, path: str) -> Oid | None:
        """The newest first-parent commit of ``rng`` that deleted ``path`` (a merge against
        its first parent), or None."""
        args = ["log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "-1"]
        args += ["-s", "--diff-filter=D", "--format=%H", "--end-of-options", rng, "--", path]
        out = self.out(*args).strip()
        return Oid(out) if out else None

    def deleted_by_each(self, rng: str, paths: Sequence[str]) -> dict[str, Oid | None]:
        """`deleted_by` of each of ``paths`` in one walk: the newest first-parent commit of
        ``rng`` whose deletions (against its first parent) the path, as a pathspec, matches
        (the path, or a file under it), or None. git answers commit by commit (``GIT_FLUSH``)
        and is stopped once each path has its commit, as ``-1`` stops the walk of one."""
        return self.start_deleted_by_each(rng, paths)()

    def start_deleted_by_each(self, rng: str, paths: Sequence[str]) -> DeletionWalk:
        """`deleted_by_each`, its walk started now and its answer read when asked: git walks
        while the caller works; a caller that will not ask closes it (`DeletionWalk.close`),
        and a walk nobody asked or closed is killed by `close` at the latest."""
        if not paths:
            return DeletionWalk(paths)
        args = ["log", "--first-parent", "--diff-merges=first-parent", "--no-renames"]
        args += ["--name-only", "-z", "--diff-filter=D", "--format=%x01%H", "--end-of-options"]
        args += [rng, *(["--", *paths] if len(paths) <= PATHSPEC_MAX else [])]
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the walk's end)
        env = self._objects_env({"GIT_FLUSH": "1"}, False)
        proc = spawn(args, self.top, stderr=errors, env=env)
        self._background.append(proc)  # (not `spawn`'s: nobody waits for a walk not asked)
        return DeletionWalk(paths, (proc, errors, args, self._background))

    def removed_by(self, rng: str, path: str, text: str) -> Oid | None:
        """The newest first-parent commit of ``rng`` that changed how often ``path`` holds
        ``text`` (``log -S``, literal; a merge against its first parent), or None."""
        return self.start_removed_by(rng, path, text)()

    def start_removed_by(self, rng: str, path: str, text: str) -> Callable[[], Oid | None]:
        """`removed_by`, its walk started now (`start`: git walks while the caller works, or
        beside the other walks), answered when called; one nobody asks is killed by
        `close`."""
        args = ["log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "-1"]
        args += ["-s", f"-S{text}", "--format=%H", "--end-of-options", rng, "--", path]
        answer = self.start(args)

        def found() -> Oid | None:
            out = answer().decode("utf-8", "surrogateescape").strip()
            return Oid(out) if out else None

        return found


class DeletionWalk:
    """A started `Deletions.start_deleted_by_each`: called, its answer; closed, git stopped
    where it is and its process ended (the answer is not asked then).

    A thread reads git's answers as git writes them (`_read`, which stops reading once each
    path has its commit): a walk left to its pipe would stop at the pipe's 64 KiB and wait for
    the stop to ask, and the stop would wait for the rest of the walk then (kernel-timers'
    first stop: 179 KB of answers, 0.3-0.8 s waited). ``PATCHSTACK_NO_WALK_DRAIN=1`` reads
    them when asked."""

    def __init__(
        self,
        paths: Sequence[str],
        walk: tuple[subprocess.Popen[bytes], IO[bytes], list[str], list[Any]] | None = None,
    ) -> None:
        self.paths = list(paths)
        self._walk = walk
        self._found: dict[str, Oid | None] | None = None if walk else dict.fromkeys(paths)
        self._drained: tuple[dict[str, Oid | None] | None, BaseException | None] = (None, None)
        self._thread: threading.Thread | None = None
        if walk is not None and os.environ.get(NO_WALK_DRAIN) != "1":
            self._thread = threading.Thread(target=self._drain, name="patchstack-deletions")
            self._thread.daemon = True
            self._thread.start()

    def _drain(self) -> None:
        assert self._walk is not None
        proc, errors, args, _owner = self._walk
        try:
            self._drained = (_read(proc, errors, args, self.paths), None)
        except BaseException as e:  # (raised to the caller that asks: `__call__`)
            self._drained = (None, e)

    def __call__(self) -> dict[str, Oid | None]:
        if self._found is None:
            assert self._walk is not None
            proc, errors, args, _owner = self._walk
            try:
                if self._thread is None:
                    self._found = _read(proc, errors, args, self.paths)
                else:
                    self._thread.join()
                    found, error = self._drained
                    if error is not None:
                        raise error
                    assert found is not None
                    self._found = found
            finally:
                self.close()
        return dict(self._found)

    def close(self) -> None:
        """End the walk (killed if it runs still) and its files; idempotent."""
        if self._walk is None:
            return
        proc, errors, _args, owner = self._walk
        self._walk = None
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if self._thread is not None:
            self._thread.join()  # (it reads to the end of git's output: git has ended)
        if proc.stdout is not None:
            proc.stdout.close()
        errors.close()
        if proc in owner:
            owner.remove(proc)


def _read(
    proc: subprocess.Popen[bytes], errors: IO[bytes], args: list[str], paths: Sequence[str]
) -> dict[str, Oid | None]:
    """What the walk names for each path, read as git answers commit by commit; git is
    stopped (by the caller's close) once each path has its commit."""
    assert proc.stdout is not None
    found: dict[str, Oid | None] = dict.fromkeys(paths)
    left, commit, first, pending = set(paths), None, False, b""
    while left:
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        *done, pending = (pending + chunk).split(b"\0")
        for raw in done:
            if raw[:1] == b"\x01" and _HEX.fullmatch(raw[1:]):  # deletions follow
                commit, first = Oid(raw[1:].decode()), True
                continue
            name = decode_path(raw[1:] if first and raw[:1] == b"\n" else raw)
            first = False
            for p in [p for p in left if name == p or name.startswith(p + "/")]:
                if commit is not None and name:
                    found[p] = commit
                    left.discard(p)
    if left:  # read to its end: it must have ended well
        code = proc.wait()
        if code != 0:
            errors.seek(0)
            raise failure(["log", *args[1:]], code, errors.read())
    return found
