"""Every triage label proven: a conflict is a knock-on of P only when it applies once P is
applied (merged again with P in place), and a hunk's culprit is the upstream commit that
changed its lines at its place, checked against git's own ``log -L``."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line


def kinds(repo: Repo, *args: str) -> dict[str, tuple[str, str | None]]:
    data = json.loads(repo.ps("check", "--onto", "up", "--json", *args, code=1).stdout)
    return {c["patch"]: (c["kind"], c["root"]) for c in data["conflicts"]}


def brace_fork(tmp_path: Path) -> Repo:
    """p1 changes a.c's line 5, which upstream changes too (primary). p2 changes line 20,
    which upstream replaced by ``}``: a line the old file holds elsewhere (its first line),
    so a containment test took upstream's line for the old base's."""
    repo = make_repo(tmp_path / "fork", {"a.c": "}\n" + numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 5\n", "a 5 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    replace_line(repo, "a.c", "a 20\n", "a 20 mine\n")
    repo.ps("new", "p2", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 5\n", "a 5 upstream\n")
    repo.commit_all("upstream reworks line 5")
    replace_line(repo, "a.c", "a 20\n", "}\n")
    repo.commit_all("upstream closes the block at line 20")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_conflict_upstream_made_with_a_repeated_line_is_primary(tmp_path) -> None:
    repo = brace_fork(tmp_path)
    assert kinds(repo) == {"p1.patch": ("primary", None), "p2.patch": ("primary", None)}
    # the oracle: p2 on upstream with p1 in place (p1's conflict taken as p1 has it) conflicts
    repo.git("checkout", "-q", "-b", "oracle", "up")
    repo.git("cherry-pick", "-X", "theirs", "main~1")
    proc = repo.git("cherry-pick", "main", check=False)
    assert repo.git("diff", "--name-only", "--diff-filter=U").split() == ["a.c"], proc
    repo.git("cherry-pick", "--abort")


def test_a_real_knock_on_stays_a_knock_on(tmp_path) -> None:
    """p1 changes line 10 (and line 5, which upstream changes too); p2 changes the line p1
    made: without p1 it conflicts on lines the old base had, with p1 in place it applies."""
    repo = make_repo(tmp_path / "fork", {"a.c": "}\n" + numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 5\n", "a 5 mine\n")
    replace_line(repo, "a.c", "a 10\n", "a 10 p1\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    replace_line(repo, "a.c", "a 10 p1\n", "a 10 p2\n")
    repo.ps("new", "p2", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 5\n", "a 5 upstream\n")
    repo.commit_all("upstream reworks line 5")
    repo.git("checkout", "-q", "main")
    assert kinds(repo) == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
    data = json.loads(
        repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout
    )
    deferred = {c["patch"]: (c["kind"], c["root"]) for c in data["deferred"]}
    assert deferred == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
