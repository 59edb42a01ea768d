"""The checkout: a repository's work tree and its series directory, and reading the series
and patch files in it.

The series directory is chosen by ``--dir``, else ``PATCHSTACK_DIR``, else (in a worktree
made by ``patchstack worktree``) the series it was made from, else git config
``patchstack.dir`` (relative to the top of the work tree), else ``patches/`` at the top of the
work tree. Inside the work tree it is kept out of every patch commit and out of the
"uncommitted edits" the commands look at.

Nothing here writes: every change to the series directory is a file write of a plan, published
by `transaction`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from . import git as gitmod
from .errors import InputError, PatchstackError
from .model.series import Entry, Series, parse_series
from .progress import QUIET, Progress
from .store import Store

if TYPE_CHECKING:  # the patch reader is loaded when a patch file is read (a pop of files
    # already proven reads none)
    from .model.conflict import Conflict
    from .model.patchfile import Patch

DEFAULT_DIR = "patches"
SERIES = "series"  # the store's section: a series file's parse, by the digest of its bytes
# The plain path: the series file parsed and the stack read from history by every command.
NO_STATE_CACHE = "PATCHSTACK_NO_STATE_CACHE"


@dataclass
class Checkout:
    git: gitmod.Git
    series_dir: str  # absolute
    cwd: str
    command: str = ""  # the command line, as the operation log records it
    progress: Progress = field(default=QUIET, repr=False)  # what the command says meanwhile
    # How many hunks of a conflict report the command prints, from the first (their upstream
    # commits are traced, the others' are not); None: every one (--verbose, --json).
    printed: Callable[[Conflict], int] | None = field(default=None, repr=False)
    _parsed: dict[Any, tuple[bytes, Patch]] = field(default_factory=dict, repr=False)
    _series: dict[Any, Series] = field(default_factory=dict, repr=False)
    _summaries: dict[Any, tuple[bytes, PatchSummary]] = field(default_factory=dict, repr=False)
    _proven: ProvenPatches | None = field(default=None, repr=False)
    _store: Store | None = field(default=None, repr=False)
    _where: tuple[tuple[str, str], str | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _CHECKOUTS[self.git] = weakref.ref(self)

    @property
    def series_path(self) -> str:
        return os.path.join(self.series_dir, "series")

    @property
    def in_tree(self) -> str | None:
        """The series directory relative to the top of the work tree, when inside it."""
        rel = os.path.relpath(self.series_dir, self.git.top)
        return None if rel.startswith("..") else rel.replace(os.sep, "/")

    def display(self, path: str) -> str:
        rel = os.path.relpath(path, self.cwd)
        return path if rel.startswith("../..") else rel

    def patch_path(self, name: str) -> str:
        return os.path.join(self.series_dir, name)

    def exists(self) -> bool:
        return os.path.isfile(self.series_path)

    def load_series(self) -> Series:
        shown = self.display(self.series_path)
        if os.path.islink(self.series_path):
            raise InputError(
                shown,
                None,
                f"the series file is a symbolic link (to {os.path.realpath(self.series_path)});"
                " a write would replace the link with a copy",
                "make it a plain file: cp --remove-destination"
                f" {shlex.quote(os.path.realpath(self.series_path))} {shlex.quote(shown)}",
            )
        if not self.exists():
            folder = self.display(self.series_dir)
            stray = os.path.isdir(self.series_dir) and bool(os.listdir(self.series_dir))
            raise PatchstackError(
                f"no series file at {shown}"
                + (f" ({folder} is not a series folder)" if stray else ""),
                "create one with 'patchstack init', or point --dir / PATCHSTACK_DIR at it",
            )
        with open(self.series_path, "rb") as f:
            st = os.fstat(f.fileno())
            key = ("series", st.st_size, st.st_mtime_ns, st.st_ino, shown)
            if key in self._series:
                return self._series[key]
            data = f.read()
        series = self._parsed_series(data, shown)
        inside = os.path.realpath(self.series_dir)
        plain = _plain_files(self.series_dir)
        for entry in series.entries:
            if entry.name in plain:
                continue  # a plain file of the series directory itself
            path = self.patch_path(entry.name)
            if not os.path.isfile(path):
                raise InputError(
                    shown,
                    entry.lineno,
                    f"patch file '{entry.name}' {_not_a_file(path)}",
                    f"put the patch file at {self.display(path)} (a plain file), or remove the"
                    " line",
                )
            if "/" not in entry.name and not os.path.islink(path):
                continue  # a file of the series directory itself (whose real path is known)
            real = os.path.realpath(path)
            if os.path.commonpath([real, inside]) != inside:
                raise InputError(
                    shown,
                    entry.lineno,
                    f"patch file '{entry.name}' is a symbolic link out of the series directory"
                    f" (to {real})",
                    "copy the patch into the series directory instead of linking to it",
                )
        self._series[key] = series
        return series

    def _parsed_series(self, data: bytes, shown: str) -> Series:
        """``parse_series`` of these bytes, or the parse an earlier command kept of the very
        same bytes (section ``series``; ``PATCHSTACK_NO_STATE_CACHE=1``: parsed again)."""
        if os.environ.get(NO_STATE_CACHE):
            return parse_series(data.decode("utf-8", "surrogateescape"), shown)
        from .model.series_plain import from_plain, to_plain

        key = f"{hashlib.sha1(data).hexdigest()} {shown}"
        found = self.store.get(SERIES, key)
        series = from_plain(found) if found is not None else None
        if series is None:
            series = parse_series(data.decode("utf-8", "surrogateescape"), shown)
            self.store.put(SERIES, key, to_plain(series))
        return series

    def read_patch(self, entry: Entry) -> tuple[bytes, Patch]:
        """The bytes and the checked parse of a patch file (parsed once per command unless
        the file changes; a file known by its stat data is not opened again)."""
        path = self.patch_path(entry.name)
        known = self._parsed.get(_stat_key(entry, os.stat(path)))
        if known is not None:
            return known
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = _stat_key(entry, st)
            if key in self._parsed:
                return self._parsed[key]
            data = f.read()
        shown = self.display(path)
        from .model import paths
        from .model.patchfile import parse_patch

        patch = parse_patch(data, shown, entry.strip_level)
        paths.check_patch(patch, shown, self.in_tree)
        self._parsed[key] = (data, patch)
        self._proofs().put(self._proof_key(entry, data), summary_of(patch))
        return data, patch

    def proven_bytes(self, entry: Entry) -> tuple[bytes, PatchSummary]:
        """The bytes of a patch file and what it changes, proven (parsed and checked as
        `read_patch` does) by this command or, for the very same bytes, an earlier one
        (`ProvenPatches`): a long series is not parsed again by every command. A file this
        command read is known by its stat data (as `read_patch` knows it): not opened again."""
        path = self.patch_path(entry.name)
        known = self._summaries.get(_stat_key(entry, os.stat(path)))
        if known is not None:
            return known
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = _stat_key(entry, st)
            if key in self._summaries:
                return self._summaries[key]
            data = f.read()
        found = self._proofs().get(self._proof_key(entry, data))
        if found is None:
            data, patch = self.read_patch(entry)
            found = summary_of(patch)
        self._summaries[key] = (data, found)
        return data, found

    def _proof_key(self, entry: Entry, data: bytes) -> str:
        where = (self.series_dir, self.git.top)
        if self._where is None or self._where[0] != where:
            self._where = (where, self.in_tree)
        return f"{hashlib.sha1(data).hexdigest()} p{entry.strip_level} {self._where[1]}"

    def _proofs(self) -> ProvenPatches:
        if self._proven is None:
            self._proven = ProvenPatches(self.store)
        return self._proven

    @property
    def store(self) -> Store:
        """The one cache of this repository (`store`), read when first wanted."""
        if self._store is None:
            self._store = Store(os.path.join(self.git.common_dir, "patchstack", "cache"))
        return self._store

    def save_caches(self) -> None:
        """Keep what this command learned for the next one (a command that changes state
        calls it at its end, under the lock; so does ``status``, under the shared lock)."""
        if self._store is not None:
            self._store.save()


def _stat_key(entry: Entry, st: os.stat_result) -> tuple[str, int, int, int, int]:
    """A patch file as this command knows it: its name, strip level and stat data."""
    return (entry.name, entry.strip_level, st.st_size, st.st_mtime_ns, st.st_ino)


_CHECKOUTS: weakref.WeakKeyDictionary[gitmod.Git, weakref.ref[Checkout]] = (
    weakref.WeakKeyDictionary()
)


def checkout_of(git: gitmod.Git) -> Checkout | None:
    """The checkout opened on this repository object (whose cache its commands keep)."""
    found = _CHECKOUTS.get(git)
    return found() if found is not None else None


def _plain_files(folder: str) -> frozenset[str]:
    """The names of the regular files (not links) right in ``folder``, from one listing
    rather than a ``stat`` a patch (5,000 of them in a long series)."""
    try:
        with os.scandir(folder) as found:
            return frozenset(e.name for e in found if e.is_file(follow_symlinks=False))
    except OSError:
        return frozenset()


def _not_a_file(path: str) -> str:
    """Why the patch file at ``path`` cannot be read as one."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"is a symbolic link to {os.path.realpath(path)}, which does not exist"
        return "not found"
    except NotADirectoryError:
        return "not found (a part of its path is a file, not a folder)"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(st.st_mode):
        return "is a FIFO (a named pipe), not a file"
    return "is not a regular file (a socket or a device)"


