"""The house reads like its design: dependencies point one way, and only the git package runs
git. (docs/architecture.md draws the layers these rules check.)"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "patchstack"

# Each layer may import itself and the layers listed; `errors`, `files`, `lock`, `store` (the
# one cache) and `progress` sit below everything, and `model.ids` is the vocabulary the git
# package shares.
ALLOWED: dict[str, set[str]] = {
    "model": {"model", "errors"},
    "git": {"git", "model.ids", "errors", "lock"},
    "store": {"files", "__version__"},  # the version that wrote the cache
    "checkout": {"git", "model", "errors", "files", "store", "progress"},
    "engine": {"engine", "git", "model", "errors", "lock", "store"},
    "journal": {"journal", "git", "model", "checkout", "errors", "files", "lock"},
    "transaction": {"journal", "git", "model", "checkout", "errors", "files", "lock"},
}
BELOW_COMMANDS = {"cli"}  # what commands and feature modules may not import
# They run the user's programs: doctor the service's interpreter; sessions bisect's COMMAND
# and the probes, each in a session of its own (commands.bisect and commands.probes use it);
# manpage the man viewer (patchstack help).
SUBPROCESS_ALLOWED = {"commands.doctor", "commands.sessions", "manpage"}
MAX_LINES = 430
PENDING_SPLIT: set[str] = {"commands.reorder"}  # until its commits go to the one committer


def module_paths() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts) or "__init__"] = path
    return found


# Parsed when a test first asks (not at collection, which every xdist worker does).
@functools.cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    return {name: (p, ast.parse(p.read_text(), str(p))) for name, p in module_paths().items()}


def imports_of(name: str, tree: ast.Module, is_package: bool) -> set[str]:
    """Absolute module names (without the 'patchstack.' prefix) a module imports."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                if node.module is None:
                    out.update(".".join(filter(None, [target, a.name])) for a in node.names)
                else:
                    out.add(target)
            elif node.module and node.module.startswith("patchstack"):
                out.add(node.module.removeprefix("patchstack").lstrip("."))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("patchstack."):
                    out.add(a.name.removeprefix("patchstack."))
                elif a.name == "subprocess":
                    out.add("<subprocess>")
    return {m for m in out if m}


def layer(module: str) -> str:
    return module.split(".")[0]


def in_layers(module: str, allowed: set[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


@functools.cache
def graph() -> dict[str, set[str]]:
    return {
        name: imports_of(name, tree, path.name == "__init__.py")
        for name, (path, tree) in modules().items()
    }


@pytest.mark.parametrize("name", sorted(module_paths()))
def test_dependencies_point_down(name: str) -> None:
    deps = {d for d in graph()[name] if d != "<subprocess>"}
    rules = ALLOWED.get(layer(name))
    if rules is not None:
        bad = sorted(d for d in deps if not in_layers(d, rules | {name}))
        assert not bad, f"{name} may not import {bad}"
    elif layer(name) != "cli" and name not in ("__main__",):
        bad = sorted(d for d in deps if in_layers(d, BELOW_COMMANDS))
        assert not bad, f"{name} may not import the CLI: {bad}"


def test_only_the_git_package_runs_processes() -> None:
    runners = sorted(
        n for n, deps in graph().items() if "<subprocess>" in deps and layer(n) != "git"
    )
    assert set(runners) <= SUBPROCESS_ALLOWED, runners


def test_the_cli_reaches_git_only_through_commands() -> None:
    bad = sorted(
        n
        for n, deps in graph().items()
        if layer(n) == "cli" and any(in_layers(d, {"git"}) for d in deps)
    )
    assert not bad, bad


def test_no_module_is_much_over_400_lines() -> None:
    sizes = {n: len(p.read_text().splitlines()) for n, (p, _t) in modules().items()}
    big = {n: s for n, s in sizes.items() if s > MAX_LINES and n not in PENDING_SPLIT}
    assert not big, big


def test_the_map_names_every_module() -> None:
    """docs/architecture.md names each module, so a reader finds every concern from the map:
    by its name in backquotes (`name`, `package/name` or `name.py`)."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text()
    missing = []
    for name, (path, _tree) in sorted(modules().items()):
        if path.name == "__init__.py":
            continue
        leaf = path.stem
        parent = path.parent.name
        said = (f"`{leaf}`", f"`{leaf} ", f"`{parent}/{leaf}`", f"{leaf}.py", f"`{leaf}(")
        if not any(s in text for s in said):
            missing.append(name)
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"
