"""What the terminal conventions ask of git, for the CLI: the pager and the colour setting the
user configured (read as git reads them, `git.interactive`), and the words shell completion
offers (revisions, and patch names by applied state). Completion is silent on any error: it
returns nothing rather than a message in the middle of the user's command line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..checkout import open_checkout
from ..git import find_repo
from ..git.interactive import color_setting, pager_command, start_pager

__all__ = [
    "color_setting",
    "completion_patches",
    "completion_revisions",
    "pager_command",
    "start_pager",
]

# Revisions git's own completion offers besides the refs, when they exist.
_SPECIAL = ("HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD")


def completion_revisions() -> list[str]:
    """The refs of the repository here (short names) and the special revisions it has."""
    try:
        git = find_repo(os.getcwd())
        try:
            names = git.ref_names()
        finally:
            git.close()
    except Exception:
        return []
    special = [r for r in _SPECIAL if os.path.exists(os.path.join(git.git_dir, r))]
    return special + names


def completion_patches(series_dir: str | None, applied: bool | None) -> Sequence[tuple[str, str]]:
    """(name, tag) of the series' patches: all, or only the applied (True) or unapplied
    (False) ones; nothing on any error."""
    try:
        ws = open_checkout(series_dir)
        try:
            if applied is None:
                return [(e.name, e.tag) for e in ws.load_series().entries]
            from .listing import list_series  # (not loaded for the colour setting)

            rows = list_series(ws).rows
        finally:
            ws.git.close()
    except Exception:
        return []
    return [(r.name, r.tag) for r in rows if r.applied == applied]
