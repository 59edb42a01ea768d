"""A patch still deferred names, when its conflict is shown again (``check --patch NAME``,
``check --verbose``), the upstream commit that made it conflict, as the refresh that deferred
it did: its lines are traced from the base its change was made on (its deferral's commit) to
the target, not from the series base. On the day after (the base moved on past the commit
that made it conflict) and on day one itself (the target is the series base: no range) it
said "upstream commit: unknown (these lines could not be traced)" (round twelve, qwen)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line
from .label_oracle import resolve_markers


def _day_after(tmp_path: Path) -> tuple[Repo, str, str]:
    """p changes a.py line 10; upstream U1 rewrites it (day one: p deferred), then U2 and U3
    change other lines of a.py and b.py (the day after). (repo, day one's base, U1)."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p", "--tag", "essential", "a.py")
    replace_line(repo, "b.py", "b 20\n", "b 20 mine\n")
    repo.ps("new", "q", "--tag", "diagnostic", "b.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.py", "b 3\n", "b 3 up\n")
    repo.commit_all("upstream touches b")
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    culprit = repo.commit_all("U1 rewrites a 10")
    repo.git("branch", "day1")
    replace_line(repo, "a.py", "a 30\n", "a 30 up\n")
    repo.commit_all("U2 touches a 30")
    replace_line(repo, "b.py", "b 35\n", "b 35 up\n")
    repo.commit_all("U3 touches b 35")
    repo.git("checkout", "-q", "main")
    return repo, base, culprit


def _git_says(repo: Repo, commit: str, culprit: str) -> None:
    """The oracle: git's cherry-pick of the deferred change applies on the culprit's parent
    and conflicts on the culprit (it made the patch conflict)."""
    for onto, clean in ((f"{culprit}^", True), (culprit, False)):
        repo.git("checkout", "-q", "--detach", onto)
        pick = subprocess.run(
            ["git", "cherry-pick", "--no-commit", commit], cwd=repo.path, capture_output=True
        )
        assert (pick.returncode == 0) is clean, (onto, pick.stderr)
        repo.git("reset", "-q", "--hard")
    repo.git("checkout", "-q", "main")


def _named(data: dict, name: str) -> list[list[str]]:
    (report,) = [r for r in data["deferred"] if r["patch"] == name]
    return [[c["commit"] for c in h["upstream_commits"]] for h in report["hunks"]]


def test_a_still_deferred_patch_names_its_culprit_on_the_day_after(tmp_path: Path) -> None:
    repo, base, culprit = _day_after(tmp_path)
    repo.ps("refresh", "--onto", "day1", "--defer-conflicts")
    series = repo.read("patches/series")
    commit = next(ln.split()[3] for ln in series.splitlines() if ln.startswith("# deferred: p"))
    _git_says(repo, commit, culprit)
    # day one, the target is the series base: traced from where p was made
    data = json.loads(repo.ps("check", "--onto", "day1", "--patch", "p", "--json").stdout)
    assert _named(data, "p.patch") == [[culprit]]
    # the day after: the base moved past U1
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "# deferred: p.patch" in repo.read("patches/series")
    data = json.loads(repo.ps("check", "--onto", "up", "--patch", "p", "--json").stdout)
    assert _named(data, "p.patch") == [[culprit]]
    # git log -L over the lines, from the base p was made on, names it first
    traced = repo.git("log", "--format=%H", "--no-patch", "-L10,10:a.py", f"{base}..up")
    assert traced.split()[-1] == culprit
    text = repo.ps("check", "--patch", "p").stdout
    assert "could not be traced" not in text and f"{culprit[:10]} U1 rewrites a 10" in text


def test_a_deferred_patch_shown_again_is_triaged_with_its_own_change(tmp_path: Path) -> None:
    """``check --patch NAME`` of a deferred patch whose file an earlier deferred patch touches
    too: it was triaged with the change a deferred step has on the chain (none), so every
    proof "merged cleanly" and it was called a knock-on of that patch, where the refresh
    that deferred it said primary and git's pick with that patch applied still conflicts
    (label seed 14, the day after's ``check --verbose``)."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p", "--tag", "essential", "a.py")
    replace_line(repo, "a.py", "a 30\n", "a 30 mine\n")
    repo.ps("new", "r", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    repo.commit_all("U1 rewrites a 10")
    repo.git("branch", "day1")
    replace_line(repo, "a.py", "a 30\n", "a 30 upstream\n")
    culprit = repo.commit_all("U2 rewrites a 30")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "day1", "--defer-conflicts")
    day2 = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    assert {(r["patch"], r["kind"], r["root"]) for r in day2["deferred"]} == {
        ("r.patch", "primary", None)
    }
    series = repo.read("patches/series")
    marks = {ln.split()[2]: ln.split()[3] for ln in series.splitlines() if ln.startswith("# def")}
    data = json.loads(repo.ps("check", "--onto", "up", "--patch", "r", "--json").stdout)
    (report,) = [r for r in data["deferred"] if r["patch"] == "r.patch"]
    assert (report["kind"], report["root"]) == ("primary", None)
    assert _named(data, "r.patch") == [[culprit]]
    # git: with p picked (its conflict taken as p has it) r's pick still conflicts
    repo.git("checkout", "-q", "--detach", "up")
    p = subprocess.run(["git", "cherry-pick", "--no-commit", marks["p.patch"]], cwd=repo.path)
    assert p.returncode != 0
    repo.write("a.py", resolve_markers(repo.read("a.py")) or "")  # each region p's side
    repo.git("commit", "-q", "-am", "p as it has it")
    r = subprocess.run(["git", "cherry-pick", "--no-commit", marks["r.patch"]], cwd=repo.path)
    assert r.returncode != 0
    repo.git("reset", "-q", "--hard")
    repo.git("checkout", "-q", "main")
