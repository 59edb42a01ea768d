"""Which paths a patch may touch: the one place that decides, as pure functions.

A patch may only write inside the work tree and never into git's own directory. Refused:

- an empty path, an absolute path (``/etc/passwd``, ``C:/x``), a ``.`` or ``..`` component;
- a component that a file system could fold into ``.git``: any case (``.GIT``), trailing dots
  and spaces (``.git.``, ``.git ``, folded by Windows), code points that HFS+ ignores
  (``.g\\u200cit``), compatibility forms (fullwidth ``．ｇｉｔ``), and NTFS's short name ``git~1``;
- a backslash that would make such a component on Windows (``..\\x``, ``.git\\config``);
- a component longer than 255 bytes or a path longer than 4095 (the file system would fail
  half-way through writing the tree: ENAMETOOLONG);
- ``.gitmodules`` (and ``.gitattributes``, ``.gitignore``, ``.mailmap``) as a symbolic link;
- a path inside the series directory (the patch would overwrite the series itself);
- a path that goes through a symbolic link, a file or a submodule of the tree it is applied
  to (`through_problem`, given what the leading folders are), or through a symbolic link that
  the same patch creates.

`check_patch` raises an `InputError` naming the patch file and the line of the offending file
diff; the workspace calls it whenever it loads a patch, and the engine asks `through_problem`
about the tree each patch lands on, so that a symlink made by an earlier patch of the same
push is caught too.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from .patchfile import Patch

# Code points HFS+ ignores when comparing names (git's is_hfs_dotgit list).
_HFS_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E]
    + list(range(0x206A, 0x2070))
    + [0xFEFF]
)
# Names git refuses as symbolic links (CVE-2018-11235 and its family): a link there would make
# git read its own configuration from outside the tree.
_NO_LINK_NAMES = (".gitmodules", ".gitattributes", ".gitignore", ".mailmap")
NAME_MAX = 255  # bytes in one path component (Linux, macOS, Windows)
PATH_MAX = 4095  # bytes in a path below the top of the work tree (Linux's 4096 with its NUL)
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"
TREE_MODE = "040000"


def _folded(component: str) -> str:
    text = component.translate(_HFS_IGNORED)
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.rstrip(" .")


def component_problem(component: str) -> str | None:
    if component in ("", "."):
        return "an empty or '.' path component"
    if component == "..":
        return "a '..' component (outside the work tree)"
    size = len(component.encode("utf-8", "surrogateescape"))
    if size > NAME_MAX:
        return (
            f"its component '{shorten(component, 40)}' is {size:,} bytes long, over the"
            f" {NAME_MAX} bytes a file name may have (the file system's limit, ENAMETOOLONG)"
        )
    folded = _folded(component)
    if folded == ".git" or folded.startswith("git~"):
        return f"'{component}' names git's own directory"
    if folded in ("", ".."):
        return f"'{component}' folds to '{folded or '.'}' on some file systems"
    return None


def path_problem(path: str) -> str | None:
    """Why a patch may not touch ``path`` (relative, '/'-separated), or None when it may."""
    if not path:
        return "an empty path"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":" and path[0].isalpha()):
        return "an absolute path"
    if "\0" in path:
        return "a NUL byte in the path"
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > PATH_MAX:
        return (
            f"it is {size:,} bytes long, over the {PATH_MAX} bytes a path may have (the file"
            " system's limit, ENAMETOOLONG)"
        )
    for part in path.split("/"):
        problem = component_problem(part)
        if problem:
            return problem
        if "\\" in part:
            for sub in part.split("\\"):
                problem = component_problem(sub)
                if problem:
                    return problem + " (with '\\' as a separator)"
    return None


def shorten(text: str, most: int = 100) -> str:
    """``text``, or its start and end around '...' when it is longer than ``most``."""
    if len(text) <= most:
        return text
    return text[: most * 2 // 3] + "..." + text[-(most // 3) :]


def refusal(path: str, problem: str) -> str:
    """The message refusing ``path``: a long path shortened, so that the reason stays in
    sight."""
    return f"refused path '{shorten(path)}': {problem}"


def leading_dirs(path: str) -> list[str]:
    """'a/b/c' -> ['a', 'a/b']."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def through_problem(path: str, modes: Mapping[str, str | None]) -> str | None:
    """Does ``path`` go through a symlink, a file or a submodule?

    ``modes`` maps leading folders of ``path`` to the mode a tree holds there (as git writes
    it: "040000" a folder, "120000" a symbolic link, "160000" a submodule, else a file) or None.
    """
    for d in leading_dirs(path):
        mode = modes.get(d)
        if mode == SYMLINK_MODE:
            return f"'{d}' is a symbolic link, so '{path}' would be written through it"
        if mode == SUBMODULE_MODE:
            return f"'{d}' is a submodule; a patch of this repository cannot change files in it"
        if mode is not None and mode != TREE_MODE:
            return f"'{d}' is a file, so '{path}' cannot be written under it"
    return None


def link_problem(path: str) -> str | None:
    """Why ``path`` may not be a symbolic link, or None."""
    last = _folded(path.rsplit("/", 1)[-1])
    for name in _NO_LINK_NAMES:
        if last == name or last.startswith(name[1:7] + "~"):  # NTFS short name: gitmod~1
            return f"'{path}' may not be a symbolic link (git reads it; CVE-2018-11235)"
    return None


def check_patch(patch: Patch, shown: str, series_dir: str | None = None) -> None:
    """Raise `InputError` (file and line) when the patch touches a path it may not."""
    links = {f.new_path for f in patch.files if f.new_mode == SYMLINK_MODE and f.new_path}
    prefix = series_dir.rstrip("/") + "/" if series_dir else None
    for f in patch.files:
        for p in f.paths:
            problem = path_problem(p)
            if problem is None and p == f.new_path and f.new_mode == SYMLINK_MODE:
                problem = link_problem(p)
            if problem is None and prefix and (p + "/").startswith(prefix):
                problem = f"it is inside the series directory '{series_dir}'"
            if problem is None:
                problem = through_problem(
                    p, dict.fromkeys(links & set(leading_dirs(p)), SYMLINK_MODE)
                )
            if problem:
                raise InputError(
                    shown,
                    f.lineno,
                    refusal(p, problem),
                    "shorten the path in the patch"
                    if "ENAMETOOLONG" in problem
                    else "a patch may only change files inside the work tree; fix the patch",
                )
