"""Reading patches from elsewhere: a quilt series (as GNU patch reads it, see
`model.quilt_tolerance`), a range of commits, an mbox (as ``git am`` reads it)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import InputError, PatchstackError
from ..git import CommitMeta, Git
from ..model import trailers
from ..model.ids import Oid
from ..model.imported import (
    normalize_author,
    normalize_date,
    parse_quilt_series,
    patch_message,
    quilt_name,
    slug,
    unique_name,
)
from ..model.message import guard_diff_starts
from ..model.patchfile import Patch, decode, parse_patch
from ..model.quilt_tolerance import tolerate
from ..model.series import name_key, validate_name


@dataclass(frozen=True)
class Source:
    """One patch to import, read but not yet applied."""

    name: str
    origin: str  # for messages: a file, "mail 3 of FILE", "commit 1a2b3c4d5e6f"
    message: str  # subject, blank line, description; no patchstack trailers
    author: str | None  # "Name <email>"
    date: str | None  # anything git accepts
    tag: str | None = None
    labels: tuple[str, ...] = ()
    diff: bytes | None = None  # the patch to apply (quilt, mbox)
    strip: int = 1
    patch: Patch | None = None
    trees: tuple[Oid, Oid] | None = None  # (parent tree, tree) of a commit


def split_own_trailers(message: str) -> tuple[str, str | None, str | None]:
    """(message without patchstack trailers, tag, name) from a commit message or mail body."""
    found = trailers.read(message)
    return trailers.strip(message), found.tag, found.patch


def read_quilt(
    directory: str,
    display: str,
    exists: Callable[[str], bool] = lambda _p: False,
    taken: Iterable[str] = (),
) -> tuple[list[Source], list[tuple[str, str]], list[str]]:
    """The patches of a quilt series, read as GNU patch reads them (`tolerate`), with the
    warnings that says; ``exists`` tells which paths the tree they start on has; ``taken``:
    the names already in the series (a name that clashes is numbered, see `unique_name`)."""
    series_path = os.path.join(directory, "series")
    shown = os.path.join(display, "series")
    if not os.path.isfile(series_path):
        raise PatchstackError(
            f"no quilt series file at {shown}", "give the folder that holds 'series'"
        )
    with open(series_path, encoding="utf-8", errors="surrogateescape") as f:
        lines = parse_quilt_series(f.read(), shown)
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    warnings: list[str] = []
    names = {name_key(t) for t in taken}
    folds: dict[str, tuple[str, int]] = {}  # this series' names, as macOS and Windows fold them
    created: set[str] = set()
    top = os.path.realpath(directory)
    for ql in lines:
        file_shown = os.path.join(display, ql.file)
        path = os.path.join(directory, ql.file)
        if not os.path.isfile(path):
            raise InputError(shown, ql.lineno, f"patch file '{ql.file}' not found")
        if os.path.commonpath([os.path.realpath(path), top]) != top:
            raise InputError(
                shown,
                ql.lineno,
                f"patch file '{ql.file}' is a symbolic link out of the quilt directory",
                "copy the patch into the quilt directory instead of linking to it",
            )
        name = quilt_name(ql.file)
        problem = validate_name(name)
        if problem:
            raise InputError(shown, ql.lineno, problem)
        wanted, name = name, unique_name(name, names)
        other, at = folds.setdefault(name_key(wanted), (wanted, ql.lineno))
        if other != wanted:
            warnings.append(
                f"{shown}:{ql.lineno}: '{wanted}' and '{other}' (line {at}) differ only by case:"
                f" one file on macOS and Windows, so it is imported as '{name}'"
            )
        with open(path, "rb") as fh:
            data = fh.read()
        if not _has_diff(data):
            skipped.append((ql.file, "holds no diff"))
            continue
        tolerated = tolerate(data, file_shown, ql.strip, lambda p: p in created or exists(p))
        warnings.extend(tolerated.warnings)
        data = tolerated.data
        if not _has_diff(data):
            skipped.append((ql.file, "holds only binary changes without data"))
            continue
        try:
            patch = parse_patch(data, file_shown, ql.strip)
        except InputError as exc:
            raise _named_by(exc, shown, ql.lineno, ql.file, ql.strip) from None
        created.update(f.new_path for f in patch.files if f.new_path and not f.old_path)
        message = patch_message(patch, name.removesuffix(".patch").removesuffix(".diff"))
        if tolerated.notes:
            message = message.rstrip("\n") + "\n\n" + "\n".join(tolerated.notes) + "\n"
        sources.append(
            Source(
                name,
                file_shown,
                message,
                normalize_author(patch.author),
                normalize_date(patch.date),
                ql.tag,
                ql.labels,
                diff=data,
                strip=ql.strip,
                patch=patch,
            )
        )
    return sources, skipped, warnings


def _named_by(exc: InputError, series: str, lineno: int, file: str, strip: int) -> InputError:
    """A patch file's error, saying which series line names it, and how it reads it."""
    where = f"{exc.path}:{exc.line}: " if exc.line else f"{exc.path}: "
    message = exc.message.removeprefix(where)
    entry = file + (f" -p{strip}" if strip != 1 else "")
    return InputError(
        exc.path, exc.line, f"{message} (series line {series}:{lineno}: '{entry}')", exc.hint
    )


