"""Patch files without full index lines, as quilt and hand-written diffs have them: the fast
path cannot prove them by blob ids, so ``git apply`` does. What a command proved once is not
proven again by the next (a ``git apply`` per patch, 30 ms each), and a patch whose files
upstream left as they were is carried onto the new base without a merge."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line
from .test_replay_exact import git_commands

FILES = ["a", "b", "c"]
INDEX_LINE = re.compile(r"index [0-9a-f]+\.\.[0-9a-f]+( \d+)?\n")


def fork(path: Path) -> tuple[Repo, str]:
    """Three patches that edit a file each and three that add one, popped, their index lines
    removed; upstream edits a.py far from its patch."""
    repo = make_repo(path, {f"{f}.py": numbered(40, f) for f in FILES})
    repo.git("branch", "upstream")
    repo.ps("init")
    for f in FILES:
        replace_line(repo, f"{f}.py", f"{f} 10\n", f"{f} 10 edited\n")
        repo.ps("new", f"edit-{f}", "-t", "essential", "-m", f"edit {f}\n", f"{f}.py")
        repo.write(f"new_{f}.py", f"new {f}\n")
        repo.ps("new", f"add-{f}", "-t", "diagnostic", "-m", f"add {f}\n", f"new_{f}.py")
    repo.ps("pop", "--all")
    for patch in (repo.path / "patches").glob("*.patch"):
        patch.write_text(INDEX_LINE.sub("", patch.read_text()))
    wt = path.parent / f"{path.name}-upstream"
    repo.git("worktree", "add", "-q", str(wt), "upstream")
    up = Repo(wt)
    replace_line(up, "a.py", "a 35\n", "a 35 upstream\n")
    return repo, up.commit_all("Upstream moves")


def traced(repo: Repo, monkeypatch, trace: Path, *args: str) -> list[str]:
    """The git commands ``patchstack args`` ran."""
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    try:
        repo.ps(*args)
    finally:
        monkeypatch.delenv("GIT_TRACE2_EVENT")
    return git_commands(trace)


def test_what_was_proven_is_not_proven_again(tmp_path, monkeypatch) -> None:
    repo, target = fork(tmp_path / "fork")
    assert "index " not in (repo.path / "patches" / "edit-a.patch").read_text()
    pushed = traced(repo, monkeypatch, tmp_path / "push.json", "push", "--all")
    assert pushed.count("apply") == 6  # the fast path cannot prove them: git apply does
    assert "apply" not in traced(repo, monkeypatch, tmp_path / "status.json", "status")

    refreshed = traced(repo, monkeypatch, tmp_path / "refresh.json", "refresh", "--onto", target)
    # Only edit-a, whose file upstream changed, is merged; the others are carried as the old
    # chain made them (before, each of the three new files took a merge of its own).
    assert refreshed.count("merge-tree") == 1
    head = repo.head()
    assert "a 35 upstream" in repo.read("a.py") and "a 10 edited" in repo.read("a.py")

    # The next commands know the refresh's commits: exact, and the series' chain.
    assert "apply" not in traced(repo, monkeypatch, tmp_path / "status2.json", "status")
    repo.ps("pop", "--all")
    again = traced(repo, monkeypatch, tmp_path / "push2.json", "push", "--all")
    assert "apply" not in again
    assert repo.head() == head


def test_carried_patches_give_the_trees_git_rebase_gives(tmp_path) -> None:
    repo, target = fork(tmp_path / "fork")
    repo.ps("push", "--all")
    base = repo.git("merge-base", "HEAD", target).strip()
    ours = Repo(tmp_path / "rebased")
    repo.git("worktree", "add", "-q", "--detach", str(ours.path), "HEAD")
    ours.git("rebase", "-q", "--onto", target, base)
    repo.ps("refresh", "--onto", target)
    assert repo.tree() == ours.tree()
    log = repo.git("log", "--format=%s", f"{target}..HEAD").split("\n")
    assert log[:-1] == ours.git("log", "--format=%s", f"{target}..HEAD").split("\n")[:-1]
