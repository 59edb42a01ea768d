"""Merges through one ``merge-tree --stdin`` process (git >= 2.49) give what one process per
merge gives: the same trees once the markers are labelled, the same conflicted paths and the
same messages, on clean merges, conflicts, renames, deletions and awkward names.

CI's git (Debian 12's 2.39) has no such process, so there this file is skipped; run it with a
newer git on PATH (``tools/git_versions.sh ... v2.55.0 -- tests/test_merge_batch.py``).
"""

from __future__ import annotations

import pytest

from patchstack.engine.merging import merge
from patchstack.git import find_repo
from patchstack.git.merge import BATCH_VERSION
from patchstack.git.process import version

from .conftest import Repo, numbered

pytestmark = pytest.mark.skipif(
    version()[0] < BATCH_VERSION,
    reason=f"merge-tree --stdin answers one merge at a time from git {BATCH_VERSION} on",
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
        assert git.batch_merges()
        labels = ("new base", "the patch")
        batch = [merge(git, b, o, t, labels, "old base") for _, b, o, t in triples]
        assert "merge-tree" in git._procs  # the one process answered them
        git._memo[("merge-batch",)] = False
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
            git.merge_trees(base, "0" * len(base), base, ("a", "b"))
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

        def cut(self: merge_module._Answers) -> bytes:
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            return real(self)

        monkeypatch.setattr(merge_module._Answers, "field", cut)
        with pytest.raises(KeyboardInterrupt):
            git.merge_trees(b, o, t, ("x", "y"))
        monkeypatch.setattr(merge_module._Answers, "field", real)
        assert git.merge_trees(b, o, t, ("x", "y")) == expected
    finally:
        git.close()
