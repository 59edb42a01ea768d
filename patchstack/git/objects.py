"""Reading and writing objects: a persistent ``cat-file`` for reads, plumbing for writes."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from ..errors import GitFailure, PatchstackError
from ..model.ids import Oid
from .base import GitBase, encode_path
from .rawobjects import commit_data, split_ident, tree_data, write_whole

ARG_BUDGET = 100_000  # bytes of paths per command line


# Names of the temporary files of loose objects (with the process id: see `write_loose`).
_TEMP_NAMES = itertools.count()


class _Ended(GitFailure):
    """The persistent ``cat-file`` ended before it answered (git died of a name)."""


BATCH_COMMAND = "--batch-command"  # the one cat-file of a command's questions (`_answers`)
BATCH_COMMAND_OFF = "PATCHSTACK_NO_BATCH_COMMAND"


class Objects(GitBase):
    def read_object(self, name: str) -> tuple[str, bytes] | None:
        """(type, content) of an object (an id or ``<rev>:<path>``), or None when missing.

        A missing object is answered ``<name> missing`` (the name as given, spaces and all), a
        found one ``<id> <type> <size>``, so "missing" is recognised at the end of the line.
        """
        found: tuple[str, bytes] | None = self._batch_headers("--batch", [name], True)[0]
        return found

    def read_objects(self, names: Sequence[str]) -> list[tuple[str, bytes] | None]:
        """`read_object` of many names, pipelined (see `_batch_headers`)."""
        return list(self.each_object(names))

    def each_object(self, names: Sequence[str]) -> Iterator[tuple[str, bytes] | None]:
        """`read_objects`, each answer given as it is read (the caller's work on one overlaps
        git's reading of the next); every answer is read, even when the caller stops early."""
        return self._answers("--batch", names, True)

    def object_sizes(self, names: Sequence[str]) -> dict[str, int | None]:
        """The size of each object (None when missing), in pipelined batches."""
        result: dict[str, int | None] = {}
        for name, header in zip(names, self._batch_headers("--batch-check", names), strict=True):
            words = header.split(b" ")
            ok = len(words) == 3 and words[2].isdigit()
            result[name] = int(words[2]) if ok else None
        return result

    def read_blob(self, oid: str) -> bytes:
        found = self.read_object(oid)
        if found is None:
            raise GitFailure(f"missing object {oid}")
        return found[1]

    def has_objects(self, oids: Iterable[str]) -> dict[str, bool]:
        """Which objects exist, asked of the persistent ``cat-file --batch-check``."""
        names = list(dict.fromkeys(oids))
        headers = self._batch_headers("--batch-check", names)
        return {
            name: not header.endswith((b" missing", b" ambiguous"))
            for name, header in zip(names, headers, strict=True)
        }

    def _batch_headers(
        self, which: str, names: Sequence[str], read_content: bool = False
    ) -> list[Any]:
        """The answers of ``cat-file`` to these names (`_answers`), all of them."""
        return list(self._answers(which, names, read_content))

    def _answers(self, which: str, names: Sequence[str], read_content: bool) -> Iterator[Any]:
        """The answers of ``cat-file`` to these names, pipelined: 256 names written at once
        (their answers fit in the pipe), then their answers read, each given as it is read.
        Header lines, or with ``read_content`` (``--batch``) (type, content) or None for a
        missing object. A caller that stops early: the answers written for still come, and
        are read. Of one ``cat-file --batch-command`` (``info``: as ``--batch-check``,
        ``contents``: as ``--batch``); of a ``cat-file WHICH`` while that one is in the middle
        of another caller's answers (``PATCHSTACK_NO_BATCH_COMMAND=1``: always)."""
        if any("\n" in name for name in names):
            raise GitFailure(f"an object name cannot hold a newline: {names!r}")
        verb = b"contents " if which == "--batch" else b"info "
        for at in range(0, len(names), 256):
            chunk = names[at : at + 256]
            key = BATCH_COMMAND
            if key in self._busy or os.environ.get(BATCH_COMMAND_OFF):
                key, verb = which, b""
            proc = self.persistent(key, ["cat-file", key])
            assert proc.stdin is not None and proc.stdout is not None
            self._busy.add(key)
            mine = True  # (until its last answer is read)
            try:
                proc.stdin.write(b"".join(verb + encode_path(name) + b"\n" for name in chunk))
                proc.stdin.flush()
                left = len(chunk)
                while left:
                    answer = self._answer(which, proc.stdout, read_content)
                    left -= 1
                    if not left:  # in step again: another question may be asked of it
                        self._busy.discard(key)
                        mine = False
                    yield answer
            except _Ended:
                said = self.ended(key)
                raise GitFailure(
                    f"git cat-file {key} ended unexpectedly" + (f": {said}" if said else "")
                ) from None
            except GeneratorExit:  # the caller stopped: the answers written for still come
                for _ in range(left):
                    self._answer(which, proc.stdout, read_content)
                raise
            except BaseException:  # (an interrupt inside a read: the stream is out of step)
                self.abandon(key)
                raise
            finally:
                if mine:
                    self._busy.discard(key)

    @staticmethod
    def _answer(which: str, stdout: IO[bytes], read_content: bool) -> Any:
        header = stdout.readline()
        if not header:
            raise _Ended(which)
        header = header.rstrip(b"\n")
        if not read_content:
            return header
        found = batch_header(header)
        return None if found is None else (found[0], stdout.read(found[1] + 1)[:-1])

    def resolve_blobs(self, names: Iterable[str]) -> dict[str, Oid | None]:
        """Full ids of (possibly abbreviated) blob ids; None where missing or ambiguous."""
        wanted = list(dict.fromkeys(names))
        result: dict[str, Oid | None] = {}
        for name, header in zip(wanted, self._batch_headers("--batch-check", wanted), strict=True):
            words = header.split(b" ")
            ok = len(words) == 3 and words[1] == b"blob"
            result[name] = Oid(words[0].decode()) if ok else None
        return result

    def object_type(self, name: str) -> str | None:
        """ "commit", "tree", "blob", "tag", or None when there is no such object."""
        words = self._batch_headers("--batch-check", [name])[0].split(b" ")
        return words[1].decode() if len(words) == 3 and words[2].isdigit() else None

    def entry_modes(self, tree: str, paths: Iterable[str]) -> dict[str, str | None]:
        """The mode of each path's entry in ``tree`` ("100644", "120000", "040000", "160000"),
        or None when absent; read from the tree objects through the persistent cat-file."""
        listings: dict[str, dict[bytes, str] | None] = {}
        result: dict[str, str | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in listings:
                found = (
                    None
                    if "\n" in folder
                    else self.read_object(f"{tree}:{folder}" if folder else tree)
                )
                listings[folder] = (
                    tree_entries(found[1], self.fmt.hexsz // 2)
                    if found and found[0] == "tree"
                    else None
                )
            entries = listings[folder]
            result[path] = entries.get(encode_path(name)) if entries else None
        return result

    def write_loose(self, kind: str, data: bytes, kept: bool = False) -> Oid:
        """Store one object as git stores a loose one (zlib of ``<kind> <size>NUL<data>``,
        read-only, moved into place whole); an object that is already there is left alone.
        While a scratch store is in use (`git.scratch`), it goes there unless ``kept`` (an
        object the repository keeps, as plumbing would write it). (A replay writes
        thousands: the folders made are remembered and the temporary file is opened by a
        name of this process, not `tempfile`'s, which cost a third of the time.)"""
        oid = self.fmt.hash(kind, data)
        real = os.path.join(self.common_dir, "objects")
        folder = os.path.join(real if kept or self.scratch is None else self.scratch, oid[:2])
        path = os.path.join(folder, oid[2:])
        if os.path.exists(path):
            return oid
        if ("loose-folder", folder) not in self._memo:
            os.makedirs(folder, exist_ok=True)
            self._memo[("loose-folder", folder)] = True
        # Level 1, git's own default for loose objects (core.looseCompression): 3-4x faster
        # than zlib's default. In the scratch store (memory) level 0, stored: 15x faster again
        # (kernel-timers' first stop: 0.15 CPU s), and the pack that keeps one deflates anew.
        throwaway = not kept and self.scratch is not None
        header = b"%s %d\0" % (kind.encode(), len(data))
        packed = zlib.compress(header + data, 0 if throwaway else 1)
        while True:
            tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{next(_TEMP_NAMES)}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
                break
            except FileExistsError:  # left by a killed process of the same id
                continue
            except FileNotFoundError:  # the folder was removed meanwhile (a git prune)
                os.makedirs(folder, exist_ok=True)
        try:
            # 0o444 whatever the umask, as git leaves them; a throwaway one's as the umask made
            write_whole(fd, packed, None if throwaway else 0o444)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return oid

    def compat_format(self) -> bool:
        """Whether the repository keeps a second object format (whose ids a loose write made
        here would not record: such repositories get their objects from git's plumbing), from
        the configuration the command read (`config`)."""
        return bool(self.config("extensions.compatObjectFormat"))

    def write_blob(self, data: bytes) -> Oid:
        """Store ``data`` as it is (``hash-object -w --stdin`` applies no filter either)."""
        if self.compat_format():
            return self.oid("hash-object", "-w", "--stdin", input=data)
        return self.write_loose("blob", data)

    def write_file(self, full: str, st: os.stat_result) -> tuple[str, Oid] | None:
        """(mode, blob) of the file or symbolic link at ``full`` (``st``: its ``lstat``) as
        ``git add`` stages it without filters: its bytes (a link's target) stored as they are,
        its mode `staged_mode`'s; None for anything else (a folder, a socket)."""
        mode = staged_mode(st)
        return None if mode is None else (mode, self.write_blob(file_bytes(full, st)))

    def hash_files(self, paths: Sequence[str]) -> list[Oid]:
        """Store files' bytes as blobs exactly as they are (no clean filters, no eol changes).

        The paths go on command lines (any byte but NUL is fine there), a batch at a time.
        """
        result: list[Oid] = []
        batch: list[str] = []
        size = 0
        for path in [*paths, None]:
            if path is None or (batch and size + len(encode_path(path)) > ARG_BUDGET):
                if batch:
                    out = self.out("hash-object", "-w", "--no-filters", "--", *batch)
                    result += [Oid(x) for x in out.split()]
                batch, size = [], 0
            if path is not None:
                batch.append(path)
                size += len(encode_path(path)) + 1
        if len(result) != len(paths):
            raise GitFailure(f"git hash-object gave {len(result)} ids for {len(paths)} files")
        return result

    def mktree(self, entries: Iterable[tuple[str, str, str]]) -> Oid:
        """A tree from (mode, oid, name) entries of one folder, as ``mktree --missing`` writes
        it (written in process: an operation-log entry makes several at every command)."""
        listed = list(entries)
        data = None if self.compat_format() else tree_data(listed, self.fmt.hexsz)
        if data is not None:
            return self.write_loose("tree", data, kept=True)
        recs = []
        for mode, oid, name in listed:
            kind = {"040000": "tree", "160000": "commit"}.get(mode, "blob")
            recs.append(f"{mode} {kind} {oid}\t".encode() + encode_path(name) + b"\0")
        return self.oid("mktree", "-z", "--missing", input=b"".join(recs))

    def commit_tree(
        self, tree: str, parents: Sequence[str], message: str, author: str, date: str
    ) -> Oid:
        """A commit whose committer equals its author, so equal inputs give equal ids; written
        in process when ``commit-tree`` would write exactly these bytes
        (`rawobjects.commit_data`)."""
        name, email = split_ident(author)
        data = (
            None
            if self.compat_format() or not self._commit_inputs(tree, parents)
            else commit_data(tree, parents, message, name, email, date)
        )
        if data is not None:
            return self.write_loose("commit", data, kept=True)
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        args = ["-c", "i18n.commitEncoding=UTF-8", "-c", "commit.gpgSign=false", "commit-tree"]
        args.append(tree)
        for p in parents:
            args += ["-p", p]
        return self.oid(*args, input=message.encode("utf-8", "surrogateescape"), env=env)

    def _commit_inputs(self, tree: str, parents: Sequence[str]) -> bool:
        """Whether ``tree`` is the id of a tree and ``parents`` the ids of distinct commits, as
        ``commit-tree`` checks before it writes (else it says what is wrong)."""
        ids = [tree, *parents]
        if len(set(ids)) != len(ids) or not all(self.fmt.is_full(i) for i in ids):
            return False
        headers = self._batch_headers("--batch-check", ids)
        kinds = [h.split(b" ")[1] if h.count(b" ") == 2 else b"" for h in headers]
        return kinds == [b"tree"] + [b"commit"] * len(parents)

    def tree_of(self, commit: str) -> Oid:
        return self.trees_of([commit])[0]

    def trees_of(self, commits: Sequence[str]) -> list[Oid]:
        """The tree of each commit (ids), asked of the persistent ``cat-file`` (``rev-parse``
        would look for a ref of each id's name first: six stat calls an id)."""
        trees: list[Oid] = []
        names = [c + "^{tree}" for c in commits]
        headers = self._batch_headers("--batch-check", names)
        for commit, header in zip(commits, headers, strict=True):
            words = header.split(b" ")
            if len(words) != 3 or words[1] != b"tree":
                raise GitFailure(f"not a commit: {commit}")
            trees.append(Oid(words[0].decode()))
        return trees

    def sweep_debris(self, since: float) -> list[str]:
        """Delete git's temporary object and pack files and fast-import crash reports made
        after ``since`` (a failed write leaves them: a full disk, a killed stream)."""
        import glob
        import os

        objects = os.path.join(self.common_dir, "objects")
        patterns = [
            os.path.join(objects, "??", "tmp_obj_*"),
            os.path.join(objects, "pack", "tmp_*"),
            os.path.join(objects, "tmp_obj_*"),
            os.path.join(self.git_dir, "fast_import_crash_*"),
            os.path.join(self.common_dir, "fast_import_crash_*"),
        ]
        removed = []
        for pattern in patterns:
            for path in glob.glob(pattern):
                try:
                    if os.lstat(path).st_mtime >= since - 1:
                        os.unlink(path)
                        removed.append(path)
                except OSError:
                    continue
        return removed

    def ident(self) -> tuple[str, str]:
        """The user's author identity as ("Name <email>", "<epoch> <tz>")."""
        proc = self.run("var", "GIT_AUTHOR_IDENT", check=False)
        if proc.returncode != 0:
            raise PatchstackError(
                "git does not know who you are",
                "set it with: git config user.name 'Your Name' && git config user.email you@x",
            )
        text = proc.stdout.decode("utf-8", "surrogateescape").strip()
        m = re.match(r"(.*>) (\d+ [+-]\d{4})\Z", text)
        if not m:
            raise GitFailure(f"unexpected identity from git var: {text}")
        return m.group(1), m.group(2)

    def now(self) -> str:
        """Now as git dates a commit, "<epoch> <tz>" (``GIT_COMMITTER_DATE`` when it is set);
        the clock in UTC when git knows no committer."""
        proc = self.run("var", "GIT_COMMITTER_IDENT", check=False)
        m = re.search(r"> (\d+ [+-]\d{4})\Z", proc.stdout.decode("utf-8", "replace").strip())
        return m.group(1) if proc.returncode == 0 and m else f"{int(time.time())} +0000"


def batch_header(header: bytes) -> tuple[str, int] | None:
    """(type, size) of a ``cat-file --batch`` answer's first line (without its newline), or
    None for a missing or ambiguous name: ``<name> missing``, the name as given, spaces and
    all, so the word is recognised at the end of the line; a found one is ``<id> <type>
    <size>``. The one reader of it (`Objects`, and `blobstream`'s own process)."""
    if header.endswith((b" missing", b" ambiguous")) or header in (b"missing", b"ambiguous"):
        return None
    words = header.split(b" ")
    if len(words) != 3 or not words[2].isdigit():
        raise GitFailure(f"unexpected answer from git cat-file: {header!r}")
    return words[1].decode(), int(words[2])


def staged_mode(st: os.stat_result) -> str | None:
    """The mode git stages for what ``lstat`` gave ``st``: a symbolic link 120000; a regular
    file 100755 when its owner may execute it (git looks at that bit alone), else 100644;
    None for anything else (a folder, a socket)."""
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    if stat.S_ISREG(st.st_mode):
        return "100755" if st.st_mode & stat.S_IXUSR else "100644"
    return None


def file_bytes(full: str, st: os.stat_result) -> bytes:
    """The bytes git stores of the file or symbolic link at ``full`` (``st``: its ``lstat``):
    the file's as they are, or the link's target."""
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(os.fsencode(full))
    with open(full, "rb") as f:
        return f.read()


def tree_entries(data: bytes, oid_len: int) -> dict[bytes, str]:
    """name -> mode (six digits) of a raw tree object."""
    entries = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = data[pos:space].decode().rjust(6, "0")
        pos = nul + 1 + oid_len
    return entries


def tree_records(data: bytes, oid_len: int) -> dict[bytes, tuple[str, str]]:
    """name -> (mode, hex id) of a raw tree object."""
    entries = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        oid = data[nul + 1 : nul + 1 + oid_len].hex()
        entries[data[space + 1 : nul]] = (data[pos:space].decode().rjust(6, "0"), oid)
        pos = nul + 1 + oid_len
    return entries
