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

import json
import os
from dataclasses import dataclass, field
from typing import Any

from . import git as gitmod
from .errors import InputError, PatchstackError
from .model import paths
from .model.patchfile import Patch, parse_patch
from .model.series import Entry, Series, parse_series

DEFAULT_DIR = "patches"


@dataclass
class Checkout:
    git: gitmod.Git
    series_dir: str  # absolute
    cwd: str
    command: str = ""  # the command line, as the operation log records it
    _parsed: dict[Any, tuple[bytes, Patch]] = field(default_factory=dict, repr=False)

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
        if not self.exists():
            raise PatchstackError(
                f"no series file at {self.display(self.series_path)}",
                "create one with 'patchstack init', or point --dir / PATCHSTACK_DIR at it",
            )
        shown = self.display(self.series_path)
        with open(self.series_path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            series = parse_series(f.read(), shown)
        inside = os.path.realpath(self.series_dir)
        for entry in series.entries:
            path = self.patch_path(entry.name)
            if not os.path.isfile(path):
                raise InputError(
                    shown,
                    entry.lineno,
                    f"patch file '{entry.name}' not found",
                    f"add {self.display(path)} or remove the line",
                )
            real = os.path.realpath(path)
            if os.path.commonpath([real, inside]) != inside:
                raise InputError(
                    shown,
                    entry.lineno,
                    f"patch file '{entry.name}' is a symbolic link out of the series directory"
                    f" (to {real})",
                    "copy the patch into the series directory instead of linking to it",
                )
        return series

    def read_patch(self, entry: Entry) -> tuple[bytes, Patch]:
        """The bytes and the checked parse of a patch file (parsed once per command unless
        the file changes)."""
        path = self.patch_path(entry.name)
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = (entry.name, entry.strip_level, st.st_size, st.st_mtime_ns, st.st_ino)
            if key in self._parsed:
                return self._parsed[key]
            data = f.read()
        shown = self.display(path)
        patch = parse_patch(data, shown, entry.strip_level)
        paths.check_patch(patch, shown, self.in_tree)
        self._parsed[key] = (data, patch)
        return data, patch


def open_checkout(dir_option: str | None, cwd: str | None = None) -> Checkout:
    cwd = os.path.abspath(cwd or os.getcwd())
    gitmod.check_version()
    repo = gitmod.find_repo(cwd)
    chosen = dir_option or os.environ.get("PATCHSTACK_DIR")
    experiment = None if chosen else experiment_series_dir(repo)
    if chosen:
        series_dir = os.path.abspath(os.path.join(cwd, chosen))
    elif experiment:
        series_dir = experiment
    else:
        configured = repo.config("patchstack.dir")
        series_dir = os.path.abspath(os.path.join(repo.top, configured or DEFAULT_DIR))
    return Checkout(repo, series_dir, cwd)


def experiment_path(git_dir: str) -> str:
    """Where ``patchstack worktree`` notes, in a linked worktree's own git dir, the series
    directory it was made from (so that commands run there find the series)."""
    return os.path.join(git_dir, "patchstack", "worktree.json")


def experiment_series_dir(git: gitmod.Git) -> str | None:
    if os.path.realpath(git.git_dir) == os.path.realpath(git.common_dir):
        return None  # the main worktree: its git dir is the common one
    try:
        with open(experiment_path(git.git_dir), encoding="utf-8") as f:
            found = json.load(f).get("series_dir")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) and os.path.isabs(found) else None
