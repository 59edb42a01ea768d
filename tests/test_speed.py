"""The shortcuts of issue 35 (status, check, refresh, pop) give what the plain way gives:
each is compared with the plain way's output (byte-identical JSON, trees), and what it saves
is read from git's own trace (which processes ran), never from a clock."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, replace_line


def _imported(repo: Repo) -> None:
    """Three commits on HEAD imported as a series, then made the applied patches."""
    repo.git("branch", "base")
    for i, (f, n) in enumerate([("a.py", 3), ("b.py", 7), ("a.py", 20)]):
        replace_line(repo, f, f"{f[0]} {n}\n", f"{f[0]} {n} fork{i}\n")
        repo.commit_all(f"fork change {i}")
    repo.ps("import", "commits", "base..HEAD", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")


def _traced(repo: Repo, trace: Path, *args: str) -> tuple[str, str]:
    if trace.exists():
        trace.unlink()
    out = repo.ps(*args, code=None).stdout
    return out, trace.read_text() if trace.exists() else ""


def test_status_after_a_push_of_an_imported_series_proves_nothing_again(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """``push --all`` of commits whose chain an earlier command built (the import proved
    them) records them exact, as it does the commits it makes: ``status`` then reads no
    commit's change to prove it again, and says what it says with no cache at all."""
    _imported(repo)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    fast, traced = _traced(repo, trace, "status", "--json")
    assert "diff-tree --stdin" not in traced  # no applied commit's change read to prove it
    (repo.path / ".git" / "patchstack" / "cache").unlink()
    plain, traced = _traced(repo, trace, "status", "--json")
    assert "diff-tree --stdin" in traced  # (the plain way does read them)
    assert fast == plain
    assert {p["matches"] for p in json.loads(fast)["patches"]} == {"exact"}