class FileSummary(NamedTuple):
    path: str
    renamed: bool
    copied: bool
    old_id: str | None
    new_id: str | None
    old_mode: str | None  # "000000" for a file the patch creates; None: not said
    new_mode: str | None  # "000000" for a file the patch deletes; None: not said


class PatchSummary(NamedTuple):
    """What ``status``, a re-push and a replay's carried patches need of a patch file without
    parsing it: its paths, its file diffs' ids, and the header its commit is made from."""

    paths: tuple[str, ...]
    files: tuple[FileSummary, ...]
    subject: str | None
    description: str
    author: str | None
    date: str | None
    fields: tuple[tuple[str, str], ...] = ()  # those of the header block (`Patch.fields`)

    def message(self, fallback_subject: str) -> str:
        from .model.diff import commit_text

        return commit_text(self.subject, self.description, fallback_subject)


def summary_of(patch: Patch) -> PatchSummary:
    return PatchSummary(
        patch.paths,
        tuple(
            FileSummary(
                f.path,
                f.renamed,
                f.copied,
                f.old_id,
                f.new_id,
                "000000" if f.old_path is None else f.old_mode,
                "000000" if f.new_path is None else f.new_mode,
            )
            for f in patch.files
        ),
        patch.subject,
        patch.description,
        patch.author,
        patch.date,
        patch.fields,
    )


