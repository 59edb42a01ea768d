"""Three-way merges of trees in the object database (``merge-tree --write-tree``, merge-ort):
no index, no work tree.

Every merge of a command goes through one ``merge-tree --stdin`` process where git can
answer one question at a time: a process start (2-3 ms) and the reading of the same blobs
through long delta chains (a few ms, which the one process keeps cached) saved per merge.

- From git 2.49 each question is ``<base tree> -- <ours tree> <theirs tree>`` (trees are
  accepted from 2.45; 2.49 is the first to flush each answer whole).
- Before (2.39-2.48, Debian 12's 2.39 among them) ``--stdin`` takes two commits and leaves the
  NUL that ends an answer in its output buffer until the next one, so that a question and its
  answer would deadlock: the process runs under ``stdbuf -o0`` (coreutils), which unbuffers
  its standard output, and is asked about throwaway commits (below). A first question proves
  that answers come whole; where they do not (no ``stdbuf``, a git that ignores it), or on
  2.38, each merge is a process of its own, as ``PATCHSTACK_NO_MERGE_BATCH`` asks (the tests
  run both ways).

Without ``--merge-base``, two throwaway commits sharing a parent whose tree is the wanted base
make git find exactly that merge base. They are written as loose objects (`throwaway_commit`),
in a graph of their own: no process, and no history to walk.

Either way the ids git merged label the conflict markers inside merged files;
`MergeResult.sides` maps them to the caller's labels, and putting readable labels into the
markers is the caller's business (see `engine.merging`).
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from ..errors import GitFailure
from ..model.ids import Oid
from .base import decode_path
from .fastimport import FastImport
from .objects import Objects
from .process import failure, version

# Who and when of the throwaway commits.
SYNTHETIC = ("patchstack <patchstack@invalid>", "1000000000 +0000")


@dataclass(frozen=True)
class MergeResult:
    tree: Oid
    clean: bool
    conflicted: tuple[str, ...]  # paths
    messages: str  # git's informational messages, one a line
    sides: tuple[tuple[str, str], ...] = ()  # (commit id in the markers, the caller's label)


# The gits that answer merges in one process (see the module docstring): of trees, flushing
# each answer; of commits, under ``stdbuf -o0``.
BATCH_VERSION = (2, 49)
COMMIT_BATCH_VERSION = (2, 39)
PROBE_SECONDS = 10.0  # the first answer's wait, before a git that buffers is given up

# What every merge runs with: diff3 markers (the conflict report reads the base side) and
# renames followed whatever the user configured.
MERGE_ARGS = (
    "-c",
    "merge.conflictStyle=diff3",
    "-c",
    "merge.renames=true",
    "merge-tree",
    "--write-tree",
    "--messages",
    "--name-only",
    "-z",
)


class Merges(Objects):
    def merge_trees(
        self, base: str, ours: str, theirs: str, labels: tuple[str, str]
    ) -> MergeResult:
        """Merge ``base -> theirs`` into ``ours`` (trees git can read); ``labels`` name ours
        and theirs."""
        if self.batch_merges():
            return self._batch_merge(base, ours, theirs, labels)
        b, t = self.synthetic_pair(base, theirs, labels[1])
        o = self.throwaway_commit(ours, b, labels[0])
        return self.merge_commits(o, t, labels)

    def merge_file(self, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, bool]:
        """``git merge-file`` of three texts: (the merged text, clean)."""
        with tempfile.TemporaryDirectory(prefix="patchstack-merge-file-") as room:
            names = []
            for side, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                names.append(os.path.join(room, side))
                with open(names[-1], "wb") as f:
                    f.write(data)
            proc = self.run("merge-file", "-p", "--diff3", "--", *names, check=False)
        if proc.returncode < 0 or proc.returncode > 127:
            raise failure(["merge-file"], proc.returncode, proc.stderr)
        return proc.stdout, proc.returncode == 0

    def merge_mode(self) -> str:
        """How merges are asked: ``trees`` (one process, git >= 2.49), ``commits`` (one process
        under ``stdbuf -o0``, 2.39-2.48) or ``each`` (a process per merge)."""
        key = ("merge-mode",)
        if key not in self._memo:
            found = version()[0]
            if os.environ.get("PATCHSTACK_NO_MERGE_BATCH") is not None:
                self._memo[key] = "each"
            elif found >= BATCH_VERSION:
                self._memo[key] = "trees"
            elif found >= COMMIT_BATCH_VERSION and shutil.which("stdbuf"):
                self._memo[key] = "commits"
            else:
                self._memo[key] = "each"
        return str(self._memo[key])

    def prepare_merges(self, sides: Sequence[tuple[str, str, str]]) -> None:
        """Make the throwaway base and "theirs" commits of future `merge_trees` calls,
        (base tree, theirs tree, theirs label) each (written loose: no process)."""
        for base, theirs, label in sides:
            self.synthetic_pair(base, theirs, label)

    def merge_commits(self, ours: str, theirs: str, labels: tuple[str, str]) -> MergeResult:
        """merge-tree of two commits whose one merge base has the wanted base tree (the
        caller made sure); ``labels`` name ours and theirs."""
        if self.merge_mode() == "commits":
            answer = self._merge_process()
            if answer is not None:
                return self._ask(answer, f"{ours} {theirs}\n", (ours, theirs), labels)
        proc = self.run(*MERGE_ARGS, ours, theirs, check=False, throwaway=True)
        if proc.returncode not in (0, 1):
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise GitFailure(f"git merge-tree failed: {err}")
        tree, conflicted, messages = parse_merge_tree(proc.stdout)
        return MergeResult(
            tree,
            proc.returncode == 0,
            conflicted,
            messages,
            ((ours, labels[0]), (theirs, labels[1])),
        )

    def batch_merges(self) -> bool:
        """Whether trees are merged as they are, through one ``merge-tree --stdin`` (git >=
        2.49); before, a merge is asked of commits (`merge_commits`)."""
        return self.merge_mode() == "trees"

    def _batch_merge(
        self, base: str, ours: str, theirs: str, labels: tuple[str, str]
    ) -> MergeResult:
        answer = self._merge_process()
        assert answer is not None  # a git that flushes answers needs no proof
        return self._ask(answer, f"{base} -- {ours} {theirs}\n", (base, ours, theirs), labels)

    def _ask(
        self, answer: _Answers, question: str, names: tuple[str, ...], labels: tuple[str, str]
    ) -> MergeResult:
        ours, theirs = names[-2:]
        if any(not n or any(c.isspace() for c in n) for n in names):
            raise GitFailure(f"not an object name for git merge-tree --stdin: {names!r}")
        try:
            answer.ask(question.encode())
            clean = answer.field()
            tree = Oid(answer.field().decode())
            conflicted: list[str] = []
            while field := answer.field():
                conflicted.append(decode_path(field))
            messages: list[str] = []
            # Records of <n> NUL <n paths> <type> NUL <message> NUL, then an empty field.
            # (Text about conflicted submodules, printed without NULs, comes last in a field
            # of its own.)
            while (field := answer.field()).isdigit():
                for _ in range(int(field) + 1):
                    answer.field()
                messages.append(answer.field().decode("utf-8", "surrogateescape").rstrip("\n"))
        except BaseException:
            answer.stop()  # an answer read halfway would be taken for the next one's
            raise
        if clean not in (b"0", b"1"):
            raise GitFailure(f"git merge-tree --stdin answered {clean!r}")
        return MergeResult(
            tree,
            clean == b"1",
            tuple(dict.fromkeys(conflicted)),
            "\n".join(messages),
            ((ours, labels[0]), (theirs, labels[1])),
        )

    def _merge_process(self) -> _Answers | None:
        """The one ``merge-tree --stdin`` process (started again after it stopped); None
        where a git asked of commits did not prove it answers whole: then merges go one
        process each for the rest of the command."""
        answers: _Answers | None = self._memo.get(("merge-process",))
        if answers is None or answers.proc.poll() is not None:
            if self._memo.get(("merge-unproven",)):
                return None
            commits = self.merge_mode() == "commits"
            errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
            proc = self.spawn(
                [*MERGE_ARGS, "--stdin"],
                stdin=subprocess.PIPE,
                stderr=errors,
                throwaway=True,
                prefix=[shutil.which("stdbuf") or "stdbuf", "-o0"] if commits else (),
            )
            self._procs["merge-tree"] = proc  # closed with the others
            answers = _Answers(proc, errors)
            if commits and not self._answers_whole(answers):
                answers.stop()
                self._memo[("merge-unproven",)] = True
                return None
            self._memo[("merge-process",)] = answers
        return answers

    def _answers_whole(self, answers: _Answers) -> bool:
        """Ask a first merge (a commit with itself) and see that its answer comes whole,
        its last NUL included, without another question: under ``stdbuf -o0`` it does."""
        root = self.throwaway_commit(self.fmt.empty_tree, None, "probe")
        try:
            answers.ask(f"{root} {root}\n".encode())
            fields = [answers.field(PROBE_SECONDS) for _ in range(4)]
        except (GitFailure, TimeoutError):
            return False
        return fields[0] == b"1" and fields[2:] == [b"", b""]

    def throwaway_commit(self, tree: str, parent: str | None, label: str) -> Oid:
        """A commit of ``tree`` (on ``parent``, or a root) that nothing will reference, made
        only for merge-tree to find the merge base wanted: written as a loose object, with no
        process. (A repository that keeps a second object format, which would want the
        object's other id recorded too, gets it from ``commit-tree``.)"""
        ident, date = SYNTHETIC
        if self.compat_format():
            return self.commit_tree(tree, [parent] if parent else [], label + "\n", ident, date)
        who = f"{ident} {date}".encode()
        data = b"tree %s\n%sauthor %s\ncommitter %s\n\n%s\n" % (
            tree.encode(),
            b"parent %s\n" % parent.encode() if parent else b"",
            who,
            who,
            label.encode("utf-8", "surrogateescape"),
        )
        return self.write_loose("commit", data)

    def stream_commit(self, stream: FastImport, tree: str, parent: str, label: str) -> Oid:
        """`throwaway_commit` made in an open fast-import stream (the one that made ``tree``,
        which no other process sees yet), checkpointed so that merge-tree sees it."""
        ident, date = SYNTHETIC
        message = label.encode("utf-8", "surrogateescape") + b"\n"
        commit = stream.commit(parent, ident, date, message, [("040000", tree, "")])
        stream.checkpoint()
        return commit

    def synthetic_pair(self, base: str, theirs: str, label: str) -> tuple[Oid, Oid]:
        """Throwaway commits of ``base`` and, on it, ``theirs`` (made once per command)."""
        b = self._memo.get(("synthetic", base)) or self.throwaway_commit(base, None, "base")
        self._memo[("synthetic", base)] = b
        t = self._memo.get(("synthetic", theirs, b, label)) or self.throwaway_commit(
            theirs, b, label
        )
        self._memo[("synthetic", theirs, b, label)] = t
        return Oid(b), Oid(t)


def parse_merge_tree(out: bytes) -> tuple[Oid, tuple[str, ...], str]:
    """(tree, conflicted paths, messages) of ``merge-tree --write-tree --messages --name-only
    -z`` output: ``<tree>NUL<path>NUL...NUL NUL`` then records of ``<n>NUL<path>NUL...<type>NUL
    <message>NUL``."""
    fields = out.split(b"\0")
    tree = Oid(fields[0].decode().strip())
    i = 1
    conflicted: list[str] = []
    while i < len(fields) and fields[i]:
        conflicted.append(decode_path(fields[i]))
        i += 1
    i += 1
    messages: list[str] = []
    while i < len(fields):
        if not fields[i].isdigit():
            i += 1
            continue
        n = int(fields[i])
        msg_at = i + 1 + n + 1
        if msg_at < len(fields):
            messages.append(fields[msg_at].decode("utf-8", "surrogateescape").rstrip("\n"))
        i = msg_at + 1
    return tree, tuple(dict.fromkeys(conflicted)), "\n".join(messages)


class _Answers:
    """The fields (NUL-terminated) a persistent ``merge-tree --stdin`` prints, read as they
    come; its error output goes to a file, read when it stops answering."""

    def __init__(self, proc: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        self.proc = proc
        self.errors = errors
        self.buffer = b""

    def ask(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._failure() from None

    def stop(self) -> None:
        """End the process (the next merge starts another)."""
        self.proc.kill()
        self.proc.wait()

    def field(self, timeout: float | None = None) -> bytes:
        """The next field; with ``timeout``, `TimeoutError` when none comes in that time."""
        assert self.proc.stdout is not None
        while (end := self.buffer.find(b"\0")) < 0:
            fd = self.proc.stdout.fileno()
            if timeout is not None and not select.select([fd], [], [], timeout)[0]:
                raise TimeoutError("merge-tree --stdin did not answer")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._failure()
            self.buffer += chunk
        field, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
        return field

    def _failure(self) -> GitFailure:
        self.proc.wait()
        self.errors.seek(0)
        return failure(["merge-tree", "--stdin"], self.proc.returncode, self.errors.read())
