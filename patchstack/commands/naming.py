"""Names the series-editing commands take: a patch of the series, and a new patch name."""

from __future__ import annotations

import os

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..model.series import Series, name_key, validate_name


def new_patch_name(text: str) -> str:
    """A new patch's file name: ``.patch`` added unless it ends in .patch or .diff."""
    name = text if text.endswith((".patch", ".diff")) else text + ".patch"
    problem = validate_name(name)
    if problem:
        raise PatchstackError(problem, "use letters, digits and ._+@=~- only")
    return name


def require_free(ws: Checkout, series: Series, name: str, renaming: str | None = None) -> None:
    """Refuse a name the series has (or one that differs from it only by case), or whose
    file would overwrite one in the directory; ``renaming``: the patch that takes the name."""
    if name in series:
        raise PatchstackError(f"patch '{name}' is already in the series", "choose another name")
    same = [n for n in series.names if name_key(n) == name_key(name) and n != renaming]
    if same:
        raise PatchstackError(
            f"patch '{name}' differs from '{same[0]}' of the series only by case: one file on"
            " macOS and Windows",
            "choose another name",
        )
    if os.path.lexists(ws.patch_path(name)):
        raise RefusedError(
            f"{ws.display(ws.patch_path(name))} already exists", "remove it or choose another name"
        )


def relative_to_top(ws: Checkout, path: str) -> str:
    """A path the user gave (relative to the current folder) relative to the work tree's top."""
    full = os.path.normpath(os.path.join(ws.cwd, path))
    rel = os.path.relpath(full, ws.git.top)
    if rel.startswith(".."):
        raise PatchstackError(f"'{path}' is outside the work tree", "name files inside it")
    return rel.replace(os.sep, "/")


def covers(path: str, wanted: str) -> bool:
    """Does the user's ``wanted`` (a file or folder, '.' for all) name ``path``?"""
    return wanted == "." or path == wanted or path.startswith(wanted.rstrip("/") + "/")
