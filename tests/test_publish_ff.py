"""``refresh --publish ff`` (issue 37): the refreshed fork published as a fast-forward, so a
consumer's ``git pull --ff-only`` works across refreshes and gets the refreshed fork's tree,
and the series on a branch published so reads as before (status, series, log, pop, push)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line


def test_consumers_pull_ff_only_across_three_refreshes(tmp_path: Path) -> None:
    fork = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    fork.git("branch", "upstream")
    fork.ps("init")
    replace_line(fork, "a.py", "a 5\n", "a 5 ours\n")
    fork.ps("new", "one", "--tag", "essential", "-m", "One")
    replace_line(fork, "b.py", "b 20\n", "b 20 ours\n")
    fork.ps("new", "two", "--tag", "diagnostic", "-m", "Two")
    remote = tmp_path / "fork.git"
    fork.git("clone", "-q", "--bare", ".", str(remote))
    fork.git("remote", "add", "mirror", str(remote))
    consumer = tmp_path / "consumer"
    subprocess.run(["git", "clone", "-q", str(remote), str(consumer)], check=True)
    reader = Repo(consumer)
    for n in range(1, 4):
        fork.git("checkout", "-q", "upstream")
        replace_line(fork, "a.py", f"a {10 * n}\n", f"a {10 * n} upstream {n}\n")
        fork.git("commit", "-q", "-am", f"upstream {n}")
        fork.git("checkout", "-q", "main")
        fork.ps("refresh", "--onto", "upstream", "--publish", "ff")
        fork.git("push", "-q", "mirror", "main")
        pulled = subprocess.run(
            ["git", "pull", "--ff-only", "-q"], cwd=consumer, capture_output=True, text=True
        )
        assert pulled.returncode == 0, pulled.stderr
        assert reader.tree() == fork.tree(), n
        assert f"a {10 * n} upstream {n}" in reader.read("a.py")
        assert "a 5 ours" in reader.read("a.py") and "b 20 ours" in reader.read("b.py")
        # The maintainer's series reads on the published branch.
        status = fork.ps("status", "--json")
        data = json.loads(status.stdout)
        assert [p["name"] for p in data["patches"] if p["applied"]] == ["one.patch", "two.patch"]
        assert "nothing to do" in fork.ps("status").stdout
        assert fork.git("rev-parse", "upstream").strip() in fork.read("patches/series")
    fork.ps("log")
    fork.ps("pop", "--all")
    assert fork.tree() == fork.tree("upstream")
    fork.ps("push", "--all")
    assert "a 5 ours" in fork.read("a.py")


def test_a_published_branch_pops_and_pushes_by_name(tmp_path: Path) -> None:
    fork = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    fork.git("branch", "upstream")
    fork.ps("init")
    replace_line(fork, "a.py", "a 5\n", "a 5 ours\n")
    fork.ps("new", "one", "--tag", "essential", "-m", "One")
    replace_line(fork, "b.py", "b 20\n", "b 20 ours\n")
    fork.ps("new", "two", "--tag", "diagnostic", "-m", "Two")
    old_tip = fork.head()
    fork.git("checkout", "-q", "upstream")
    replace_line(fork, "a.py", "a 30\n", "a 30 upstream\n")
    fork.git("commit", "-q", "-am", "upstream moves")
    fork.git("checkout", "-q", "main")
    fork.ps("refresh", "--onto", "upstream", "--publish", "ff")
    parents = fork.git("rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
    assert len(parents) == 2 and parents[1] == old_tip
    assert fork.tree() == fork.tree(parents[0])
    assert fork.git("merge-base", "--is-ancestor", old_tip, "HEAD") == ""
    assert fork.ps("status").exit_code == 0
    fork.ps("pop", "two")
    assert "b 20 ours" not in fork.read("b.py")
    fork.ps("push", "two")
    assert "b 20 ours" in fork.read("b.py")


def test_a_refresh_stopped_at_a_conflict_publishes_after_continue(tmp_path: Path) -> None:
    fork = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    fork.git("branch", "upstream")
    fork.ps("init")
    replace_line(fork, "a.py", "a 5\n", "a 5 ours\n")
    fork.ps("new", "one", "--tag", "essential", "-m", "One")
    old_tip = fork.head()
    fork.git("checkout", "-q", "upstream")
    replace_line(fork, "a.py", "a 5\n", "a 5 upstream\n")
    fork.git("commit", "-q", "-am", "upstream takes line 5")
    fork.git("checkout", "-q", "main")
    fork.ps("refresh", "--onto", "upstream", "--publish", "ff", code=1)
    fork.write(
        "a.py",
        fork.read("a.py").split("<<<<<<<")[0]
        + "a 5 both\n"
        + numbered(40, "a")[len(numbered(5, "a")) :],
    )
    fork.ps("refresh", "--continue")
    parents = fork.git("rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
    assert len(parents) == 2 and parents[1] == old_tip
    assert "a 5 both" in fork.read("a.py")
    fork.ps("undo", "2")  # the --continue, then the stop
    assert fork.head() == old_tip
