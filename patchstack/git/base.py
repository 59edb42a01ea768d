"""What every part of the git boundary shares: the repository's places, its object format,
running git there, and answers memoized for the length of one command."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Container, Mapping, Sequence
from typing import IO, Any

from ..model.ids import ObjectFormat, Oid
from . import scratch
from .process import DROPPED, failure, pinned, run_git, spawn


def under_any(path: str, asked: Container[str]) -> bool:
    """Whether a literal pathspec of ``asked`` matches ``path``: it is one of them, or lies in
    a folder that is (what callers that filter a walk here instead of giving git a long
    pathspec keep)."""
    while True:
        if path in asked:
            return True
        path, sep, _ = path.rpartition("/")
        if not sep:
            return False


def decode_path(raw: bytes) -> str:
    """A path as git printed it (bytes, with ``-z``) as patchstack's one decoding of paths:
    UTF-8 with surrogate escapes, so that any bytes survive the round trip."""
    return raw.decode("utf-8", "surrogateescape")


def encode_path(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _config_key(key: str) -> str:
    """A key as ``config --list`` prints it: the section and the variable's name in lower case,
    a subsection as it is (``Branch.Main.Remote`` -> ``branch.Main.remote``)."""
    section, _, rest = key.partition(".")
    sub, dot, name = rest.rpartition(".")
    return f"{section.lower()}.{sub}{dot}{name.lower()}"


EARLY_LISTING = "inputs-listing"  # `attributes.start_listing`'s memo: forgotten by a publish

# The pack the kept scratch objects become: no delta search, and zlib level 1 (the loose
# objects are inflated and deflated again: at git's default level 6 that was 1.0 of a real
# 46-patch refresh's 9.3 CPU s), a somewhat larger pack that `git gc` keeps as it is
# (``repack -F`` compresses it again).
PACK_KEPT = ("-c", "pack.compression=1", "pack-objects", "--quiet", "--window=0")


class GitBase:
    """A repository: its work tree top, git directories and object format."""

    def __init__(self, top: str, git_dir: str, common_dir: str, fmt: ObjectFormat) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.fmt = fmt
        # Answers that cannot change while one command holds the repository lock.
        self._memo: dict[Any, Any] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self.scratch: str | None = None  # the scratch object directory in use (`git.scratch`)
        # While a publish holds git's index lock: the index every git process reads and writes
        # (`worktree.HeldIndex`), which becomes the real one when the publish commits.
        self.index_file: str | None = None
        self.scratch_full: str | None = None  # the stores' folder, when full as one was dropped
        self._spawned: list[subprocess.Popen[bytes]] = []  # ended by `close` at the latest
        self._background: list[subprocess.Popen[bytes]] = []  # readers, killed by `close`
        self.found_from: str | None = None  # the folder `find_repo` started from
        self._busy: set[str] = set()  # batch processes in the middle of a caller's answers

    def __repr__(self) -> str:
        return f"Git({self.top!r})"

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        throwaway: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        """``throwaway``: the objects the command writes go to the scratch store, if any."""
        return run_git(
            args, cwd=self.top, input=input, env=self._objects_env(env, throwaway), check=check
        )

    def out(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        return self.run(*args, input=input, env=env).stdout.decode("utf-8", "surrogateescape")

    def oid(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> Oid:
        """The one object id a git command prints."""
        return Oid(self.out(*args, input=input, env=env).strip())

    def config(self, key: str) -> str | None:
        """A configuration value as git reads it (``config --get``: the last value), or None;
        every key of one command is answered from one ``config --list`` (`config_list`)."""
        return self._config_values().get(_config_key(key))

    def config_list(self) -> bytes:
        """What ``git config -z --list`` prints here (read once per command; empty when git
        cannot read the configuration)."""
        if "config-list" not in self._memo:
            self._memo["config-pinned"] = pinned()
            self._memo["config-list"] = self.run("config", "-z", "--list", check=False).stdout
            self._memo.pop("config-values", None)
        listed: bytes = self._memo["config-list"]
        return listed

    def _config_values(self) -> dict[str, str]:
        if "config-values" not in self._memo:
            values: dict[str, str] = {}
            for entry in self.config_list().split(b"\0"):
                if entry:
                    key, _nl, value = entry.partition(b"\n")
                    values[_config_key(key.decode("utf-8", "surrogateescape"))] = value.decode(
                        "utf-8", "surrogateescape"
                    ).strip()
            self._memo["config-values"] = values
        found: dict[str, str] = self._memo["config-values"]
        return found

    def user_config(self) -> list[tuple[str, str | None]] | None:
        """What the user's own ``git config -z --list`` prints in the current folder, from this
        command's one reading (`config_list`): (key as `_config_key` writes it, value; None for
        a key given without ``=``), without the entries every git process is pinned
        (`process.pinned`, listed after the caller's own ``GIT_CONFIG_COUNT`` entries and
        before ``git -c``'s). None where that reading is not the user's configuration here:
        the repository was found from another folder, the caller names one (``GIT_DIR``),
        git could not read it, or the pinned entries are not where git lists them."""
        here = os.path.realpath(os.getcwd())
        if self.found_from is None or os.path.realpath(self.found_from) != here:
            return None
        if any(k in os.environ for k in DROPPED):
            return None
        listed = self.config_list()
        entries: list[tuple[str, str | None]] = []
        for entry in listed.split(b"\0")[:-1]:
            key, nl, value = entry.decode("utf-8", "surrogateescape").partition("\n")
            entries.append((_config_key(key), value if nl else None))
        block = [(_config_key(k), v) for k, v in self._memo["config-pinned"]]
        for at in range(len(entries) - len(block), -1, -1):  # the last such run of entries
            if entries[at : at + len(block)] == block:
                return entries[:at] + entries[at + len(block) :]
        return None

    def local_config(self, key: str) -> str | None:
        """The value of ``key`` in the repository's own configuration file, or None."""
        proc = self.run("config", "--local", "--get", key, check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")

    def set_local_config(self, key: str, value: str) -> None:
        """Set ``key`` in the repository's own configuration file."""
        self.run("config", "--local", key, value)
        self._memo.pop("config-list", None)
        self._memo.pop("config-values", None)

    def spawn(
        self,
        args: Sequence[str],
        stdin: int | IO[bytes] | None = None,
        stderr: int | IO[bytes] | None = None,
        env: Mapping[str, str] | None = None,
        throwaway: bool = False,
        prefix: Sequence[str] = (),
    ) -> subprocess.Popen[bytes]:
        env = self._objects_env(env, throwaway)
        proc = spawn(args, self.top, stdin=stdin, stderr=stderr, env=env, prefix=prefix)
        self._spawned = [p for p in self._spawned if p.poll() is None] + [proc]
        return proc

    @property
    def index_path(self) -> str:
        """The index git processes of this command read: the real one, or the one a publish
        holding the index lock works in."""
        return self.index_file or os.path.join(self.git_dir, "index")

    def start(self, args: Sequence[str]) -> Callable[[], bytes]:
        """Git started now, its output read when called (once): it walks while the caller
        works, writing to a file of its own (it never waits for a reader); one nobody asks
        for is killed by `close`."""
        out, errors = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115
        env = self._objects_env(None, False)
        proc = spawn(args, self.top, stdin=subprocess.DEVNULL, stderr=errors, env=env, stdout=out)
        self._background.append(proc)

        def answer() -> bytes:
            try:
                code = proc.wait()
                if code != 0:
                    errors.seek(0)
                    raise failure(args, code, errors.read())
                out.seek(0)
                return out.read()
            finally:
                out.close()
                errors.close()
                if proc in self._background:
                    self._background.remove(proc)

        return answer

    def _objects_env(
        self, env: Mapping[str, str] | None, throwaway: bool
    ) -> Mapping[str, str] | None:
        """With a scratch store, every process reads it as an alternate; the ``throwaway`` ones
        write into it, reading the repository's objects as their alternate. While the index
        lock is held, a process that names no index of its own works in the held one."""
        if self.index_file is not None and not (env and "GIT_INDEX_FILE" in env):
            env = {**(env or {}), "GIT_INDEX_FILE": self.index_file}
        if self.scratch is None:
            return env
        theirs = os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        real = os.path.join(self.common_dir, "objects")
        first = real if throwaway else self.scratch
        alternates = os.pathsep.join([scratch.alternate(first), *([theirs] if theirs else [])])
        extra = {**(env or {}), "GIT_ALTERNATE_OBJECT_DIRECTORIES": alternates}
        if throwaway:
            extra["GIT_OBJECT_DIRECTORY"] = self.scratch
        return extra

    def use_scratch(self) -> None:
        """From now on, throwaway objects go to a scratch store (see `git.scratch`), where
        there is one; the batch processes already running are restarted to read it."""
        if self.scratch is None:
            self.scratch = scratch.make()
            if self.scratch is not None:
                self._stop_processes()

    def keep_scratch(self) -> None:
        """Move every object of the scratch store into the repository (one new pack), before
        anything can point at them; then drop the store."""
        path = self.scratch
        if path is None:
            return
        self._stop_processes()
        ids = scratch.loose_objects(path) + scratch.packed_objects(path, self.fmt.hexsz // 2)
        if ids:
            data = "".join(f"{oid}\n" for oid in dict.fromkeys(ids)).encode()
            pack = os.path.join(self.common_dir, "objects", "pack", "pack")
            # No delta search (--window=0): a third of the time for half again the size
            # (Megatron-LM refresh: 7,170 objects, 0.27 s and 3.8 MB instead of 0.41 s and
            # 2.1 MB); the stream's own deltas are kept, and git gc repacks them all anyway.
            self.run(*PACK_KEPT, pack, input=data)
        self.drop_scratch()

    def keep_reachable(self, roots: Sequence[str], known: Sequence[str] = ()) -> None:
        """Move into the repository only the objects of the scratch store that ``roots``
        (trees or commits) reach and the commits ``known`` do not, in one pack; then drop the
        store. A long replay leaves mostly throwaway objects (every merge's, every
        checkpoint's pack): packing them all costs more than the replay's own merges."""
        path = self.scratch
        if path is None:
            return
        self._stop_processes()
        held = set(scratch.loose_objects(path) + scratch.packed_objects(path, self.fmt.hexsz // 2))
        lines = "".join(f"{r}\n" for r in roots) + "".join(f"^{k}\n" for k in known)
        out = self.run("rev-list", "--objects", "--stdin", input=lines.encode()).stdout
        found = (line.split(b" ", 1)[0].decode() for line in out.splitlines())
        wanted = [oid for oid in dict.fromkeys(found) if oid in held]
        if wanted:
            pack = os.path.join(self.common_dir, "objects", "pack", "pack")
            data = "".join(f"{oid}\n" for oid in wanted).encode()
            self.run(*PACK_KEPT, pack, input=data)
        self.drop_scratch()

    def drop_scratch(self) -> None:
        """Forget the scratch store and what is in it (nothing may point at it): the
        throwaway commits remembered for the merges (`Merges.synthetic_pair`) too."""
        path, self.scratch = self.scratch, None
        if path is not None:
            self._stop_processes()
            if scratch.nearly_full():
                self.scratch_full = scratch.PARENT
            shutil.rmtree(path, ignore_errors=True)
            self.forget("synthetic")
            self.forget("edited")  # (`Trees._edit`'s trees made in that store)
            self.forget("merge-process")

    def persistent(self, key: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        """A batch process kept for the whole command (closed by `close`). What it says on its
        standard error is kept in a file, not shown (its answers say what it could not read,
        as ``rev-parse --quiet`` shows nothing), and told when it ends (`ended`)."""
        proc = self._procs.get(key)
        if proc is None or proc.poll() is not None:
            errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
            proc = self.spawn(args, stdin=subprocess.PIPE, stderr=errors)
            self._procs[key] = proc
            self._memo[("persistent-errors", key)] = errors
        return proc

    def ended(self, key: str) -> str:
        """A persistent process that ended unexpectedly: forgotten (the next question starts
        another), and what it said last."""
        proc = self._procs.pop(key, None)
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            proc.wait()
        errors = self._memo.pop(("persistent-errors", key), None)
        if errors is None:
            return ""
        errors.seek(0)
        said: str = errors.read()[-2000:].decode("utf-8", "replace").strip()
        errors.close()
        return said

    def abandon(self, key: str) -> None:
        """A persistent process whose answers can no longer be read in step (an interrupt in
        the middle of one): killed and forgotten, the next question starts another."""
        proc = self._procs.pop(key, None)
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        errors = self._memo.pop(("persistent-errors", key), None)
        if errors is not None:
            errors.close()

    def close(self) -> None:
        self._stop_processes()
        self._end_spawned()
        for proc in self._background:  # read-only walks nobody took: not waited for
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self._background.clear()
        self.drop_scratch()

    def _end_spawned(self) -> None:
        """Streams a failure left open (a fast-import cut short): their input is closed, so
        they end, and with them their hold on the repository lock."""
        for proc in self._spawned:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    if proc.stdin is not None:
                        proc.stdin.close()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._spawned.clear()

    def _stop_processes(self) -> None:
        for key, proc in self._procs.items():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            errors = self._memo.pop(("persistent-errors", key), None)
            if errors is not None:
                errors.close()
        self._procs.clear()

    def forget(self, kind: str) -> None:
        """Drop memoized answers of one kind (after the command itself changed them)."""
        for key in [k for k in self._memo if isinstance(k, tuple) and k[0] == kind]:
            del self._memo[key]
