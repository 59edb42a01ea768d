"""The git boundary: the only module that runs git.

Everything else sees object ids (hex strings) and plain values. Reads go through a persistent
``git cat-file --batch`` where many objects are read; writes use plumbing: ``commit-tree``,
``apply --cached`` and ``write-tree`` against a temporary index, ``merge-tree --write-tree`` for
three-way merges, and one ``update-ref --stdin`` transaction with expected old values to
publish. The work tree is changed once per command, by ``read-tree -m -u`` from the old tree to
the new one, which carries the user's uncommitted edits and refuses to overwrite them.

git always runs from the top of the work tree (from a subfolder, ``git apply`` silently skips
paths outside it) with a fixed, sealed-off set of variables that change plumbing output, and in
a session of its own, so that a Ctrl-C at the terminal reaches patchstack alone, which decides
whether to finish or roll back (see `lock`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NewType

from .errors import GitFailure, PatchstackError
from .lock import inherited_fds

Oid = NewType("Oid", str)

MIN_VERSION = (2, 38)
EMPTY_TREE = Oid("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
# Who and when of the throwaway commits that let merge-tree merge with a given base.
_SYNTHETIC = ("patchstack <patchstack@invalid>", "1000000000 +0000")
PATCH_TRAILER = "Patchstack-Patch"
TAG_TRAILER = "Patchstack-Tag"

# The user's configuration must not change the bytes of a patch file.
_FORMAT_PATCH_CONFIG = (
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "format.signature=",
    "-c",
    "diff.relative=false",
    "-c",
    "core.quotePath=true",
)
_FORMAT_PATCH_ARGS = (
    "format-patch",
    "--stdout",
    "--zero-commit",
    "--full-index",
    "--no-signature",
    "--no-renames",
    "--binary",
    "--no-color",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-numbered",
    "--no-cover-letter",
    "--no-thread",
    "--no-attach",
    "--no-notes",
    "-O/dev/null",
)


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX"):
        env.pop(var, None)
    env.update(LC_ALL="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0")
    return env


def run_git(
    args: Sequence[str],
    cwd: str | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            env=env or _base_env(),
            capture_output=True,
            start_new_session=True,  # a Ctrl-C at the terminal must not cut git short
            pass_fds=inherited_fds(),  # git holds the repository lock while it runs
        )
    except FileNotFoundError as exc:
        raise PatchstackError("git is not installed", "install git >= 2.38") from exc
    if check and proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitFailure(f"git {' '.join(args[:2])} failed: {err or f'exit {proc.returncode}'}")
    return proc


def check_version() -> None:
    out = run_git(["version"]).stdout.decode()
    m = re.search(r"(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < MIN_VERSION:
        raise PatchstackError(
            f"patchstack needs git >= {MIN_VERSION[0]}.{MIN_VERSION[1]}, found: {out.strip()}",
            "install a newer git (merge-tree --write-tree appeared in 2.38)",
        )


def find_repo(start: str) -> Git:
    proc = run_git(
        ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"],
        cwd=start,
        check=False,
    )
    if proc.returncode != 0:
        raise PatchstackError(
            f"not inside a git work tree: {start}", "run patchstack inside a git repository"
        )
    top, git_dir, common = proc.stdout.decode().splitlines()[:3]
    if not os.path.isabs(common):
        common = os.path.normpath(os.path.join(top if common == ".git" else start, common))
    return Git(top, git_dir, common)


def init_repo(path: str, branch: str = "main") -> Git:
    os.makedirs(path, exist_ok=True)
    run_git(["init", "-q", "-b", branch, path])
    return find_repo(path)


def clone(src: str, dest: str) -> Git:
    run_git(["clone", "-q", src, dest])
    return find_repo(dest)


def ident_env(name: str, email: str, date: str | None = None) -> dict[str, str]:
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


@dataclass(frozen=True)
class CommitInfo:
    oid: Oid
    tree: Oid
    parents: tuple[Oid, ...]
    patch: str | None
    tag: str | None
    subject: str


@dataclass(frozen=True)
class CommitMeta:
    oid: Oid
    tree: Oid
    parents: tuple[Oid, ...]
    author: str  # "Name <email>"
    date: str  # "<epoch> <tz>"
    tag: str | None  # the last Patchstack-Tag trailer
    patch: str | None  # the last Patchstack-Patch trailer
    message: str


@dataclass(frozen=True)
class MergeResult:
    tree: Oid
    clean: bool
    conflicted: tuple[str, ...]  # paths
    messages: str


@dataclass(frozen=True)
class DirtyState:
    """Uncommitted state of the work tree relative to HEAD (series directory excluded)."""

    modified: tuple[str, ...]  # tracked paths whose index or work tree differs from HEAD
    untracked: tuple[str, ...]
    unmerged: tuple[str, ...]
    partly_staged: tuple[str, ...] = ()  # staged, then edited again: index != HEAD, work tree

    @property
    def clean(self) -> bool:
        return not (self.modified or self.untracked or self.unmerged)


@dataclass(frozen=True)
class WorktreeInfo:
    path: str
    head: Oid  # empty in a worktree whose branch has no commit yet
    branch: str | None  # refs/heads/..., None when detached
    git_dir: str  # its administrative folder
    locked: str | None  # the lock reason ("" when locked without one)
    prunable: bool  # its folder is gone


@dataclass
class Git:
    """A repository: its work tree top and git directories. Runs git; returns values."""

    top: str
    git_dir: str
    common_dir: str
    _catfile: subprocess.Popen | None = field(default=None, repr=False)
    _check: subprocess.Popen | None = field(default=None, repr=False)
    # Answers that cannot change while one command holds the repository lock, asked twice.
    _memo: dict = field(default_factory=dict, repr=False)

    # -- running -----------------------------------------------------------------------------

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        full_env = _base_env()
        if env:
            full_env.update(env)
        return run_git(args, cwd=self.top, input=input, env=full_env, check=check)

    def out(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
        return self.run(*args, input=input, env=env).stdout.decode("utf-8", "surrogateescape")

    def close(self) -> None:
        for proc in (self._catfile, self._check):
            if proc is not None:
                proc.stdin.close()
                proc.wait()
        self._catfile = self._check = None

    # -- reading -----------------------------------------------------------------------------

    def rev_parse(self, rev: str) -> Oid | None:
        proc = self.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}", check=False
        )
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def head(self) -> Oid | None:
        return self.rev_parse("HEAD")

    def head_ref(self) -> str | None:
        """The branch HEAD points at (refs/heads/...), or None when detached."""
        if "head_ref" not in self._memo:  # patchstack never switches branches
            proc = self.run("symbolic-ref", "-q", "HEAD", check=False)
            self._memo["head_ref"] = proc.stdout.decode().strip() or None
        return self._memo["head_ref"]

    def upstream_of_head(self) -> str | None:
        proc = self.run(
            "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False
        )
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def tree_of(self, commit: str) -> Oid:
        return Oid(self.out("rev-parse", "--verify", commit + "^{tree}").strip())

    def config(self, key: str) -> str | None:
        if ("config", key) not in self._memo:
            proc = self.run("config", "--get", key, check=False)
            value = proc.stdout.decode().strip() if proc.returncode == 0 else None
            self._memo[("config", key)] = value
        return self._memo[("config", key)]

    def ident(self) -> tuple[str, str]:
        """The user's author identity as ("Name <email>", "<epoch> <tz>")."""
        proc = self.run("var", "GIT_AUTHOR_IDENT", check=False)
        if proc.returncode != 0:
            raise PatchstackError(
                "git does not know who you are",
                "set it with: git config user.name 'Your Name' && git config user.email you@x",
            )
        text = proc.stdout.decode().strip()
        m = re.match(r"(.*>) (\d+ [+-]\d{4})\Z", text)
        if not m:
            raise GitFailure(f"unexpected identity from git var: {text}")
        return m.group(1), m.group(2)

    def spawn(self, args: Sequence[str], stdin=None, stderr=None) -> subprocess.Popen:
        """A long-running git process (stream or batch) reading from the top of the work tree;
        like every git run here it sits in its own session and holds the repository lock."""
        return subprocess.Popen(
            ["git", *args],
            cwd=self.top,
            env=_base_env(),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            pass_fds=inherited_fds(),
        )

    def _batch(self, which: str) -> subprocess.Popen:
        proc = self._catfile if which == "--batch" else self._check
        if proc is None:
            proc = self.spawn(["cat-file", which], stdin=subprocess.PIPE)
            if which == "--batch":
                self._catfile = proc
            else:
                self._check = proc
        return proc

    def read_object(self, oid: str) -> tuple[str, bytes] | None:
        """(type, content) of an object, or None when it is missing."""
        proc = self._batch("--batch")
        proc.stdin.write(oid.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().decode().split()
        if len(header) < 3:
            return None
        size = int(header[2])
        data = proc.stdout.read(size + 1)[:-1]
        return header[1], data

    def read_blob(self, oid: str) -> bytes:
        found = self.read_object(oid)
        if found is None:
            raise GitFailure(f"missing object {oid}")
        return found[1]

    def has_objects(self, oids: Iterable[str]) -> dict[str, bool]:
        proc = self._batch("--batch-check")
        result = {}
        todo = list(oids)
        for start in range(0, len(todo), 256):  # a chunk at a time: pipes stay below their size
            chunk = todo[start : start + 256]
            proc.stdin.write("".join(oid + "\n" for oid in chunk).encode())
            proc.stdin.flush()
            for oid in chunk:
                result[oid] = not proc.stdout.readline().rstrip().endswith(b"missing")
        return result

    def entry_modes(self, tree: str, paths: Iterable[str]) -> dict[str, str | None]:
        """The mode of each path's entry in ``tree`` ("100644", "120000", "040000", "160000"),
        or None when absent; read from the tree objects through the persistent cat-file."""
        listings: dict[str, dict[bytes, str] | None] = {}
        result: dict[str, str | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in listings:
                found = self.read_object(f"{tree}:{folder}" if folder else tree)
                listings[folder] = (
                    _tree_entries(found[1], len(tree) // 2)
                    if found and found[0] == "tree" and "\n" not in folder
                    else None
                )
            entries = listings[folder]
            result[path] = entries.get(name.encode("utf-8", "surrogateescape")) if entries else None
        return result

    def show_file(self, rev: str, path: str) -> bytes | None:
        proc = self.run("cat-file", "blob", f"{rev}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def ls_tree(self, tree: str, path: str | None = None) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) for the files of a tree (recursively)."""
        args = ["ls-tree", "-r", "-z", "--full-tree", tree]
        if path:
            args += ["--", path]
        result = {}
        for rec in self.run(*args).stdout.split(b"\0"):
            if rec:
                meta, name = rec.split(b"\t", 1)
                mode, _kind, oid = meta.decode().split()
                result[name.decode("utf-8", "surrogateescape")] = (mode, oid)
        return result

    def ls_tree_paths(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """path -> (mode, object id) for exactly these paths of a tree (missing ones left out)."""
        out = self.run(
            "ls-tree", "-z", "--full-tree", tree, "--", *paths, env={"GIT_LITERAL_PATHSPECS": "1"}
        ).stdout
        result = {}
        for rec in out.split(b"\0"):
            if rec:
                meta, name = rec.split(b"\t", 1)
                mode, _kind, oid = meta.decode().split()
                result[name.decode("utf-8", "surrogateescape")] = (mode, oid)
        return result

    def iter_stack(self, head: str) -> Iterator[CommitInfo]:
        """First-parent history from ``head``, newest first, with patchstack's trailers."""
        fmt = (
            "%H%x01%T%x01%P%x01%(trailers:key=" + PATCH_TRAILER + ",valueonly,separator=%x02)"
            "%x01%(trailers:key=" + TAG_TRAILER + ",valueonly,separator=%x02)%x01%s%x00"
        )
        proc = self.spawn(
            ["log", "--first-parent", "-z", "--format=" + fmt, head, "--"],
            stderr=subprocess.DEVNULL,
        )
        try:
            buf = b""
            while True:
                chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else b""
                if not chunk:
                    break
                buf += chunk
                *records, buf = buf.split(b"\0")
                for rec in records:
                    rec = rec.strip(b"\n")
                    if not rec:
                        continue
                    oid, tree, parents, patch, tag, subject = rec.decode(
                        "utf-8", "surrogateescape"
                    ).split("\x01", 5)
                    yield CommitInfo(
                        Oid(oid),
                        Oid(tree),
                        tuple(Oid(p) for p in parents.split()),
                        patch.split("\x02")[-1].strip() or None,
                        tag.split("\x02")[-1].strip() or None,
                        subject,
                    )
        finally:
            proc.stdout.close()
            proc.kill()
            proc.wait()

    def rev_list(self, *args: str) -> list[Oid]:
        return [Oid(x) for x in self.out("rev-list", *args).split()]

    def ahead_behind(self, old: str, new: str) -> tuple[int, int]:
        """(commits in ``new`` not in ``old``, commits in ``old`` not in ``new``)."""
        left, right = self.out("rev-list", "--left-right", "--count", f"{old}...{new}").split()
        return int(right), int(left)

    def log_oneline(self, rng: str, paths: Sequence[str] = ()) -> list[tuple[Oid, str, list[str]]]:
        """(commit, subject, files) for each commit of ``rng`` touching ``paths``, oldest first."""
        return self._log_records(["--name-only"], rng, paths)

    def log_upstream(self, rng: str, paths: Sequence[str] = ()) -> list[tuple[Oid, str, list[str]]]:
        """Like `log_oneline`, leaving out patchstack's own patch commits (a merged stack); the
        files are listed only when ``paths`` are given."""
        extra = ["--invert-grep", f"--grep=^{PATCH_TRAILER}: "]
        return self._log_records(extra + (["--name-only"] if paths else []), rng, paths)

    def _log_records(
        self, extra: list[str], rng: str, paths: Sequence[str]
    ) -> list[tuple[Oid, str, list[str]]]:
        args = ["log", "--reverse", "--format=%x00%H %s", "--no-renames", *extra, rng, "--"]
        result: list[tuple[Oid, str, list[str]]] = []
        for rec in self.out(*args, *paths).split("\0"):
            if not rec.strip():
                continue
            first, *files = rec.split("\n")
            oid, _, subject = first.partition(" ")
            result.append((Oid(oid), subject, [f for f in files if f]))
        return result

    def changed_paths(self, a: str, b: str) -> list[str]:
        """Paths that differ between two trees or commits."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def raw_diffs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> list[list[tuple[str, str, str, str, str]]]:
        """For each (old, new) tree pair: [(old_mode, new_mode, old_id, new_id, path)], batched."""
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
        result: list[list[tuple[str, str, str, str, str]]] = []
        pos = 0
        while pos < len(out):
            if out[pos : pos + 1] == b":":
                meta_end = out.index(b"\0", pos)
                path_end = out.index(b"\0", meta_end + 1)
                om, nm, oo, no, _status = out[pos + 1 : meta_end].decode().split(" ")
                path = out[meta_end + 1 : path_end].decode("utf-8", "surrogateescape")
                result[-1].append((om, nm, oo, no, path))
                pos = path_end + 1
            else:
                pos = out.index(b"\n", pos) + 1
                result.append([])
        return result

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
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=none",
            "--",
            *(paths or ()),
            env={"GIT_LITERAL_PATHSPECS": "1"} if paths else None,
        ).stdout
        modified, untracked, unmerged, partly = [], [], [], []
        prefix = (exclude.rstrip("/") + "/") if exclude else None
        for rec in out.split(b"\0"):
            if len(rec) < 4:
                continue
            xy, path = rec[:2].decode(), rec[3:].decode("utf-8", "surrogateescape")
            if prefix and (path + "/").startswith(prefix):
                continue
            if xy == "??":
                untracked.append(path)
            elif "U" in xy or xy in ("AA", "DD"):
                unmerged.append(path)
            else:
                modified.append(path)
                if xy[0] not in " ?" and xy[1] != " ":
                    partly.append(path)
        return DirtyState(tuple(modified), tuple(untracked), tuple(unmerged), tuple(partly))

    # -- writing objects -----------------------------------------------------------------------

    def temp_index(self) -> TempIndex:
        return TempIndex(self)

    def commit_all(self, message: str, env: dict[str, str]) -> Oid:
        """Stage everything and commit (sandboxes and tests of a user's own repository)."""
        self.run("add", "-A", env=env)
        self.run("commit", "-q", "--no-verify", "-m", message, env=env)
        return Oid(self.out("rev-parse", "HEAD").strip())

    def am(self, paths: Sequence[str], env: dict[str, str]) -> None:
        self.run("am", "-q", "--committer-date-is-author-date", *paths, env=env)

    def fetch(self, remote: str = "origin") -> None:
        self.run("fetch", "-q", remote)

    def fast_import(self) -> FastImport:
        return FastImport(self)

    def trees_of(self, commits: Sequence[str]) -> list[Oid]:
        if not commits:
            return []
        out = self.out("rev-parse", *(c + "^{tree}" for c in commits))
        return [Oid(x) for x in out.split()]

    def commit_tree(
        self, tree: str, parents: Sequence[str], message: str, author: str, date: str
    ) -> Oid:
        """A commit whose committer equals its author, so equal inputs give equal ids."""
        name, _, email = author.rpartition(" <")
        email = email.rstrip(">")
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        args = ["-c", "i18n.commitEncoding=UTF-8", "commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return Oid(
            self.out(*args, input=message.encode("utf-8", "surrogateescape"), env=env).strip()
        )

    def merge_trees(
        self,
        base: str,
        ours: str,
        theirs: str,
        labels: tuple[str, str],
        base_label: str | None = None,
    ) -> MergeResult:
        """Three-way merge of trees, in the object database only (no index, no work tree).

        git < 2.40 has no ``merge-tree --merge-base``; two throwaway commits sharing a parent
        whose tree is ``base`` make git find exactly that merge base. With ``base_label``, the
        conflict markers inside the merged files say ``labels`` and ``base_label`` instead of
        the throwaway commits' ids (for a tree that goes into the user's work tree).
        """
        ident, date = _SYNTHETIC
        b = self._memo.get(("synthetic", base)) or self.commit_tree(base, [], "base\n", ident, date)
        t = self._memo.get(("synthetic", theirs, b, labels[1])) or self.commit_tree(
            theirs, [b], labels[1] + "\n", ident, date
        )
        o = self.commit_tree(ours, [b], labels[0] + "\n", ident, date)
        proc = self.run(
            "-c",
            "merge.conflictStyle=diff3",
            "merge-tree",
            "--write-tree",
            "--messages",
            o,
            t,
            check=False,
        )
        if proc.returncode not in (0, 1):
            raise GitFailure("git merge-tree failed: " + proc.stderr.decode(errors="replace"))
        text = proc.stdout.decode("utf-8", "surrogateescape")
        head, _, messages = text.partition("\n\n")
        lines = head.splitlines()
        tree = Oid(lines[0].strip())
        conflicted = tuple(dict.fromkeys(ln.split("\t", 1)[1] for ln in lines[1:] if "\t" in ln))
        if base_label is not None and proc.returncode == 1 and conflicted:
            tree = self._relabel(tree, conflicted, {o: labels[0], t: labels[1]}, base_label)
        # Conflict markers carry the throwaway commits' ids as labels: give them real names.
        return MergeResult(
            tree,
            proc.returncode == 0,
            conflicted,
            messages.replace(o, labels[0]).replace(t, labels[1]),
        )

    def prepare_merges(self, sides: Sequence[tuple[str, str, str]]) -> None:
        """Make the throwaway base and "theirs" commits of future `merge_trees` calls,
        (base tree, theirs tree, theirs label) each, in one fast-import stream."""
        ident, date = _SYNTHETIC
        stream = self.fast_import()
        try:
            for base, theirs, label in sides:
                if ("synthetic", base) not in self._memo:
                    self._memo[("synthetic", base)] = stream.commit(
                        "", ident, date, b"base\n", [("040000", base, "")]
                    )
                b = self._memo[("synthetic", base)]
                self._memo[("synthetic", theirs, b, label)] = stream.commit(
                    b,
                    ident,
                    date,
                    label.encode("utf-8", "surrogateescape") + b"\n",
                    [("040000", theirs, "")],
                )
        finally:
            stream.close()

    def _relabel(
        self, tree: Oid, paths: Sequence[str], names: dict[str, str], base_label: str
    ) -> Oid:
        """``tree`` with the conflict marker labels of ``paths`` renamed (new blobs, new tree)."""
        listing = self.ls_tree_paths(tree, list(paths))
        records = []
        for path in paths:
            if path not in listing:
                continue
            mode, oid = listing[path]
            text = self.read_blob(oid)
            out = []
            for line in text.split(b"\n"):
                for marker in (b"<<<<<<< ", b">>>>>>> "):
                    if line.startswith(marker):
                        label = line[len(marker) :].decode("ascii", "replace").strip()
                        line = marker + names.get(label, label).encode()
                if line.startswith(b"||||||| ") and re.fullmatch(rb"[0-9a-f]{4,40}", line[8:]):
                    line = b"||||||| " + base_label.encode()
                out.append(line)
            new = self.hash_blob(b"\n".join(out))
            records.append(f"{mode} {new}\t{path}".encode("utf-8", "surrogateescape"))
        if not records:
            return tree
        with self.temp_index() as idx:
            idx.read_tree(tree)
            self.run(
                "update-index",
                "-z",
                "--index-info",
                input=b"\0".join(records) + b"\0",
                env=idx.env,
            )
            return idx.write_tree()

    def hash_blob(self, data: bytes) -> Oid:
        return Oid(self.out("hash-object", "-w", "--stdin", input=data).strip())

    def count_commits(self, rng: str) -> int:
        return int(self.out("rev-list", "--count", rng, "--").strip() or 0)

    def log_lines(self, rng: str, path: str, start: int, end: int) -> list[tuple[Oid, str]]:
        """(commit, subject) of the commits of ``rng`` that changed lines start..end of
        ``path`` (numbered as at the tip of ``rng``), oldest first (``git log -L``)."""
        proc = self.run(
            "log",
            "--reverse",
            "-s",
            "--format=%x00%H %s",
            f"-L{start},{end}:{path}",
            rng,
            check=False,
        )
        if proc.returncode != 0:
            return []
        result = []
        for rec in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
            first = rec.strip().split("\n", 1)[0]
            if first:
                oid, _, subject = first.partition(" ")
                result.append((Oid(oid), subject))
        return result

    def format_patch(self, commit: str) -> bytes:
        return self.run(
            *_FORMAT_PATCH_CONFIG,
            *_FORMAT_PATCH_ARGS,
            "-1",
            commit,
        ).stdout

    def format_patches(self, base: str, top: str) -> list[bytes]:
        """``format_patch`` of every commit of ``base..top`` (first-parent, oldest first), in
        one process; each element is byte for byte what ``format_patch`` gives for that commit."""
        out = self.run(
            *_FORMAT_PATCH_CONFIG,
            *_FORMAT_PATCH_ARGS,
            f"{base}..{top}",
        ).stdout
        # --zero-commit makes every mail start with this exact line; a diff or message line
        # cannot (diff lines start with ' ', '+', '-'; git prefixes a body "From " line).
        sep = b"From " + b"0" * 40 + b" Mon Sep 17 00:00:00 2001\n"
        parts = out.split(b"\n" + sep)
        return [parts[0]] + [sep + p for p in parts[1:]] if out else []

    def commit_range(self, rng: str) -> list[CommitMeta]:
        """The commits of ``rng`` (``A..B``), oldest first, with author, raw date and message."""
        fmt = "%H%x01%T%x01%P%x01%an%x01%ae%x01%ad%x01%(trailers:key=" + TAG_TRAILER
        fmt += ",valueonly,separator=%x02)%x01%(trailers:key=" + PATCH_TRAILER
        fmt += ",valueonly,separator=%x02)%x01%B"
        proc = self.run(
            "log",
            "--reverse",
            "--topo-order",
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
            fields = rec.decode("utf-8", "surrogateescape").lstrip("\n").split("\x01", 8)
            oid, tree, parents, name, mail, date, tag, patch, message = fields
            result.append(
                CommitMeta(
                    Oid(oid),
                    Oid(tree),
                    tuple(Oid(p) for p in parents.split()),
                    f"{name} <{mail}>",
                    date,
                    tag.split("\x02")[-1].strip() or None,
                    patch.split("\x02")[-1].strip() or None,
                    message,
                )
            )
        return result

    def write_blob(self, data: bytes) -> Oid:
        return Oid(self.out("hash-object", "-w", "--stdin", input=data).strip())

    def resolve_blobs(self, names: Iterable[str]) -> dict[str, Oid | None]:
        """Full ids of (possibly abbreviated) blob ids; None where missing or ambiguous."""
        proc = self._batch("--batch-check")
        result: dict[str, Oid | None] = {}
        for name in names:
            proc.stdin.write(name.encode() + b"\n")
            proc.stdin.flush()
            words = proc.stdout.readline().decode().split()
            ok = len(words) == 3 and words[1] == "blob"
            result[name] = Oid(words[0]) if ok else None
        return result

    def mailsplit(self, mbox: str, outdir: str) -> list[str]:
        """Split an mbox (as ``git am`` does) into numbered files in ``outdir``; their paths."""
        proc = self.run("mailsplit", "-o" + outdir, "-b", "--", mbox, check=False)
        if proc.returncode != 0:
            raise PatchstackError(
                f"cannot read the mbox {mbox}: " + proc.stderr.decode("utf-8", "replace").strip(),
                "give a file written by 'git format-patch --stdout' or a mail client",
            )
        return [os.path.join(outdir, n) for n in sorted(os.listdir(outdir))]

    def mailinfo(self, mail: bytes, workdir: str) -> tuple[dict[str, str], bytes, bytes]:
        """``git mailinfo`` as ``git am`` runs it: (header info, message body, patch)."""
        msg, patch = os.path.join(workdir, "msg"), os.path.join(workdir, "patch")
        out = self.run("mailinfo", "-u", msg, patch, input=mail).stdout
        info: dict[str, str] = {}
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            key, _, value = line.partition(": ")
            if key and key not in info:
                info[key] = value
        with open(msg, "rb") as f:
            body = f.read()
        with open(patch, "rb") as f:
            diff = f.read()
        return info, body, diff

    # -- publishing ----------------------------------------------------------------------------

    def update_refs(self, updates: Sequence[tuple[str, str, str | None]], message: str) -> None:
        """One transaction: (ref, new, expected old or None for "must not exist")."""
        lines = ["start"]
        for ref, new, old in updates:
            lines.append(f"update {ref} {new} {old or '0' * 40}")
        lines += ["prepare", "commit"]
        proc = self.run(
            "update-ref",
            "--stdin",
            "-m",
            message,
            input=("\n".join(lines) + "\n").encode(),
            check=False,
        )
        if proc.returncode != 0:
            raise PatchstackError(
                "could not update the branch: " + proc.stderr.decode(errors="replace").strip(),
                "another process moved it meanwhile; nothing was changed, run the command again",
            )

    def checkout_tree(self, old: str, new: str) -> subprocess.CompletedProcess:
        """Move the index and work tree from tree ``old`` to ``new``, keeping local edits."""
        return self.run("read-tree", "-m", "-u", old, new, check=False)

    def reset_worktree(self, tree: str) -> None:
        """Index and work tree exactly ``tree`` (tracked files only; untracked ones stay)."""
        self.run("read-tree", "--reset", "-u", tree)

    def delete_ref(self, ref: str) -> None:
        self.run("update-ref", "-d", ref, check=False)

    def set_index_entries(self, tree: str, paths: Sequence[str]) -> None:
        """Make the real index hold ``tree``'s version of ``paths`` (removing absent ones)."""
        if not paths:
            return
        env = {"GIT_LITERAL_PATHSPECS": "1"}
        listed = self.run("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths, env=env).stdout
        present = set()
        records = []
        for rec in listed.split(b"\0"):
            if rec:
                meta, name = rec.split(b"\t", 1)
                mode, _kind, oid = meta.split()
                present.add(name)
                records.append(b"%s %s\t%s" % (mode, oid, name))
        for p in paths:
            raw = p.encode("utf-8", "surrogateescape")
            if raw not in present:
                records.append(b"0 " + b"0" * 40 + b"\t" + raw)
        self.run("update-index", "-z", "--index-info", input=b"\0".join(records) + b"\0")

    def refresh_index(self) -> None:
        self.run("update-index", "-q", "--refresh", check=False)

    # -- the operation log (see journal) -------------------------------------------------------

    def hash_files(self, paths: Sequence[str]) -> list[Oid]:
        """Store files' bytes as blobs exactly as they are (no clean filters, no eol changes)."""
        if not paths:
            return []
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\n" for p in paths)
        out = self.out("hash-object", "-w", "--no-filters", "--stdin-paths", input=data)
        return [Oid(x) for x in out.split()]

    def mktree(self, entries: Iterable[tuple[str, str, str]]) -> Oid:
        """A tree from (mode, oid, name) entries of one folder."""
        recs = []
        for mode, oid, name in entries:
            kind = {"040000": "tree", "160000": "commit"}.get(mode, "blob")
            recs.append(f"{mode} {kind} {oid}\t".encode() + name.encode("utf-8", "surrogateescape"))
        data = b"".join(r + b"\0" for r in recs)
        return Oid(self.out("mktree", "-z", "--missing", input=data).strip())

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def log_entries(self, ref: str, limit: int | None = None) -> list[tuple[Oid, str]]:
        """(commit, message) along the first-parent chain of ``ref``, newest first."""
        key = ("log", ref, limit)
        if key in self._memo:
            return list(self._memo[key])
        args = ["log", "--first-parent", "-z", "--format=%H%x01%B"]
        if limit is not None:
            args.append(f"-n{limit}")
        proc = self.run(*args, f"{ref}^{{commit}}", "--", check=False)
        if proc.returncode != 0:  # no such ref yet
            self._memo[key] = []
            return []
        out = proc.stdout.decode("utf-8", "surrogateescape")
        result = []
        for rec in out.split("\0"):
            if rec.strip():
                oid, _, message = rec.lstrip("\n").partition("\x01")
                result.append((Oid(oid), message))
        self._memo[key] = list(result)
        return result

    def set_ref(self, ref: str, new: str | None, old: str | None) -> bool:
        """Move (or delete, ``new`` None) a ref if it still holds ``old``; False when it moved."""
        for key in [k for k in self._memo if k[0] == "log" and k[1] == ref]:
            del self._memo[key]
        zero = "0" * 40
        line = f"update {ref} {new} {old or zero}" if new else f"delete {ref} {old or zero}"
        proc = self.run(
            "update-ref", "--stdin", input=f"start\n{line}\nprepare\ncommit\n".encode(), check=False
        )
        return proc.returncode == 0

    def reset_index(self, tree: str) -> None:
        """Make the real index hold ``tree``, keeping stat data of unchanged entries."""
        self.run("read-tree", "--reset", tree)
        self.refresh_index()

    # -- linked worktrees, and reading other folders (bisect, worktree, doctor) ----------------

    def worktree_add(self, path: str, commit: str, lock_reason: str | None = None) -> None:
        """A linked worktree at ``path`` (absolute, new or empty) with a detached HEAD at
        ``commit``. With ``lock_reason`` it is a scratch tree: locked (``git worktree prune``
        leaves it alone, the reason names its owner), not checked out, and no hook runs."""
        args = ["-c", "checkout.workers=0", "worktree", "add", "--quiet", "--detach"]
        if lock_reason is not None:
            args = ["-c", "core.hooksPath=/dev/null", *args, "--no-checkout", "--lock"]
            args += ["--reason", lock_reason]
        proc = self.run(*args, "--", path, commit, check=False)
        if proc.returncode != 0:
            raise PatchstackError(
                f"git could not make a worktree at {path}: "
                + proc.stderr.decode("utf-8", "replace").strip(),
                "give a new or empty folder",
            )

    def worktree_remove(self, path: str) -> None:
        """Unregister the linked worktree at ``path`` and delete it (even locked, edited or
        already gone)."""
        self.run("worktree", "remove", "--force", "--force", "--", path)

    def worktrees(self) -> list[WorktreeInfo]:
        """Every worktree of the repository, the main one first, each with its git dir."""
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        admin: dict[str, str] = {}  # realpath of a linked worktree -> its git dir
        folder = os.path.join(self.common_dir, "worktrees")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            with contextlib.suppress(OSError):
                with open(os.path.join(folder, name, "gitdir"), "rb") as f:
                    dotgit = os.fsdecode(f.read().rstrip(b"\n"))
                admin[os.path.realpath(os.path.dirname(dotgit))] = os.path.join(folder, name)
        result = []
        for block in out.split(b"\0\0"):
            fields: dict[str, str] = {}
            for rec in block.split(b"\0"):
                key, _, value = os.fsdecode(rec).partition(" ")
                if key:
                    fields[key] = value
            if "worktree" not in fields:
                continue
            path = fields["worktree"]
            git_dir = admin.get(os.path.realpath(path), self.common_dir if not result else "")
            result.append(
                WorktreeInfo(
                    path,
                    Oid(fields.get("HEAD", "")),
                    fields.get("branch"),
                    git_dir,
                    fields.get("locked"),
                    "prunable" in fields,
                )
            )
        return result

    def switch_detached(self, commit: str) -> None:
        """This (scratch) worktree: HEAD detached at ``commit``, index and files exactly its
        tree, every untracked and ignored file removed; no hook runs."""
        quiet = ("-c", "core.hooksPath=/dev/null", "-c", "checkout.workers=0")  # 0: one per core
        self.run(*quiet, "checkout", "--quiet", "--detach", "--force", commit, "--")
        self.run(*quiet, "clean", "-ffdxq")

    def log_first_parent(self, rng: str) -> list[tuple[Oid, str]]:
        """(commit, subject) along the first-parent history of ``rng``, oldest first."""
        return [
            (oid, subject) for oid, subject, _ in self._log_records(["--first-parent"], rng, ())
        ]

    def first_parent(self, commit: str) -> Oid | None:
        return self.rev_parse(commit + "^1")

    def ls_files_glob(self, *patterns: str) -> list[str]:
        """Tracked paths matching glob ``patterns`` from the top (``**/pyproject.toml``);
        callers build patterns from names without wildcards."""
        specs = [f":(glob,top){p}" for p in patterns]
        out = self.run("ls-files", "-z", "--", *specs).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _tree_entries(data: bytes, oid_len: int) -> dict[bytes, str]:
    """name -> mode (six digits) of a raw tree object."""
    entries = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = data[pos:space].decode().rjust(6, "0")
        pos = nul + 1 + oid_len
    return entries


def _fi_path(path: str) -> bytes:
    raw = path.encode("utf-8", "surrogateescape")
    if b"\n" in raw or raw.startswith(b'"'):
        raw = b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'
    return raw


class FastImport:
    """One ``git fast-import`` stream: many blobs and commits, one process, one pack.

    Commits are written to a scratch ref that is deleted before the stream ends, so nothing but
    objects is left behind. ``commit`` returns the new commit's id (asked with ``get-mark``).
    """

    SCRATCH = "refs/patchstack/scratch"

    def __init__(self, git: Git) -> None:
        self.proc = git.spawn(
            ["fast-import", "--quiet", "--done", "--cat-blob-fd=1"], stdin=subprocess.PIPE
        )
        self.mark = 0
        self.closed = False
        self.marks: dict[str, int] = {}  # commits of this stream: `from <id>` cannot see them

    def _write(self, data: bytes) -> None:
        self.proc.stdin.write(data)

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
        changes: Sequence[tuple[str, str, str] | tuple[str, str]],
    ) -> Oid:
        """``changes``: (mode, blob id or mark, path) to set, ("D", path) to delete; a tree
        for the path "" sets the whole tree. An empty ``parent`` makes a root commit."""
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
                out.append(b"D " + _fi_path(change[1]) + b"\n")
            else:
                mode, ref, path = change  # type: ignore[misc]
                out.append(f"M {mode} {ref} ".encode() + (_fi_path(path) or b'""') + b"\n")
        out.append(b"\nget-mark :%d\n" % self.mark)
        self._write(b"".join(out))
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().decode().strip()
        if len(line) != 40:
            self.close()
            raise GitFailure("git fast-import failed")
        self.marks[line] = self.mark
        return Oid(line)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._write(f"reset {self.SCRATCH}\nfrom {'0' * 40}\n\ndone\n".encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.stdout.close()
        if self.proc.wait() != 0:
            raise GitFailure("git fast-import failed")


class TempIndex:
    """A throwaway index file inside the git directory, for building trees."""

    def __init__(self, git: Git) -> None:
        import tempfile

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

    def add_paths(self, paths: Sequence[str]) -> None:
        data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths)
        self.git.run(
            "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=data, env=self.env
        )

    def write_tree(self) -> Oid:
        return Oid(self.git.out("write-tree", env=self.env).strip())

    def copy_from(self, index_file: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.copy2(index_file, self.path)  # keeps mtime: racy entries stay racy

    def try_write_tree(self) -> Oid | None:
        """The index as a tree, or None when it cannot be one (unmerged entries)."""
        proc = self.git.run("write-tree", env=self.env, check=False)
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def stat_dirty(self) -> list[tuple[str, str]]:
        """(index mode, path) of tracked entries whose file may differ (stat data, no refresh)."""
        out = self.git.run("diff-files", "-z", "--no-renames", env=self.env).stdout
        recs = out.split(b"\0")
        result = []
        for meta, path in zip(recs[0::2], recs[1::2], strict=False):
            if meta.startswith(b":"):
                result.append(
                    (meta[1:].split()[0].decode(), path.decode("utf-8", "surrogateescape"))
                )
        return list(dict.fromkeys(result))

    def untracked(self, exclude: str | None) -> list[str]:
        args = ["ls-files", "-z", "--others", "--exclude-standard", "--", "."]
        if exclude:
            args.append(":(exclude,literal)" + exclude)
        out = self.git.run(*args, env=self.env).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def set_entries(self, records: Sequence[tuple[str, str, str]]) -> None:
        """(mode, oid, path) records; mode "0" removes the path."""
        if records:
            data = b"".join(
                f"{mode} {oid}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
                for mode, oid, path in records
            )
            self.git.run("update-index", "-z", "--index-info", input=data, env=self.env)
