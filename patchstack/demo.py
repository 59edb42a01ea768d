"""The bundled example: a sandbox fork to try patchstack on, and the demo that walks the story.

The example ships as package data (``series/`` at the top of the project): the upstream tree,
the seven-patch series, and four later upstream commits. `build_sandbox` lays out

    DIR/upstream   the upstream repository at the base commit
    DIR/fork       a clone of it with the series in patches/ and every patch applied

with fixed identities and dates, so the base commit is the one the series names.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib import resources

from . import git as gitmod
from .errors import PatchstackError

UPSTREAM_IDENT = ("Upstream Maintainers", "upstream@example.org")
BASE_DATE = "2026-01-05T10:00:00+00:00"
# The user's own git configuration (signing, hooks, autocrlf) must not change the example's ids.
SEALED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class Sandbox:
    root: str
    upstream: str
    fork: str
    pull_patches: tuple[str, ...]


def example_dir() -> str:
    """The bundled example's folder (``series/`` in a checkout, package data when installed)."""
    return str(resources.files("patchstack.example"))


def _copy_tree(src: str, dest: str) -> None:
    shutil.copytree(
        src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )


def build_sandbox(root: str) -> Sandbox:
    if os.path.exists(root) and os.listdir(root):
        raise PatchstackError(f"{root} exists and is not empty", "give a new or empty folder")
    example = example_dir()
    upstream = os.path.join(root, "upstream")
    fork = os.path.join(root, "fork")
    repo = gitmod.init_repo(upstream)
    _copy_tree(os.path.join(example, "upstream"), upstream)
    env = {**gitmod.ident_env(*UPSTREAM_IDENT, BASE_DATE), **SEALED}
    base = repo.commit_all("Upstream snapshot", env)
    with open(os.path.join(example, "patches", "series"), encoding="utf-8") as f:
        series_text = f.read()
    if base not in series_text:
        raise PatchstackError(
            f"the example's base commit came out as {base}",
            "the bundled example does not match this git; please report it",
        )
    gitmod.clone(upstream, fork)
    _copy_tree(os.path.join(example, "patches"), os.path.join(fork, "patches"))
    pull_dir = os.path.join(example, "upstream-pull")
    pulls = tuple(
        sorted(os.path.join(pull_dir, f) for f in os.listdir(pull_dir) if f.endswith(".patch"))
    )
    return Sandbox(root, upstream, fork, pulls)


def upstream_pull(box: Sandbox) -> None:
    """Upstream moves: the later upstream commits land in DIR/upstream."""
    repo = gitmod.find_repo(box.upstream)
    try:
        repo.am(box.pull_patches, {**gitmod.ident_env(*UPSTREAM_IDENT), **SEALED})
    finally:
        repo.close()
