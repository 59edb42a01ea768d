"""``status`` keeps what it proves (issue 35): the applied commits' proofs, the patch files
parsed and which commit holds which go into the one cache (`store`), as the drift does, so
that a second status after a cold one (a fresh clone, a cache another version wrote) runs
fewer git processes and prints the same bytes. What is saved is read from git's own trace."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

from patchstack import store

from .conftest import Repo, replace_line


def _behind(repo: Repo) -> str:
    """Two applied patches; upstream (origin/main, no @{upstream}: guessed) moved on with a
    commit touching p1's line: a refresh onto it stops at p1. Returns the upstream commit."""
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 p1\n")
    repo.ps("new", "p1", "--tag", "essential")
    replace_line(repo, "b.py", "b 7\n", "b 7 p2\n")
    repo.ps("new", "p2", "--tag", "essential")
    base = repo.git("rev-parse", "HEAD~2").strip()
    repo.git("checkout", "-q", "--detach", base)
    replace_line(repo, "a.py", "a 3\n", "a 3 upstream\n")
    up = repo.commit_all("upstream edits a 3")
    repo.git("checkout", "-q", "main")
    repo.git("remote", "add", "origin", str(repo.path))  # (never fetched)
    repo.git("update-ref", "refs/remotes/origin/main", up)
    return up


def _status(repo: Repo, tmp_path: Path, monkeypatch, *options: str) -> tuple[str, list[str]]:
    """status's output and the git commands it ran."""
    trace = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*')))}"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    try:
        out = repo.ps("status", *options, code=None).stdout
    finally:
        monkeypatch.delenv("GIT_TRACE")
    lines = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    marker = "trace: built-in: git "
    return out, [ln.split(marker, 1)[1] for ln in lines if marker in ln]


def _cache(repo: Repo) -> Path:
    return repo.path / ".git" / "patchstack" / "cache"


def test_a_second_status_after_a_cold_one_proves_nothing_again(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """A cold status (no cache: a fresh clone) reads the applied commits' changes to prove
    them and asks git whether upstream's tip is in HEAD; the next one asks neither."""
    _behind(repo)
    _cache(repo).unlink(missing_ok=True)
    first, cold = _status(repo, tmp_path, monkeypatch)
    assert "upstream moved: 1 commit since the series base" in first
    assert any(r.startswith("diff-tree --stdin") for r in cold), cold
    assert any(r.startswith("merge-base --is-ancestor") for r in cold), cold
    again, warm = _status(repo, tmp_path, monkeypatch)
    assert again == first
    assert not any(r.startswith(("diff-tree --stdin", "merge-base")) for r in warm), warm
    assert len(warm) < len(cold), (cold, warm)


def test_status_at_a_stop_keeps_which_commit_holds_which(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """At a refresh's stop HEAD is upstream's commit: status asks git nothing of ancestry
    for its text (no series carried as plain commits to look for, no drift to print); its
    --json, which has the drift, asks once whether upstream's tip is in HEAD, and the next
    one takes the answer from the cache. Each says the same twice."""
    up = _behind(repo)
    repo.ps("refresh", "--onto", up, code=1)
    first, cold = _status(repo, tmp_path, monkeypatch)
    assert "refresh stopped at a conflict in p1.patch" in first
    again, warm = _status(repo, tmp_path, monkeypatch, "--json")
    assert not any(r.startswith("merge-base") for r in cold), cold
    assert any(r.startswith("merge-base --is-ancestor") for r in warm), warm
    text_again, kept = _status(repo, tmp_path, monkeypatch)
    assert text_again == first and len(kept) < len(cold)  # (the stack at HEAD: kept too)
    json_again, warmer = _status(repo, tmp_path, monkeypatch, "--json")
    assert json_again == again
    assert not any(r.startswith("merge-base") for r in warmer), warmer
    assert len(warmer) < len(warm), (warm, warmer)


def test_a_cache_another_version_wrote_is_ignored(repo: Repo, tmp_path: Path, monkeypatch) -> None:
    """A cache whose writer is another version of patchstack is no cache: status proves
    everything again, says the same, and leaves a cache of its own version."""
    _behind(repo)
    _cache(repo).unlink(missing_ok=True)
    first, cold = _status(repo, tmp_path, monkeypatch)
    data = marshal.loads(_cache(repo).read_bytes())
    assert data["writer"] == store.WRITER
    data["writer"] = "0.0.1-another"
    _cache(repo).write_bytes(marshal.dumps(data))
    again, traced = _status(repo, tmp_path, monkeypatch)
    assert again == first
    assert sorted(traced) == sorted(cold)  # everything proven again, as with no cache
    assert marshal.loads(_cache(repo).read_bytes())["writer"] == store.WRITER
    _again, warm = _status(repo, tmp_path, monkeypatch)
    assert len(warm) < len(cold)


def test_status_opens_each_patch_file_once(repo: Repo, monkeypatch) -> None:
    """A warm status (its proofs kept) reads each patch file once, for the files it touches,
    its header and the files an upstream mark's patch holds: not once per use (1,000 patches
    were 2,000 opens)."""
    import builtins

    from patchstack import checkout

    _behind(repo)
    repo.ps("pop")  # one applied, one not: both are read
    for name in ("p1.patch", "p2.patch"):  # (older than the proofs' racy window)
        os.utime(repo.path / "patches" / name, (1_000_000_000, 1_000_000_000))
    repo.ps("status", code=None)
    opened: list[str] = []

    def counting(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file).endswith(".patch"):
            opened.append(Path(file).name)
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(checkout, "open", counting, raising=False)
    out = repo.ps("status", code=None).stdout
    assert "p2" in out
    assert sorted(opened) == ["p1.patch", "p2.patch"], opened