def _has_diff(data: bytes) -> bool:
    return re.search(rb"^(diff --git |--- |@@ )", data, re.MULTILINE) is not None


def read_commits(
    git: Git, rng: str, taken: Iterable[str] = ()
) -> tuple[list[Source], list[tuple[str, str]], Oid | None]:
    """Sources for the commits of ``rng``, and the parent of the first (the natural base);
    ``taken``: the names already in the series."""
    if ".." not in rng:
        raise PatchstackError(f"'{rng}' is not a range", "give A..B, e.g. origin/main..HEAD")
    commits = git.commit_range(rng)
    if not commits:
        raise PatchstackError(f"the range '{rng}' holds no commits", "give A..B with A below B")
    merges = [c.oid[:12] for c in commits if len(c.parents) > 1]
    if merges:
        raise PatchstackError(
            "merge commits cannot become patches: " + ", ".join(merges),
            "import a linear range (rebase it first), or split the range around the merges",
        )
    trees = {c.oid: c.tree for c in commits}
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    names = {name_key(t) for t in taken}
    for c in commits:
        parent_tree = (
            git.fmt.empty_tree
            if not c.parents
            else trees.get(c.parents[0]) or git.tree_of(c.parents[0])
        )
        if parent_tree == c.tree:
            skipped.append((f"commit {c.oid[:12]}", "changes nothing"))
            continue
        sources.append(commit_source(c, parent_tree, c.tree, names))
    first = commits[0]
    return sources, skipped, (first.parents[0] if first.parents else None)


def commit_source(
    c: CommitMeta, before: Oid, after: Oid, taken: set[str], origin: str | None = None
) -> Source:
    """The patch a commit becomes: its message (without patchstack trailers; a diff pasted
    in it indented, `message.guard_diff_starts`), author and date, the tag and name its
    trailers ask for (the name numbered when ``taken`` has it, by case too), and the change
    ``before -> after``."""
    message, tag, wanted = split_own_trailers(c.message)
    message = guard_diff_starts(message)
    return Source(
        _chosen_name(wanted, message, taken),
        origin or f"commit {c.oid[:12]}",
        message,
        c.author,
        c.date,
        tag,
        (),
        trees=(before, after),
    )


def _chosen_name(wanted: str | None, message: str, taken: set[str]) -> str:
    """The name a trailer asks for, else the subject's slug; numbered when taken (by case
    too)."""
    name = wanted if wanted and validate_name(wanted) is None else None
    if name is None:
        subject = " ".join(message.split("\n\n", 1)[0].split())
        name = slug(subject)
    return unique_name(name, taken)


def read_mbox(
    git: Git, path: str, display: str, taken: Iterable[str] = ()
) -> tuple[list[Source], list[tuple[str, str]]]:
    if not os.path.isfile(path):
        raise PatchstackError(f"no such file: {display}", "give an mbox file")
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    names = {name_key(t) for t in taken}
    with tempfile.TemporaryDirectory(prefix="patchstack-mbox-") as tmp:
        split_dir = os.path.join(tmp, "split")
        os.mkdir(split_dir)
        mails = git.mailsplit(path, split_dir)
        for k, mail_path in enumerate(mails, start=1):
            where = f"mail {k} of {display}"
            with open(mail_path, "rb") as f:
                info, body, diff = git.mailinfo(f.read(), tmp)
            if not diff.strip():
                skipped.append((where, "holds no patch (a cover letter?)"))
                continue
            patch = parse_patch(diff, where)
            text, tag, wanted = split_own_trailers(decode(body).strip("\n"))
            subject = info.get("Subject", "").strip() or "patch"
            message = subject + ("\n\n" + text.strip("\n") if text.strip() else "") + "\n"
            author = None
            if info.get("Email") or info.get("Author"):
                author = normalize_author(f"{info.get('Author', '')} <{info.get('Email', '')}>")
            sources.append(
                Source(
                    _chosen_name(wanted, message, names),
                    where,
                    message,
                    author,
                    normalize_date(info.get("Date")),
                    tag,
                    (),
                    diff=diff,
                    strip=1,
                    patch=patch,
                )
            )
    return sources, skipped
