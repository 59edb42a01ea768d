"""A deferred patch brought back (``push NAME``) that stops names the upstream commits that
changed its conflicting lines, as the refresh's stop at it would: they are traced from the
base the patch was made on (its deferral's commit) to the series base. It said "upstream
commit: unknown (these lines could not be traced)" for every hunk, nothing traced (the
push's own range is empty): timmy/paged-attn's and nathan/qwen-vl-alt's pushes."""

from __future__ import annotations

from pathlib import Path

from .conftest import make_repo, numbered, replace_line


def test_a_push_stop_names_the_upstream_commit_git_log_L_names(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.py", "b 3\n", "b 3 up\n")
    repo.commit_all("upstream touches b")
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    culprit = repo.commit_all("upstream rewrites a 10")
    replace_line(repo, "b.py", "b 30\n", "b 30 up\n")
    repo.commit_all("upstream touches b again")
    repo.git("checkout", "-q", "main")

    refresh = repo.ps("refresh", "--onto", "up", code=1).stderr
    assert f"{culprit[:10]} upstream rewrites a 10" in refresh, refresh
    repo.ps("refresh", "--skip")
    said = repo.ps("push", "p.patch", code=1)
    report = said.stdout + said.stderr
    assert "could not be traced" not in report, report
    assert f"{culprit[:10]} upstream rewrites a 10" in report, report
    # git's own answer: the commit of up that last changed line 10 of a.py
    traced = repo.git("log", "--format=%H", "-L10,10:a.py", f"{base}..up", "--no-patch")
    assert traced.split()[0] == culprit
    repo.ps("refresh", "--abort")
