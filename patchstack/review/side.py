"""Read one side of a review: a series and its patches, from a git revision or a directory.

``OLD``/``NEW`` on the command line are each either an existing directory holding a
``series`` file, or a revision of the repository at hand, in which the series directory is
found at the same path as in the work tree (``--dir``, ``PATCHSTACK_DIR``, ``patchstack.dir``,
default ``patches/``). A revision is read with one ``ls-tree`` and the persistent ``cat-file``
stream: nothing is checked out. An existing directory wins over a revision of the same name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import replace

from ..commands.refresh.drift import walk
from ..commands.refresh.resolutions import BadRecord, read_bounded
from ..commands.refresh.reuse import reused_of
from ..engine.evidence import recorded
from ..errors import InputError, PatchstackError, RefusedError
from ..git import Git
from ..journal.oplog import effective, entries
from ..model.ids import Oid
from ..model.patchfile import parse_patch
from ..model.series import Series, parse_series
from .compare import BaseChange, Hit, Review, SeriesState, review
from .states import RESOLUTIONS, Files

RESOLUTION_MAX = 16 << 20  # bytes of one resolution file the review reads (larger: not read)


class NoSeries(PatchstackError):
    """The revision or directory has no series file."""


def _state(
    label: str, where: str, files: dict[str, bytes], commit: str | None, resolutions: Files
) -> SeriesState:
    """Parse the series file and every patch it names; ``where`` prefixes names in errors."""
    series_path = where + "series"
    if "series" not in files:
        raise NoSeries(
            f"no series file at {series_path}",
            "point --dir at the series directory (its path inside the repository)",
        )
    series = parse_series(files["series"].decode("utf-8", "surrogateescape"), series_path)
    patches = {}
    for entry in series.entries:
        if entry.name not in files:
            raise InputError(series_path, entry.lineno, f"patch file '{entry.name}' not found")
        data = files[entry.name]
        patches[entry.name] = (data, parse_patch(data, where + entry.name, entry.strip_level))
    return SeriesState(label, series, patches, commit, resolutions)


def from_directory(path: str, label: str | None = None) -> SeriesState:
    files = {}
    series_file = os.path.join(path, "series")
    if os.path.isfile(series_file):
        with open(series_file, "rb") as f:
            files["series"] = f.read()
        series = parse_series(files["series"].decode("utf-8", "surrogateescape"), series_file)
        for entry in series.entries:
            p = os.path.join(path, entry.name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    files[entry.name] = f.read()
    found = _folder_resolutions(os.path.join(path, RESOLUTIONS.rstrip("/")))
    return _state(label or path, os.path.join(path, ""), files, None, found)


def _folder_resolutions(folder: str) -> dict[str, bytes | None]:
    """The files of a resolutions/ folder, read without following a link (None: a file that
    is not a regular one, or too large to read)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return {}
    if not stat.S_ISDIR(st.st_mode):
        return {"": None}  # a link or a file in the folder's place
    found: dict[str, bytes | None] = {}
    for name in sorted(os.listdir(folder)):
        try:
            found[name] = read_bounded(os.path.join(folder, name), RESOLUTION_MAX)
        except BadRecord:
            found[name] = None
    return found


def from_revision(git: Git, rev: str, folder: str) -> SeriesState:
    commit = git.rev_parse(rev)
    if commit is None:
        raise PatchstackError(
            f"'{rev}' is neither a directory nor a revision of {git.top}",
            "give two revisions (e.g. origin/main HEAD) or two series directories",
        )
    prefix = folder.strip("/") + "/" if folder.strip("/") not in ("", ".") else ""
    listing = git.ls_tree(commit, prefix or None)
    names = {p[len(prefix) :]: oid for p, (mode, oid) in listing.items() if p.startswith(prefix)}
    files = {}
    if "series" in names:
        files["series"] = git.read_blob(names["series"])
        series = parse_series(files["series"].decode("utf-8", "surrogateescape"), "series")
        for entry in series.entries:
            if entry.name in names:
                files[entry.name] = git.read_blob(names[entry.name])
    found: dict[str, bytes | None] = {}
    for path, (mode, oid) in listing.items():
        if path == prefix + RESOLUTIONS.rstrip("/"):
            found[""] = None  # a link or a file in the folder's place
        elif path.startswith(prefix + RESOLUTIONS):
            regular = mode in ("100644", "100755")
            found[path[len(prefix + RESOLUTIONS) :]] = git.read_blob(oid) if regular else None
    return _state(rev, f"{rev}:{prefix}", files, commit, found)


def load(arg: str, git: Git | None, folder: str | None) -> SeriesState:
    """``arg`` as a directory when it is one, else as a revision."""
    if os.path.isdir(arg):
        return from_directory(arg)
    if git is None or folder is None:
        raise PatchstackError(
            f"'{arg}' is not a directory, and there is no repository here to read it from",
            "run inside the repository that holds the series, or give two directories",
        )
    return from_revision(git, arg, folder)


