"""The work tree's files as blobs, their bytes exactly as they are (no filters): what a
snapshot stores of the files that differ from the index, and of the series folder."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence

from ..git import Git
from ..git.objects import file_bytes, staged_mode

DEFAULT_MAX_UNTRACKED = 64 * 1024 * 1024


def max_untracked(git: Git) -> int:
    value = git.config("patchstack.snapshotMaxSize")
    if value:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
        mult = units.get(value[-1].lower(), 1)
        with contextlib.suppress(ValueError):
            return int(value.rstrip("kKmMgG")) * mult
    return DEFAULT_MAX_UNTRACKED


def inside(path: str, folder: str | None) -> bool:
    return bool(folder) and (path + "/").startswith((folder or "").rstrip("/") + "/")


def mode_of(st: os.stat_result) -> str:
    """The mode git stages for a file (`git.objects.staged_mode`: a regular file is executable
    by its owner's bit)."""
    return staged_mode(st) or "100644"


def hash_paths(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob) for files and symlinks (the link text), bytes exactly as they are;
    stored in process, as loose objects, unless a scratch store would take them."""
    if in_process(git):
        with contextlib.suppress(OSError):  # (git says what it cannot read)
            return _stored(git, top, rel_paths)
    return _hashed(git, top, rel_paths)


def in_process(git: Git) -> bool:
    """Whether a snapshot's objects may be written here: not while a scratch store takes the
    objects written (`git.scratch`), nor in a repository that keeps a second object format."""
    return git.scratch is None and not git.compat_format()


def _stored(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    result: dict[str, tuple[str, str]] = {}
    for rel in rel_paths:
        full = os.path.join(top, rel)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):  # (a folder of it is a file now)
            continue
        entry = git.write_file(full, st)
        if entry is not None:
            result[rel] = entry
    return result


def nested(paths: Iterable[str]) -> bool:
    """Whether one of ``paths`` is a folder of another (a file turned into a folder)."""
    listed = set(paths)
    for path in listed:
        while "/" in path:
            path = path.rpartition("/")[0]
            if path in listed:
                return True
    return False


def _hashed(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    result: dict[str, tuple[str, str]] = {}
    regular: list[tuple[str, str]] = []
    link_files: list[tuple[str, str]] = []
    temps: list[str] = []
    try:
        for rel in rel_paths:
            full = os.path.join(top, rel)
            try:
                st = os.lstat(full)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISLNK(st.st_mode):
                fd, tmp = tempfile.mkstemp(prefix="patchstack-link-", dir=git.git_dir)
                with os.fdopen(fd, "wb") as f:
                    f.write(file_bytes(full, st))
                temps.append(tmp)
                link_files.append((rel, tmp))
            elif stat.S_ISREG(st.st_mode):
                regular.append((rel, mode_of(st)))
        oids = git.hash_files(
            [tmp for _rel, tmp in link_files] + [os.path.join(top, r) for r, _m in regular]
        )
        for (rel, _tmp), oid in zip(link_files, oids, strict=False):
            result[rel] = ("120000", oid)
        for (rel, mode), oid in zip(regular, oids[len(link_files) :], strict=False):
            result[rel] = (mode, oid)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return result
