"""Merges through one ``merge-tree --stdin`` process (of trees on git >= 2.49, of throwaway
commits under ``stdbuf -o0`` on 2.39-2.48, CI's Debian 12 git among them) give what one process
per merge gives: the same trees once the markers are labelled, the same conflicted paths and
the same messages, on clean merges, conflicts, renames, deletions and awkward names. Run it
with another git on PATH too (``tools/git_versions.sh ... v2.55.0 -- tests/test_merge_batch.py``).
"""

from __future__ import annotations

import os
import shutil

import pytest

from patchstack.engine.merging import merge
from patchstack.git import find_repo
from patchstack.git.merge import BATCH_VERSION, COMMIT_BATCH_VERSION
from patchstack.git.process import version

from .conftest import Repo, numbered

pytestmark = pytest.mark.skipif(
    version()[0] < COMMIT_BATCH_VERSION
    or (version()[0] < BATCH_VERSION and shutil.which("stdbuf") is None),
    reason="merge-tree --stdin answers one merge at a time from git 2.49 on, and from 2.39"
    " under stdbuf -o0",
)

BASE = {
    "a.py": numbered(40, "a"),
    "dir/b.py": numbered(40, "b"),
    "gone.py": numbered(10, "g"),
    "old name.py": numbered(30, "o"),
    "café/ü.txt": numbered(20, "u"),
}


def tree(repo: Repo, files: dict[str, str]) -> str:
    repo.git("rm", "-rq", "--cached", "--ignore-unmatch", ".")
    for path, text in files.items():
        repo.write(path, text)
        repo.git("add", "--", path)
    return repo.git("write-tree").strip()


def edit(files: dict[str, str], path: str, old: str, new: str) -> dict[str, str]:
    out = dict(files)
    out[path] = out[path].replace(old, new)
    return out


def cases(repo: Repo) -> list[tuple[str, str, str, str]]:
    base = tree(repo, BASE)
    renamed = {k: v for k, v in BASE.items() if k != "old name.py"}
    renamed["new name.py"] = BASE["old name.py"]
    no_gone = {k: v for k, v in BASE.items() if k != "gone.py"}
    return [
        (
            "clean",
            base,
            tree(repo, edit(BASE, "a.py", "a 3\n", "a 3 upstream\n")),
            tree(repo, edit(BASE, "a.py", "a 30\n", "a 30 patch\n")),
        ),
        (
            "conflict",
            base,
            tree(repo, edit(BASE, "dir/b.py", "b 7\n", "b 7 upstream\n")),
            tree(repo, edit(BASE, "dir/b.py", "b 7\n", "b 7 patch\n")),
        ),
        (
            "rename",
            base,
            tree(repo, renamed),
            tree(repo, edit(BASE, "old name.py", "o 5\n", "o 5 patch\n")),
        ),
        (
            "delete",
            base,
            tree(repo, no_gone),
            tree(repo, edit(BASE, "gone.py", "g 2\n", "g 2 patch\n")),
        ),
        (
            "names",
            base,
            tree(repo, edit(BASE, "café/ü.txt", "u 1\n", "u 1 upstream\n")),
            tree(repo, edit(BASE, "café/ü.txt", "u 1\n", "u 1 patch\n")),
        ),
    ]


def test_one_process_for_all_merges_equals_one_process_each(repo: Repo) -> None:
    triples = cases(repo)
    git = find_repo(str(repo.path))
    try:
        assert git.merge_mode() in ("trees", "commits")
        labels = ("new base", "the patch")
        batch = [merge(git, b, o, t, labels, "old base") for _, b, o, t in triples]
        assert "merge-tree" in git._procs  # the one process answered them
        git._memo[("merge-mode",)] = "each"
        single = [merge(git, b, o, t, labels, "old base") for _, b, o, t in triples]
    finally:
        git.close()
    for (name, *_), a, b in zip(triples, batch, single, strict=True):
        assert (a.tree, a.clean, a.conflicted, a.messages) == (
            b.tree,
            b.clean,
            b.conflicted,
            b.messages,
        ), name
    clean = {name: r.clean for (name, *_), r in zip(triples, batch, strict=True)}
    assert clean == {
        "clean": True,
        "conflict": False,
        "rename": True,
        "delete": False,
        "names": False,
    }
    assert "new name.py" in repo.git("ls-tree", "-r", "--name-only", batch[2].tree)
    assert "CONFLICT (modify/delete)" in batch[3].messages


def test_a_merge_git_refuses_is_an_error_naming_git_and_the_process_recovers(repo: Repo) -> None:
    base = tree(repo, BASE)
    git = find_repo(str(repo.path))
    try:
        with pytest.raises(Exception, match="merge-tree"):
            if git.merge_mode() == "trees":
                git.merge_trees(base, "0" * len(base), base, ("a", "b"))
            else:  # asked of commits: one that does not exist
                git.merge_commits("f" * len(base), "f" * len(base), ("a", "b"))
        assert git.merge_trees(base, base, base, ("a", "b")).tree == base
    finally:
        git.close()


def test_an_answer_cut_short_is_not_taken_for_the_next_one(repo: Repo, monkeypatch) -> None:
    """An interrupt while an answer is being read (Ctrl-C, a signal) ends the process: the
    next merge is asked of a new one, never answered with the rest of the old answer."""
    from patchstack.git import merge as merge_module

    triples = cases(repo)
    git = find_repo(str(repo.path))
    try:
        _, b, o, t = triples[1]  # a conflict: an answer of several fields
        expected = git.merge_trees(b, o, t, ("x", "y"))
        real = merge_module._Answers.field
        calls = {"n": 0}

        def cut(self: merge_module._Answers, timeout: float | None = None) -> bytes:
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            return real(self, timeout)

        monkeypatch.setattr(merge_module._Answers, "field", cut)
        with pytest.raises(KeyboardInterrupt):
            git.merge_trees(b, o, t, ("x", "y"))
        monkeypatch.setattr(merge_module._Answers, "field", real)
        assert git.merge_trees(b, o, t, ("x", "y")) == expected
    finally:
        git.close()


@pytest.mark.skipif(version()[0] >= BATCH_VERSION, reason="a git that flushes needs no proof")
def test_a_git_whose_answers_stay_buffered_gets_a_process_per_merge(
    repo: Repo, tmp_path, monkeypatch
) -> None:
    """Where ``stdbuf -o0`` does not unbuffer git (a stand-in that ignores it), the first
    answer does not come whole: merges go one process each, with the same results."""
    from patchstack.git import merge as merge_module

    fake = tmp_path / "bin" / "stdbuf"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nshift\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(merge_module, "PROBE_SECONDS", 0.5)
    triples = cases(repo)
    git = find_repo(str(repo.path))
    try:
        assert git.merge_mode() == "commits"
        labels = ("new base", "the patch")
        results = [merge(git, b, o, t, labels, "old base") for _, b, o, t in triples]
        assert "merge-tree" not in git._procs or git._procs["merge-tree"].poll() is not None
        git._memo[("merge-mode",)] = "each"
        single = [merge(git, b, o, t, labels, "old base") for _, b, o, t in triples]
    finally:
        git.close()
    assert [(r.tree, r.clean, r.conflicted) for r in results] == [
        (r.tree, r.clean, r.conflicted) for r in single
    ]
