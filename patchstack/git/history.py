"""History: commits, ranges and what they touched, read with ``log``/``rev-list`` (``-z``,
paths decoded one way, see `base.decode_path`)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from ..errors import PatchstackError
from ..model.ids import Oid
from .base import decode_path, under_any
from .deletions import PATHSPEC_MAX as PATHSPEC_MAX  # listings takes it from here
from .deletions import Deletions
from .process import failure


@dataclass(frozen=True)
class FileLines:
    """One commit's change to one file: whether it created it, and its ``-U0`` hunks as
    (old start, old count, new start, new count) as git writes them (None: binary); the
    file's blob ids before and after it ("" where git wrote none: a mode change alone)."""

    created: bool
    hunks: tuple[tuple[int, int, int, int], ...] | None
    before: str = ""
    after: str = ""


@dataclass(frozen=True)
class LineChanges:
    oid: Oid
    subject: str
    files: dict[str, FileLines]
    flagged: bool = False  # its message has the trailer `line_changes` was asked about


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


class History(Deletions):
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
        if first_parent and not exclude_grep and len(paths) > PATHSPEC_MAX:
            asked = set(paths)  # a long pathspec: the first-parent walk filtered here
            walked = self.log_paths(rng, first_parent=True)
            return [
                (c, parents, subject)
                for c, parents, subject, changed in reversed(walked)
                if any(under_any(f, asked) for f in changed)
            ]
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

    def log_paths(
        self, rng: str, first_parent: bool = False
    ) -> list[tuple[Oid, tuple[Oid, ...], str, tuple[str, ...]]]:
        """(commit, parents, subject, the paths it changed against its first parent: all of a
        root's) of every commit of ``rng``, in git's order (newest first): one walk, and no
        pathspec, which git matches slowly when it is long (callers filter the paths)."""
        args = ["log", "-z", "--no-renames", "--name-only", "--diff-merges=first-parent"]
        args += ["--first-parent"] if first_parent else []
        args += ["--root", "--format=%x02%H %P%x01%s"]
        out = self.run(*args, "--end-of-options", rng, "--").stdout
        result: list[tuple[Oid, tuple[Oid, ...], str, tuple[str, ...]]] = []
        head: tuple[Oid, tuple[Oid, ...], str] | None = None
        paths: list[str] = []
        for tok in out.split(b"\0"):
            if tok.startswith(b"\x02"):
                if head is not None:
                    result.append((*head, tuple(paths)))
                ids, _, subject = tok[1:].decode("utf-8", "surrogateescape").partition("\x01")
                oid, *parents = ids.split()
                head, paths = (Oid(oid), tuple(Oid(p) for p in parents), subject), []
            elif tok:  # the first path of a commit follows a newline
                paths.append(decode_path(tok[1:] if not paths and tok[:1] == b"\n" else tok))
        if head is not None:
            result.append((*head, tuple(paths)))
        return result

    def line_changes(
        self, rng: str, paths: Sequence[str], trailer: str | None = None
    ) -> list[LineChanges]:
        """What each first-parent commit of ``rng`` did to the lines of ``paths``, newest
        first (a merge against its first parent): one ``log -p -U0`` walk for every path;
        ``trailer``: flag the commits whose message has this trailer."""
        if not paths:
            return []
        args = _line_args(trailer)
        if len(paths) <= PATHSPEC_MAX:
            out = self.run(*args, "--end-of-options", rng, "--", *paths).stdout
        else:  # the commits that touch them, found here; then only theirs diffed, at the
            # paths (given on standard input after ``--``: matched on those commits alone, not
            # on the whole walk's, and never too long for the command line)
            asked = set(paths)
            walked = self.log_paths(rng, first_parent=True)
            picked = [
                c for c, _p, _s, changed in walked if any(under_any(f, asked) for f in changed)
            ]
            if not picked:
                return []
            limit = [] if any("\n" in p for p in paths) else ["--\n", *(f"{p}\n" for p in paths)]
            stdin = "".join([*(f"{c}\n" for c in picked), *limit])  # (a line per path)
            out = self.run(*args, "--no-walk=unsorted", "--stdin", input=stdin.encode()).stdout
        return _line_changes(out, paths)

    def start_line_changes(
        self, rng: str, paths: Sequence[str], trailer: str | None = None
    ) -> Callable[[], list[LineChanges]]:
        """`line_changes`, git started now and its answer read when called: git walks while
        the caller works, writing to a file of its own (it never waits for a reader); a walk
        nobody asks for is killed by `close`. (More paths than a pathspec takes: walked when
        called.)"""
        if not paths or len(paths) > PATHSPEC_MAX:
            return lambda: self.line_changes(rng, paths, trailer)
        started = self.start([*_line_args(trailer), "--end-of-options", rng, "--", *paths])
        found: list[list[LineChanges]] = []

        def answer() -> list[LineChanges]:
            if not found:
                found.append(_line_changes(started(), paths))
            return found[0]

        return answer

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


