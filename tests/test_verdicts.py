"""Every label proven (issue 33): a verdict comes from one place (`engine.verdict`), and
nothing the tool advises deletes a patch whose change is not in the base."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line


def one_file_drift(tmp_path: Path) -> Repo:
    """p1 edits a.txt line 3, which upstream edits too; p2 edits b.txt (applies)."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    repo.commit_all("upstream edits line 3")
    repo.git("checkout", "-q", "main")
    return repo


def verdicts(repo: Repo, *args: str) -> dict[str, str]:
    out = json.loads(repo.ps("check", *args, "--json", code=None).stdout)
    return {p["name"]: p["verdict"] for p in out["patches"]}


def test_push_of_a_deferred_patch_that_still_conflicts_stops(tmp_path: Path) -> None:
    repo = one_file_drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "# deferred: p1.patch " in repo.read("patches/series")
    result = repo.ps("push", "p1.patch", code=1)
    assert "conflict" in result.stderr and "p1.patch" in result.stderr
    assert "# upstream:" not in repo.read("patches/series")
    assert "<<<<<<<" in repo.read("a.txt")
    repo.ps("refresh", "--abort")
    series = repo.read("patches/series")
    assert "# deferred: p1.patch " in series and "# upstream:" not in series