class ProvenPatches:
    """Patch files parsed and checked (`parse_patch`, `paths.check_patch`) by earlier
    commands, keyed by the SHA-1 of their bytes, the strip level and where the series
    directory is, with their `PatchSummary`: the ``parsed`` section of the one cache
    (`store`)."""

    SECTION = "parsed"

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> PatchSummary | None:
        found = self.store.get(self.SECTION, key)
        if found is None:
            return None
        try:
            paths, files, subject, description, author, date, header = found
            return PatchSummary(
                tuple(paths),
                tuple(FileSummary(*f) for f in files),
                subject,
                description,
                author,
                date,
                tuple((str(k), str(v)) for k, v in header),
            )
        except (TypeError, ValueError, IndexError):
            self.store.forget(self.SECTION, key)
            return None

    def put(self, key: str, summary: PatchSummary) -> None:
        files = tuple(tuple(f) for f in summary.files)
        value = (summary.paths, files, *summary[2:6], tuple(summary.fields))
        self.store.put(self.SECTION, key, value)


def open_checkout(dir_option: str | None, cwd: str | None = None) -> Checkout:
    cwd = os.path.abspath(cwd or os.getcwd())
    repo = gitmod.find_repo(cwd)  # (with a git patchstack supports)
    chosen = dir_option or os.environ.get("PATCHSTACK_DIR")
    experiment = None if chosen else experiment_series_dir(repo)
    if chosen:
        series_dir = os.path.abspath(os.path.join(cwd, chosen))
    elif experiment:
        series_dir = experiment
    else:
        configured = repo.config("patchstack.dir")
        series_dir = os.path.abspath(os.path.join(repo.top, configured or DEFAULT_DIR))
    _check_series_dir(repo, series_dir, cwd)
    return Checkout(repo, series_dir, cwd)


def _check_series_dir(repo: gitmod.Git, series_dir: str, cwd: str) -> None:
    """A series folder is a folder of its own: never the work tree itself or a folder that
    holds it (``--dir ..``), never inside the git directory."""
    real = os.path.realpath(series_dir)
    top = os.path.realpath(repo.top)
    if real == top or top.startswith(real.rstrip(os.sep) + os.sep):
        why = "it is the top of the work tree" if real == top else f"it holds the work tree {top}"
    elif any(
        (real + os.sep).startswith(os.path.realpath(d) + os.sep)
        for d in (repo.git_dir, repo.common_dir)
    ):
        why = "it is inside the git directory"
    else:
        return
    shown = os.path.relpath(series_dir, cwd)
    shown = series_dir if shown.startswith("../..") else shown
    raise PatchstackError(
        f"{shown} is not a series folder: {why}",
        "point --dir (or PATCHSTACK_DIR, git config patchstack.dir) at the folder that holds"
        " the series file, such as patches/; nothing was changed",
    )


def experiment_path(git_dir: str) -> str:
    """Where ``patchstack worktree`` notes, in a linked worktree's own git dir, the series
    directory it was made from (so that commands run there find the series)."""
    return os.path.join(git_dir, "patchstack", "worktree.json")


def experiment_note(git: gitmod.Git) -> dict[str, Any] | None:
    """What ``patchstack worktree`` noted in this linked worktree (None elsewhere)."""
    if os.path.realpath(git.git_dir) == os.path.realpath(git.common_dir):
        return None  # the main worktree: its git dir is the common one
    try:
        with open(experiment_path(git.git_dir), encoding="utf-8") as f:
            note = json.load(f)
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def experiment_series_dir(git: gitmod.Git) -> str | None:
    found = (experiment_note(git) or {}).get("series_dir")
    return found if isinstance(found, str) and os.path.isabs(found) else None
