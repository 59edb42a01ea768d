"""bisect --matrix: which (upstream commit, patch) pair a regression comes from.

The fork's fast-path patch switches the benchmark to upstream's fast route; upstream commit 3
makes that route 54 % slower and commit 1 the slow route 2 % slower. With the essential
patches commit 3 costs 35 %, without them nothing: it interacts with fast-path.patch (the other
essential patch, left out, changes nothing).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, replace_line

BENCH = """\
import lib, settings
cost = lib.FAST_COST if settings.FAST else lib.SLOW_COST
print(f"tokens/s: {100 / cost:.1f}")
"""
COMMAND = [sys.executable, "bench.py"]


@pytest.fixture(scope="module")
def origin(module_env: pytest.TempPathFactory) -> tuple[Repo, list[str]]:
    """The fork, built once (the tests that run COMMAND take a copy: the runs are cached)."""
    tmp_path = module_env.mktemp("matrix")
    files = {
        "lib.py": "FAST_COST = 1.0\nSLOW_COST = 2.0\n",
        "settings.py": 'FAST = False\nLOG = "info"\n',
        "bench.py": BENCH,
        "notes.txt": "notes\n",
    }
    repo = make_repo(tmp_path / "fork", files)
    commits = [repo.head()]
    repo.ps("init")
    replace_line(repo, "settings.py", "FAST = False", "FAST = True")
    repo.ps("new", "fast-path", "--tag", "essential", "settings.py")
    repo.write("notes.txt", "notes\nx = 1\n")
    repo.ps("new", "notes", "--tag", "essential", "notes.txt")
    replace_line(repo, "settings.py", '"info"', '"debug"')
    repo.ps("new", "debug-log", "--tag", "diagnostic", "settings.py")
    repo.ps("pop", "--all")
    for message, old, new in [
        ("lib: slow route a little slower", "SLOW_COST = 2.0", "SLOW_COST = 2.04"),
        ("lib: docs", "\n", "\n# docs\n"),
        ("lib: the fast route takes the safe path", "FAST_COST = 1.0", "FAST_COST = 1.54"),
        ("lib: more docs", "# docs", "# more docs"),
    ]:
        replace_line(repo, "lib.py", old, new)
        commits.append(repo.commit_all(message))
    repo.git("branch", "upstream")
    return repo, commits


@pytest.fixture
def fork(origin: tuple[Repo, list[str]], tmp_path: Path) -> tuple[Repo, list[str]]:
    return copy_repo(origin[0].path, tmp_path / "fork"), origin[1]


def test_matrix_attributes_the_regression_to_the_commit_and_the_patch(
    fork: tuple[Repo, list[str]],
) -> None:
    repo, commits = fork
    args = ["bisect", commits[0], "upstream", "--matrix", "none;essential;all"]
    out = repo.ps(*args, "--threshold", "10%", "--", *COMMAND)
    culprit = commits[3][:10]
    assert (
        f"upstream {culprit} costs 35 % with essential, 35 % with all and 0 % with no patches:"
        " it interacts with fast-path.patch"
    ) in out.stdout
    assert f"essential  (2 patch(es))  first failing commit {culprit}" in out.stdout
    assert "none       (0 patch(es))  no-failure" in out.stdout
    assert "with essential without notes.patch      100     64.9    35 %" in out.stdout
    assert "tokens/s: 100.0" in out.stderr  # COMMAND's own output, passed through
    # Every run is cached by tree: the second matrix runs nothing.
    again = repo.ps(*args, "--threshold", "10%", "--json", "--", *COMMAND)
    assert "tokens/s" not in again.stderr
    data = json.loads(again.stdout)
    assert data["ok"] is True
    [blame] = data["blames"]
    assert blame["commit"] == commits[3] and blame["verdict"] == "interacts"
    assert blame["patches"] == ["fast-path.patch"]
    cells = {c["subset"]: c for c in blame["subsets"]}
    assert cells["none"]["fails"] is False and cells["essential"]["fails"] is True
    assert cells["essential"]["before"]["figure"] == 100.0
    steps = [s for sub in data["subsets"] for s in sub["bisect"]["steps"]]
    assert steps and all(s["cached"] for s in steps)


def test_matrix_by_exit_status(fork: tuple[Repo, list[str]]) -> None:
    """No figure: the test passes or fails. Commit 3 fails with the diagnostic patch's
    settings too, so 'except:diagnostic' and 'all' tell the patches apart."""
    repo, commits = fork
    check = [
        sys.executable,
        "-c",
        "import lib, settings; assert not (settings.FAST and lib.FAST_COST > 1.2)",
    ]
    out = repo.ps("bisect", commits[0], "upstream", "--matrix", "none;all", "--", *check)
    assert (
        f"upstream {commits[3][:10]} fails with all, passes with no patches: it interacts with"
        " fast-path.patch"
    ) in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--matrix", "all"], "--matrix needs two subsets or more"),
        (["--matrix", "none;all", "--threshold", "80"], "give --threshold as a percentage"),
        (["--matrix", "none;all", "--only", "essential"], "--only and --except do not go with"),
        (["--matrix", "none;optimisation"], "unknown tag 'optimisation'"),
        (["--threshold", "fast"], "--threshold: not a number"),
    ],
)
def test_matrix_bad_input_exits_2(
    origin: tuple[Repo, list[str]], args: list[str], message: str
) -> None:
    repo, commits = origin
    result = repo.ps("bisect", commits[0], "upstream", *args, "--", *COMMAND, code=2)
    assert message in result.stderr and "hint:" in result.stderr
