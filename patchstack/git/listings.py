"""Listings: differences, the work tree's state and history, every one read with ``-z`` (paths
as bytes, decoded one way, see `base.decode_path`); trees are read in `trees`."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import PatchstackError
from ..lock import inherited_fds
from ..model.ids import Oid
from .base import decode_path
from .process import failure, sealed_env
from .trees import Trees

RawDiff = tuple[str, str, str, str, str]  # (old mode, new mode, old id, new id, path)


@dataclass(frozen=True)
class CommitRecord:
    oid: Oid
    tree: Oid
    parents: tuple[Oid, ...]
    message: str


@dataclass(frozen=True)
class CommitMeta:
    oid: Oid
    tree: Oid
    parents: tuple[Oid, ...]
    author: str  # "Name <email>"
    date: str  # "<epoch> <tz>"
    message: str


@dataclass(frozen=True)
class DirtyState:
    """Uncommitted state of the work tree relative to HEAD (series directory excluded)."""

    modified: tuple[str, ...]  # tracked paths whose index or work tree differs from HEAD
    untracked: tuple[str, ...]
    unmerged: tuple[str, ...]
    partly_staged: tuple[str, ...] = ()  # staged, then edited again: index != HEAD, work tree
    # submodules whose own files are edited or untracked while the commit they are at is the
    # one recorded: no patch can hold that (a patch holds only which commit a submodule is at)
    submodules: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.modified or self.untracked or self.unmerged or self.submodules)


class Listings(Trees):
    # -- differences -----------------------------------------------------------------------------

    def changed_paths(self, a: str, b: str) -> list[str]:
        """Paths that differ between two trees or commits."""
        out = self.run(
            "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--end-of-options", a, b
        ).stdout
        return [decode_path(p) for p in out.split(b"\0") if p]

    def raw_diffs(self, pairs: Sequence[tuple[str, str]]) -> list[list[RawDiff]]:
        """For each (old, new) pair of tree ids (not commits): [(old_mode, new_mode, old_id,
        new_id, path)], batched in one process."""
        if not pairs:
            return []
        stdin = "".join(f"{old} {new}\n" for old, new in pairs).encode()
        out = self.run(
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--no-renames",
            "--no-commit-id",
            "--full-index",
            input=stdin,
        ).stdout
        # For each input pair diff-tree echoes "<old> <new>\n", then NUL-separated raw records.
        result: list[list[RawDiff]] = []
        pos = 0
        while pos < len(out):
            if out[pos : pos + 1] == b":":
                meta_end = out.index(b"\0", pos)
                path_end = out.index(b"\0", meta_end + 1)
                om, nm, oo, no, _status = out[pos + 1 : meta_end].decode().split(" ")
                result[-1].append((om, nm, oo, no, decode_path(out[meta_end + 1 : path_end])))
                pos = path_end + 1
            else:
                pos = out.index(b"\n", pos) + 1
                result.append([])
        if len(result) != len(pairs):
            raise PatchstackError(f"git diff-tree answered {len(result)} of {len(pairs)} pairs")
        return result

    def diff_patch(self, a: str, b: str) -> bytes:
        """The full-index binary patch from tree ``a`` to ``b`` (no renames)."""
        return self.run(
            "diff-tree",
            "-p",
            "--no-renames",
            "--full-index",
            "--binary",
            "--no-ext-diff",
            "--no-color",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--end-of-options",
            a,
            b,
        ).stdout

    # -- the work tree ---------------------------------------------------------------------------

    def dirty(self, exclude: str | None = None, paths: Sequence[str] | None = None) -> DirtyState:
        """What is uncommitted; ``exclude`` is a folder (relative to top) to leave out.

        With ``paths``, only those are looked at (``status`` then refreshes only their stat
        information in the index, which is what a later ``read-tree -m -u`` of them needs).
        """
        if paths is not None and not paths:
            return DirtyState((), (), ())
        if paths is not None and sum(len(p) for p in paths) > 200_000:
            paths = None  # beyond what a command line holds comfortably: look at everything
        out = self.run(
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=none",
            "--",
            *(paths or ()),
        ).stdout
        modified, untracked, unmerged, partly, inside = [], [], [], [], []
        prefix = (exclude.rstrip("/") + "/") if exclude else None
        for rec in out.split(b"\0"):
            kind = rec[:2]
            if kind not in (b"1 ", b"u ", b"? "):
                continue  # (renames are off: no "2" records; ignored files are not asked)
            fields = rec.split(b" ", {b"1 ": 8, b"u ": 10, b"? ": 1}[kind])
            path = decode_path(fields[-1])
            if prefix and (path + "/").startswith(prefix):
                continue
            if kind == b"? ":
                untracked.append(path)
                continue
            xy, sub = fields[1].decode(), fields[2].decode()
            if kind == b"u ":
                unmerged.append(path)
            elif sub.startswith("S") and sub[1] != "C" and xy[0] == ".":
                inside.append(path)  # only the submodule's own files changed
            else:
                modified.append(path)
                if xy[0] != "." and xy[1] != ".":
                    partly.append(path)
        return DirtyState(
            tuple(modified), tuple(untracked), tuple(unmerged), tuple(partly), tuple(inside)
        )

    # -- history -------------------------------------------------------------------------------

    def iter_first_parent(self, head: str) -> Iterator[CommitRecord]:
        """First-parent history from ``head``, newest first, read as it streams (the caller
        stops early; the process is ended then)."""
        proc = self.spawn(
            [
                "log",
                "--first-parent",
                "-z",
                "--format=%H%x01%T%x01%P%x01%B",
                "--end-of-options",
                head,
                "--",
            ],
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        finished = False
        try:
            buf = b""
            while True:
                chunk = proc.stdout.read1(65536)  # type: ignore[attr-defined]
                if not chunk:
                    break
                buf += chunk
                *records, buf = buf.split(b"\0")
                for rec in records:
                    yield _commit_record(rec)
            if buf.strip():
                yield _commit_record(buf)
            finished = True
        finally:
            proc.stdout.close()
            if not finished:
                proc.kill()
            code = proc.wait()
            err = proc.stderr.read() if proc.stderr else b""
            if proc.stderr:
                proc.stderr.close()
            if finished and code != 0:
                raise failure(["log"], code, err)

    def rev_list(self, *args: str) -> list[Oid]:
        return [Oid(x) for x in self.out("rev-list", *args).split()]

    def count_commits(self, rng: str) -> int:
        return int(self.out("rev-list", "--count", "--end-of-options", rng, "--").strip() or 0)

    def ahead_behind(self, old: str, new: str) -> tuple[int, int]:
        """(commits in ``new`` not in ``old``, commits in ``old`` not in ``new``)."""
        left, right = self.out(
            "rev-list", "--left-right", "--count", "--end-of-options", f"{old}...{new}"
        ).split()
        return int(right), int(left)

    def is_ancestor(self, a: str, b: str) -> bool:
        proc = self.run("merge-base", "--is-ancestor", "--end-of-options", a, b, check=False)
        if proc.returncode not in (0, 1):
            raise failure(["merge-base"], proc.returncode, proc.stderr)
        return proc.returncode == 0

    def merge_base(self, a: str, b: str) -> Oid | None:
        """The best common ancestor of two commits (git's choice among several), or None."""
        proc = self.run("merge-base", "--end-of-options", a, b, check=False)
        if proc.returncode not in (0, 1):
            raise failure(["merge-base"], proc.returncode, proc.stderr)
        out = proc.stdout.decode().strip()
        return Oid(out) if proc.returncode == 0 and out else None

    def first_parent_trees(self, rng: str) -> list[tuple[Oid, Oid, str]]:
        """(commit, its tree, subject) of the first-parent commits of ``rng``, oldest first:
        one ``log``, the trees with the commits (thousands of them in a real drift)."""
        out = self.run(
            "log",
            "--reverse",
            "-z",
            "--first-parent",
            "--format=%H %T%x01%s",
            "--end-of-options",
            rng,
            "--",
        ).stdout
        result = []
        for rec in out.split(b"\0"):
            if rec.strip():
                ids, _, subject = rec.decode("utf-8", "surrogateescape").partition("\x01")
                oid, tree = ids.split()
                result.append((Oid(oid), Oid(tree), subject))
        return result

    def log_commits(
        self,
        rng: str,
        paths: Sequence[str] = (),
        first_parent: bool = False,
        exclude_grep: str | None = None,
    ) -> list[tuple[Oid, tuple[Oid, ...], str]]:
        """(commit, parents, subject) of ``rng`` (touching ``paths`` when given), oldest first;
        ``exclude_grep``: leave out commits whose message matches this regular expression."""
        args = ["log", "--reverse", "-z", "--no-renames", "--format=%H %P%x01%s"]
        if first_parent:
            args.append("--first-parent")
        if exclude_grep:
            args += ["--invert-grep", "--extended-regexp", f"--grep={exclude_grep}"]
        out = self.run(*args, "--end-of-options", rng, "--", *paths).stdout
        result = []
        for rec in out.split(b"\0"):
            if rec.strip():
                ids, _, subject = rec.decode("utf-8", "surrogateescape").partition("\x01")
                oid, *parents = ids.split()
                result.append((Oid(oid), tuple(Oid(p) for p in parents), subject))
        return result

    @staticmethod
    def _touching_args(rng: str, paths: Sequence[str], exclude_grep: str | None) -> list[str]:
        # --full-history: which commits touch a path must not depend on what else is asked
        # (history simplification would prune a side branch by every path of the pathspec)
        args = ["log", "--reverse", "-z", "--no-renames", "--name-only", "--full-history"]
        args.append("--format=%x02%H%x01%s")
        if exclude_grep:
            args += ["--invert-grep", "--extended-regexp", f"--grep={exclude_grep}"]
        return [*args, "--end-of-options", rng, "--", *paths]

    def prefetch_touching(
        self, rng: str, paths: Sequence[str], exclude_grep: str | None = None
    ) -> None:
        """Start in the background the walk of `log_touching`, for every path a later call
        may ask about: on a real drift it is thousands of commits (most of a second), made
        while the replay works on another core. Its output goes to a file (a pipe would stop
        it at 64 KB); `close` ends it if no call took it."""
        key = ("touching", rng, exclude_grep)
        if key in self._memo or not paths:
            return
        out = tempfile.TemporaryFile()  # noqa: SIM115 (read, then closed, by the taker)
        proc = subprocess.Popen(
            ["git", *self._touching_args(rng, paths, exclude_grep)],
            cwd=self.top,
            env=sealed_env(self._objects_env(None, False)),
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=inherited_fds(),
        )
        self._background.append(proc)
        self._memo[key] = (frozenset(paths), proc, out)

    def _prefetched_touching(
        self, rng: str, paths: Sequence[str], exclude_grep: str | None
    ) -> bytes | None:
        found = self._memo.get(("touching", rng, exclude_grep))
        if found is None or not set(paths) <= found[0]:
            return None
        known, proc, out = found
        if proc is not None:  # the first taker reads the file; the others take its bytes
            with out:
                code = proc.wait()
                out.seek(0)
                out = out.read() if code == 0 else None
            self._memo[("touching", rng, exclude_grep)] = (known, None, out)
        return out  # type: ignore[no-any-return]

    def log_touching(
        self, rng: str, paths: Sequence[str], exclude_grep: str | None = None
    ) -> list[tuple[Oid, str, tuple[str, ...]]]:
        """(commit, subject, the ``paths`` it changed) of each commit of ``rng`` that touched
        any of ``paths``, oldest first: one walk of the range (``--name-only``), or the one
        `prefetch_touching` started."""
        out = self._prefetched_touching(rng, paths, exclude_grep)
        if out is None:
            out = self.run(*self._touching_args(rng, paths, exclude_grep)).stdout
        wanted = set(paths)
        result: list[tuple[Oid, str, tuple[str, ...]]] = []
        current: tuple[Oid, str] | None = None
        changed: list[str] = []
        for token in out.split(b"\0"):
            token = token.lstrip(b"\n")
            if token.startswith(b"\x02"):
                if current:
                    result.append((*current, tuple(changed)))
                oid, _, subject = token[1:].decode("utf-8", "surrogateescape").partition("\x01")
                current, changed = (Oid(oid), subject), []
            elif token:
                changed.append(decode_path(token))
        if current:
            result.append((*current, tuple(changed)))
        # a walk for more paths: only the asked ones, and the commits that touched them
        narrowed = [(c, s, tuple(p for p in ch if p in wanted)) for c, s, ch in result]
        return [r for r in narrowed if r[2]]

    def commit_files(self, commits: Sequence[tuple[Oid, tuple[Oid, ...]]]) -> list[list[str]]:
        """The paths each commit changed against its first parent (all paths of a root)."""
        # raw_diffs takes trees: for a pair of commits diff-tree --stdin echoes nothing.
        wanted = list(dict.fromkeys(c for oid, parents in commits for c in (oid, *parents[:1])))
        tree = dict(zip(wanted, self.trees_of(wanted), strict=True))
        pairs = [
            (tree[parents[0]] if parents else self.fmt.empty_tree, tree[oid])
            for oid, parents in commits
        ]
        return [[d[4] for d in raw] for raw in self.raw_diffs(pairs)]

    def path_history(self, rev: str, path: str) -> list[tuple[Oid, Oid, int]]:
        """(commit, tree, committer time) of the commits of ``rev`` that changed anything
        under ``path`` ("." for all), newest first; none when ``rev`` names no commit."""
        proc = self.run(
            "log", "-z", "--format=%H %T %ct", "--end-of-options", rev, "--", path, check=False
        )
        if proc.returncode != 0:
            return []
        result = []
        for rec in proc.stdout.decode().split("\0"):
            words = rec.split()
            if len(words) == 3:
                result.append((Oid(words[0]), Oid(words[1]), int(words[2])))
        return result

    def log_lines(self, rng: str, path: str, start: int, end: int) -> list[tuple[Oid, str]]:
        """(commit, subject) of the commits of ``rng`` that changed lines start..end of
        ``path`` (numbered as at the tip of ``rng``), oldest first (``git log -L``)."""
        if ":" in path or "\n" in path:
            return []  # -L cannot name such a path; callers fall back to the file's commits
        proc = self.run(
            "log",
            "--reverse",
            "-s",
            "-z",
            "--format=%H %s",
            f"-L{start},{end}:{path}",
            "--end-of-options",
            rng,
            check=False,
        )
        if proc.returncode != 0:
            return []  # the lines are not in the file at the tip (e.g. a deletion)
        result = []
        for rec in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
            first = rec.strip().split("\n", 1)[0]
            if first:
                oid, _, subject = first.partition(" ")
                result.append((Oid(oid), subject))
        return result

    def commit_range(self, rng: str, first_parent: bool = False) -> list[CommitMeta]:
        """The commits of ``rng`` (``A..B``), oldest first, with author, raw date and message;
        ``first_parent``: only B's first-parent history (a merge stands for its side)."""
        fmt = "%H%x01%T%x01%P%x01%an%x01%ae%x01%ad%x01%B"
        proc = self.run(
            "log",
            "--reverse",
            "--topo-order",
            *(["--first-parent"] if first_parent else []),
            "-z",
            "--date=raw",
            "--encoding=UTF-8",
            "--format=" + fmt,
            "--end-of-options",
            rng,
            "--",
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise PatchstackError(
                f"unknown commit range '{rng}'" + (f": {err[0]}" if err else ""),
                "give a range A..B of commits",
            )
        result = []
        for rec in proc.stdout.split(b"\0"):
            if not rec.strip():
                continue
            fields = rec.decode("utf-8", "surrogateescape").lstrip("\n").split("\x01", 6)
            oid, tree, parents, name, mail, date, message = fields
            result.append(
                CommitMeta(
                    Oid(oid),
                    Oid(tree),
                    tuple(Oid(p) for p in parents.split()),
                    f"{name} <{mail}>",
                    date,
                    message,
                )
            )
        return result

    def edited_lines(self, path: str) -> list[tuple[int, int]]:
        """The lines of HEAD's ``path`` that the work tree's version changes, as (first, last)
        ranges (an insertion: the line it follows, or line 1)."""
        out = self.run(
            "diff-index", "-p", "-U0", "--no-ext-diff", "--no-color", "HEAD", "--", path
        ).stdout
        ranges = []
        for line in out.split(b"\n"):
            if line.startswith(b"@@ -"):
                old = line[4:].split(b" ", 1)[0]
                start_text, _, count_text = old.partition(b",")
                start, count = int(start_text), int(count_text or b"1")
                ranges.append((max(start, 1), max(start + count - 1, start, 1)))
        return ranges

    def blame_commits(self, rev: str, path: str, ranges: Sequence[tuple[int, int]]) -> list[Oid]:
        """The commits that last changed these lines of ``path`` at ``rev`` (``git blame``)."""
        if not ranges:
            return []
        args = ["blame", "--porcelain"]
        for start, end in ranges:
            args.append(f"-L{start},{end}")
        proc = self.run(*args, rev, "--", path, check=False)  # rev: an id (no options)
        if proc.returncode != 0:
            return []
        found = []
        for line in proc.stdout.split(b"\n"):
            word = line.split(b" ", 1)[0]
            if len(word) == self.fmt.hexsz and all(c in b"0123456789abcdef" for c in word):
                found.append(Oid(word.decode()))
        return list(dict.fromkeys(found))

    def commit_date(self, rev: str) -> str:
        """The author date of ``rev`` in git's raw form ("<epoch> <tz>")."""
        return self.out(
            "log", "-1", "--format=%ad", "--date=raw", "--end-of-options", rev, "--"
        ).strip()


def _commit_record(rec: bytes) -> CommitRecord:
    text = rec.decode("utf-8", "surrogateescape").lstrip("\n")
    oid, tree, parents, message = text.split("\x01", 3)
    return CommitRecord(Oid(oid), Oid(tree), tuple(Oid(p) for p in parents.split()), message)
