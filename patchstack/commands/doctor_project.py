"""Which package doctor looks for, and where it is in the work tree: the package a project
file (``pyproject.toml``, ``setup.cfg``, ``setup.py``) names, or the one ``--module`` names,
found among the tracked paths; the folder to ``pip install -e``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import PatchstackError
from ..git import Git

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


@dataclass(frozen=True)
class Project:
    module: str
    dist: str | None  # the distribution name its project file gives
    package: str | None  # the package folder (or module file) relative to the top
    folder: str | None  # the folder of its project file, relative to the top


def find_project(git: Git, module: str | None) -> Project:
    """The package to look for: ``module``, or the one the shallowest project file names."""
    if module is not None:
        if not module.isidentifier():
            raise PatchstackError(
                f"--module '{module}' is not a top-level package name", "give one like 'sglang'"
            )
        package = _package_in_tree(git.ls_files(), module)
        if package is None:
            raise PatchstackError(
                f"no package or module named {module} in this work tree",
                "give the top-level package of this project with --module NAME",
            )
        folder = _project_folder(git, package)
        dist = _project_name(os.path.join(git.top, folder)) if folder is not None else None
        return Project(module, dist, package, folder)
    found: dict[str, Project] = {}
    depth = None
    tracked = git.ls_files()
    for path in _by_depth([p for p in tracked if p.rpartition("/")[2] in PROJECT_FILES]):
        if depth is not None and path.count("/") > depth:
            break  # the shallowest project files that name a package win
        folder = os.path.dirname(path)
        name = _project_name(os.path.join(git.top, folder))
        mod = re.sub(r"[-.]+", "_", name or "")
        for rel in (mod, f"src/{mod}", f"{mod}.py", f"src/{mod}.py"):
            package = os.path.join(folder, rel) if folder else rel
            if mod and os.path.exists(os.path.join(git.top, package)):
                found.setdefault(mod, Project(mod, name, package, folder))
                depth = path.count("/")
                break
    if len(found) == 1:
        return next(iter(found.values()))
    if found:
        raise PatchstackError(
            "several packages in this work tree: "
            + ", ".join(f"{m} ({p.package})" for m, p in sorted(found.items())),
            "choose one with --module NAME",
        )
    raise PatchstackError(
        "cannot tell which package to look for: no pyproject.toml, setup.cfg or setup.py here"
        " names a package of this work tree",
        "give it with --module NAME",
    )


def _package_in_tree(tracked: list[str], module: str) -> str | None:
    """The shallowest package folder (or module file) of that name among tracked paths; a
    namespace package (a folder of that name without ``__init__.py``) when there is none."""
    found, folders = [], []
    for path in tracked:
        parts = path.split("/")
        if parts[-1] == f"{module}.py" or parts[-2:] == [module, "__init__.py"]:
            found.append(path.removesuffix("/__init__.py"))
        elif module in parts[:-1]:
            folders.append("/".join(parts[: parts.index(module) + 1]))
    best = _by_depth(found) or _by_depth(folders)
    return best[0] if best else None


def _project_folder(git: Git, package: str | None) -> str | None:
    folder = os.path.dirname(package) if package else ""
    while True:
        if any(os.path.isfile(os.path.join(git.top, folder, f)) for f in PROJECT_FILES):
            return folder
        if not folder:
            return None
        folder = os.path.dirname(folder)


def _project_name(folder: str) -> str | None:
    """The distribution name a project file in ``folder`` gives, if it says so plainly."""
    for file in PROJECT_FILES:
        try:
            with open(os.path.join(folder, file), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if file == "pyproject.toml":
            section = re.search(r"(?ms)^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text)
            text = section.group(1) if section else ""
        m = re.search(r"""(?m)^\s*name\s*[=:]\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)""", text)
        if m:
            return m.group(1)
    return None


def _by_depth(paths: list[str]) -> list[str]:
    return sorted(dict.fromkeys(paths), key=lambda p: (p.count("/"), p))