def base_change(git: Git | None, old: SeriesState, new: SeriesState) -> BaseChange:
    """The move of the base, with commit counts when both bases are in the repository."""
    a, b = old.series.base, new.series.base
    ahead = behind = None
    hits: tuple[Hit, ...] = ()
    if git is not None and a and b and a != b and git.rev_parse(a) and git.rev_parse(b):
        ahead, behind = git.ahead_behind(a, b)
        if not behind:
            hits = _hits(git, a, b, (old, new))
    return BaseChange(a, b, old.series.base_ref, new.series.base_ref, ahead, behind, hits)


def _hits(git: Git, a: str, b: str, sides: tuple[SeriesState, SeriesState]) -> tuple[Hit, ...]:
    """The upstream commits of a..b that changed a file some patch of either side changes."""
    owners: dict[str, list[str]] = {}
    for side in sides:
        for name, (_data, patch) in side.patches.items():
            for path in patch.paths:
                if name not in owners.setdefault(path, []):
                    owners[path].append(name)
    _count, touching, _every = walk(git, a, b, owners)
    return tuple(Hit(c.oid, c.subject, c.patches) for c in touching)


def load_review(old_arg: str, new_arg: str, git: Git | None, folder: str | None) -> Review:
    """The review from ``old_arg`` to ``new_arg``. One side without a series file (the pull
    request that starts the series, or removes it) counts as an empty series; both is an error.
    """
    sides: list[SeriesState | None] = []
    missing: list[NoSeries] = []
    for arg in (old_arg, new_arg):
        try:
            sides.append(load(arg, git, folder))
        except NoSeries as exc:
            sides.append(None)
            missing.append(exc)
    if len(missing) == 2:
        raise missing[0]
    args = (old_arg, new_arg)
    old, new = (s or SeriesState(a, Series(), {}) for s, a in zip(sides, args, strict=True))
    if git is None:
        return review(old, new, base_change(git, old, new))
    done = review(old, new, base_change(git, old, new), _blob(git), _subject(git))
    marks = reused(git, new)
    if not marks:
        return done
    rows = tuple(
        replace(p, reused=marks[p.new.name]) if p.new and p.new.name in marks else p
        for p in done.patches
    )
    return replace(done, patches=rows)


LOG_DEPTH = 200  # entries of the operation log searched for the refresh that made a version


def reused(git: Git, new: SeriesState) -> dict[str, tuple[str, ...]]:
    """Patch -> the hunks a recorded resolution settled in the refresh that made the version
    ``new`` holds: a refresh entry of the operation log (in effect, the newest first) whose
    note names the patch and whose series after it holds these very bytes."""
    try:
        log = effective(entries(git, LOG_DEPTH))
    except PatchstackError:  # no log, or one that cannot be read: nothing to mark
        return {}
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for entry in log:
        if entry.kind != "refresh" or entry.after is None:
            continue
        notes = [r for r in map(reused_of, entry.notes) if r and r[0] in new.patches]
        for name, hunks in notes:
            if name in seen:
                continue
            seen.add(name)  # the newest refresh that says so decides
            at = git.entries_at(Oid(entry.after.series), [name]).get(name)
            if at is not None and git.read_blob(at[1]) == new.patches[name][0]:
                found[name] = hunks
    return found


def _blob(git: Git) -> Callable[[str], bytes | None]:
    """A blob by its id; only a full id is looked up (a resolution file names it, and a name
    such as ``REV:PATH`` would read any file of the repository into the review)."""

    def read(oid: str) -> bytes | None:
        if not git.fmt.is_full(oid):
            return None
        try:
            return git.read_blob(oid) if git.has_objects([oid])[oid] else None
        except PatchstackError:
            return None

    return read


def _subject(git: Git) -> Callable[[str], str]:
    def subject(oid: str) -> str:
        if not git.fmt.is_full(oid):
            return ""
        try:
            return recorded(git, oid).subject
        except PatchstackError:
            return ""

    return subject


TEMPLATES = ".patchstack/templates"


def templates_at(git: Git, rev: str) -> dict[str, str]:
    """The template overrides of ``rev``'s ``.patchstack/templates/`` (name -> text), read
    from git objects: a CI job that reviews a pull request names the base, so the templates
    the pull request brings never run. A link among them is refused, as in a folder."""
    commit = git.rev_parse(rev)
    if commit is None:
        raise PatchstackError(
            f"--templates-from: '{rev}' is not a revision of {git.top}",
            "give the revision whose .patchstack/templates/ to use (the pull request's base)",
        )
    found = {}
    for path, (mode, oid) in git.ls_tree(commit, TEMPLATES).items():
        name = path[len(TEMPLATES) + 1 :]
        if mode == "120000":
            raise RefusedError(
                f"{rev}:{path}: the template is a symbolic link",
                "templates are read from the repository; replace the link by a file",
            )
        if mode in ("100644", "100755"):
            found[name] = git.read_blob(oid).decode("utf-8", "replace")
    return found
