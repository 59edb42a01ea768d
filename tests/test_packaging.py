"""What a packager and a newcomer get: the metadata, the README's opening commands and links,
the extras, and an sdist that carries everything the tests need."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from .action_runner import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REPOSITORY = PROJECT["urls"]["Repository"]
README = (ROOT / "README.md").read_text()


def test_the_metadata_names_the_project_its_authors_and_its_pythons() -> None:
    assert set(PROJECT["urls"]) >= {"Homepage", "Repository", "Issues", "Changelog"}
    assert all(u.startswith(REPOSITORY) for u in PROJECT["urls"].values())
    assert PROJECT["authors"] and all(a.get("name") for a in PROJECT["authors"])
    low = int(re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"]).group(1))
    versions = {
        int(m.group(1))
        for c in PROJECT["classifiers"]
        if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c))
    }
    assert versions == set(range(low, max(versions) + 1)) and max(versions) >= 13


def _third_party_imports() -> set[str]:
    found = set()
    for path in (ROOT / "patchstack").rglob("*.py"):
        if "example" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"patchstack", "__future__"}


def test_every_package_the_code_imports_is_declared() -> None:
    declared = {re.split(r"[<>=!~ \[;]", d)[0].lower() for d in PROJECT["dependencies"]}
    imported = {name.lower() for name in _third_party_imports()}
    assert "markupsafe" in imported  # the HTML review marks its SVG safe itself
    assert imported <= declared, imported - declared


def test_the_readme_opening_commands_work_on_a_stock_system_and_ci_runs_the_test_one() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    commands = [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.strip()]
    assert len(commands) == 2, commands
    install, test = commands
    # Outside a virtual environment pip refuses on Debian 12, Ubuntu 24.04 and Homebrew.
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install .")
    assert install.endswith("&& patchstack demo")
    assert test == "pip install '.[test]' && python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "pip install -q '.[test]'" in ci and "python -m pytest" in ci
    assert ci.index("pip install -q '.[test]'") < ci.index("python -m pytest")
    assert "pipx install" in README and "uv tool install" in README


def test_the_readme_links_work_on_pypi() -> None:
    """PyPI shows the README without the repository around it: a relative link goes nowhere."""
    links = re.findall(r"\]\(([^)]+)\)", README)
    assert links
    for link in links:
        assert link.startswith(("https://", "http://", "#")), link
    for link in links:
        if "github.com" in link and "/patchstack" in link:
            assert link.startswith(REPOSITORY + "/"), link
            path = link[len(REPOSITORY) :].split("/", 3)
            assert path[1] == "blob" and (ROOT / path[3].split("#")[0]).exists(), link


def test_the_repository_is_named_one_way_everywhere() -> None:
    """The docs, the example workflows and the hooks name the repository of [project.urls]."""
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    texts = [README, (ROOT / ".pre-commit-hooks.yaml").read_text()]
    texts += [p.read_text() for p in (ROOT / "docs").glob("github-*.yml")]
    for text in texts:
        for name in re.findall(r"github\.com/([\w.-]+/patchstack)\b", text):
            assert name == owner_repo
        for name in re.findall(r"uses: ([\w.-]+/patchstack)@", text):
            assert name == owner_repo


def test_the_linters_are_not_test_dependencies() -> None:
    extras = PROJECT["optional-dependencies"]
    names = {k: {re.split(r"[<>=!~ ]", d)[0].lower() for d in v} for k, v in extras.items()}
    assert not names["test"] & {"ruff", "mypy"}
    assert {"ruff", "mypy"} <= names["dev"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci.index("pip install -q '.[dev]'") < ci.index("mypy --strict patchstack")


def _tracked() -> list[str]:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip("not a git checkout (the sdist itself): nothing to compare with")
    return [p for p in proc.stdout.split("\0") if p]


@pytest.mark.slow
def test_the_sdist_carries_every_file_of_the_repository(tmp_path) -> None:
    """Debian, conda-forge and Nix run the tests from the sdist: it must hold the whole suite
    (conftest, helpers, corpus, golden files) and what the tests read (action/, docs/,
    tools/, .ci/, the hooks file). .ci/run then runs pytest from the unpacked sdist."""
    if __import__("importlib").util.find_spec("build") is None:
        if os.environ.get("CI"):
            pytest.fail("the build package is not installed (.ci/run installs it)")
        pytest.skip("the build package is not installed")
    tracked = _tracked()
    src = tmp_path / "src"  # the tracked files only: what a fresh clone holds
    for rel in tracked:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel, follow_symlinks=False)
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (sdist,) = tmp_path.glob("patchstack-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = sorted(set(tracked) - names)
    assert not missing, missing
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