# git's C-style quoting of a path in a diff header (``core.quotePath`` is pinned off, so
# only these bytes and the other control characters make it quote)
_ESCAPES = {9: b"\\t", 10: b"\\n", 34: b'\\"', 92: b"\\\\", 7: b"\\a", 8: b"\\b"}
_ESCAPES |= {12: b"\\f", 13: b"\\r", 11: b"\\v"}


def _line_args(trailer: str | None) -> list[str]:
    args = ["log", "--first-parent", "--diff-merges=first-parent", "-p", "-U0"]
    args += ["--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", "--full-index"]
    flag = f"%x01%(trailers:key={trailer},valueonly,separator=%x20)" if trailer else ""
    return [*args, f"--format=%x02%H%x01%s{flag}"]


def _line_changes(out: bytes, paths: Sequence[str]) -> list[LineChanges]:
    """`History.line_changes`' answer, read from what its walk printed."""
    headers = {_diff_header(p): p for p in paths}
    result: list[LineChanges] = []
    files: dict[str, FileLines] = {}
    path: str | None = None
    head = False  # in a file's header, before its first hunk
    for line in out.split(b"\n"):
        if line.startswith(b"\x02"):
            oid, subject, *value = line[1:].decode("utf-8", "surrogateescape").split("\x01")
            files = {}
            result.append(LineChanges(Oid(oid), subject, files, bool("".join(value).strip())))
            path, head = None, False
        elif line.startswith(b"diff --git "):
            path, head = headers.get(line), True
            if path is not None:
                files[path] = FileLines(False, ())
        elif path is None:
            continue
        elif line.startswith(b"@@ -"):
            head = False
            old, new = line[4:].split(b" @@", 1)[0].split(b" +")
            hunk = (*_span(old), *_span(new))
            files[path] = replace(files[path], hunks=(*(files[path].hunks or ()), hunk))
        elif head and line == b"--- /dev/null":
            files[path] = replace(files[path], created=True)
        elif head and line.startswith(b"Binary files "):
            files[path] = replace(files[path], hunks=None)
        elif head and line.startswith(b"index "):
            before, _, after = line[6:].split(b" ")[0].decode().partition("..")
            files[path] = replace(files[path], before=before, after=after)
    return result


def _diff_header(path: str) -> bytes:
    """The ``diff --git`` line git writes for ``path`` changed in place (no rename)."""
    raw = path.encode("utf-8", "surrogateescape")
    if not any(b < 32 or b in (34, 92, 127) for b in raw):
        return b"diff --git a/%s b/%s" % (raw, raw)
    quoted = b"".join(
        _ESCAPES.get(b) or (b"\\%03o" % b if b < 32 or b == 127 else bytes([b])) for b in raw
    )
    return b'diff --git "a/%s" "b/%s"' % (quoted, quoted)


def _span(text: bytes) -> tuple[int, int]:
    start, _, count = text.partition(b",")
    return int(start), int(count or b"1")


def _commit_record(rec: bytes) -> CommitRecord:
    text = rec.decode("utf-8", "surrogateescape").lstrip("\n")
    oid, tree, parents, message = text.split("\x01", 3)
    return CommitRecord(Oid(oid), Oid(tree), tuple(Oid(p) for p in parents.split()), message)
