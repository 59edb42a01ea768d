"""The walk of the base's move (`commands/refresh/drift.walk`: `status`'s drift and the
review's `base.hits`) gives no pathspec to git, and picks the commits `git log -- <paths>`
picks: checked against git itself, on a move with renames, quoted names, merges that took
one side, a side that changed a file and put it back, and a merged stack's own commit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchstack.commands.refresh.drift import walk
from patchstack.git.repo import find_repo
from patchstack.model import trailers
from patchstack.model.patchfile import parse_patch

from .conftest import Repo, built_once

NAMES = ["plain.py", "spaced name.py", "tab\tname.py", 'q"uote.py', "ünï.py", "dir/old.py"]


STEP = [1]  # seconds between commits (git orders a walk by date; 0: all dates tied)


def _date(repo: Repo) -> None:
    n = int(repo.git("rev-list", "--all", "--count").strip() or 0)
    stamp = f"{1_800_000_000 + n * STEP[0]} +0000"
    os.environ["GIT_AUTHOR_DATE"] = os.environ["GIT_COMMITTER_DATE"] = stamp


def _commit(repo: Repo, message: str) -> str:
    _date(repo)
    repo.git("add", "-A")
    repo.git("commit", "-q", "--allow-empty", "-m", message)
    return repo.head()


def _merge(repo: Repo, side: str, message: str) -> str:
    _date(repo)
    repo.git("merge", "-q", "--no-ff", "-m", message, side)
    return repo.head()


def _edit(repo: Repo, rel: str, line: str) -> None:
    p = repo.path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a") as f:
        f.write(line + "\n")


def _patch(repo: Repo, base: str, change) -> str:
    """The diff of ``change`` (a function editing the work tree) on ``base``, as a patch."""
    repo.git("checkout", "-q", "--detach", base)
    change()
    _commit(repo, "a patch")
    text = repo.git("diff", "-M", "--full-index", "HEAD~1", "HEAD")
    repo.git("checkout", "-q", "-")
    return text


@pytest.fixture(params=[1, 0], ids=["dated", "tied"])
def moved(tmp_path, request) -> tuple[Repo, str, str, Path, Path]:
    return _moved(tmp_path, request.param)


@built_once
def _moved(tmp_path: Path, step: int) -> tuple[Repo, str, str, Path, Path]:
    """The move (built once per worker for each step; `_date` sets the dates it commits
    with in the environment, given back as they were when it is done)."""
    dates = {k: os.environ[k] for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")}
    try:
        return _build_moved(tmp_path, step)
    finally:
        os.environ.update(dates)


def _build_moved(tmp_path: Path, step: int) -> tuple[Repo, str, str, Path, Path]:
    STEP[0] = step
    repo = Repo(tmp_path / "r")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    for name in NAMES:
        repo.write(name, "".join(f"{name} line {i}\n" for i in range(12)))
    a = _commit(repo, "upstream starts")

    patches = {
        "p1.patch": _patch(repo, a, lambda: (_edit(repo, "spaced name.py", "p1"), None)),
        "p2.patch": _patch(
            repo,
            a,
            lambda: (repo.git("mv", "dir/old.py", "dir/new.py"), _edit(repo, "ünï.py", "p2")),
        ),
        "p3.patch": _patch(
            repo, a, lambda: (_edit(repo, "tab\tname.py", "p3"), _edit(repo, 'q"uote.py', "p3"))
        ),
    }
    repo.git("checkout", "-q", "main")

    _edit(repo, "plain.py", "u1")
    _commit(repo, "upstream: a file no patch touches")
    _edit(repo, "spaced name.py", "u2")
    _commit(repo, "upstream: a spaced name")
    repo.git("mv", "tab\tname.py", "renamed\ttab.py")
    _commit(repo, "upstream: renames a quoted name")
    # A side branch that changes a patched file while main does not: the merge is hidden.
    repo.git("checkout", "-q", "-b", "side1")
    _edit(repo, 'q"uote.py', "side1")
    _commit(repo, "side1: a quote")
    repo.git("checkout", "-q", "main")
    _edit(repo, "plain.py", "u3")
    _commit(repo, "upstream: plain again")
    _merge(repo, "side1", "merge side1")
    # Both sides change patched files: the merge is shown.
    repo.git("checkout", "-q", "-b", "side2")
    _edit(repo, "ünï.py", "side2")
    _commit(repo, "side2: unicode")
    repo.git("checkout", "-q", "main")
    _edit(repo, "spaced name.py", "u4")
    _commit(repo, "upstream: spaced again")
    _merge(repo, "side2", "merge side2")
    # A side that changes a patched file and puts it back: git prunes it.
    repo.git("checkout", "-q", "-b", "side3")
    _edit(repo, "ünï.py", "side3")
    _commit(repo, "side3: changes unicode")
    repo.git("checkout", "-q", "HEAD~1", "--", "ünï.py")
    _commit(repo, "side3: puts it back")
    repo.git("checkout", "-q", "main")
    _edit(repo, "plain.py", "u5")
    _commit(repo, "upstream: plain a third time")
    _merge(repo, "side3", "merge side3")
    # A folder where a patch makes a file: the literal pathspec matches under it.
    _edit(repo, "dir/new.py/inner.py", "a folder")
    _commit(repo, "upstream: a folder named like the patch's new file")
    _edit(repo, "spaced name.py", "stack")
    _commit(repo, f"a merged stack's own commit\n\n{trailers.PATCH}: p1.patch")
    _edit(repo, "dir/old.py", "u6")
    _commit(repo, "upstream: the renamed file's old name")
    b = repo.head()

    folders = []
    for label, base in (("old", a), ("new", b)):
        folder = tmp_path / label
        folder.mkdir()
        (folder / "series").write_text(
            f"# base: {base}\n" + "".join(f"{p} # essential\n" for p in patches)
        )
        for name, text in patches.items():
            (folder / name).write_text(text)
        folders.append(folder)
    return repo, a, b, folders[0], folders[1]


def _oracle(repo: Repo, a: str, b: str, owners: dict[str, list[str]]) -> list[tuple[str, list]]:
    """The walk as it was: `git log -- <every path>` (git's history simplification), and
    each commit's paths against its first parent."""
    fmt = ["log", "--reverse", "--no-renames", "--format=%H", "--invert-grep"]
    fmt += ["--extended-regexp", f"--grep={trailers.PATCH_COMMIT_GREP}", f"{a}..{b}", "--"]
    out = []
    for oid in repo.git(*fmt, *sorted(owners)).split():
        changed = repo.git(
            "-c", "core.quotePath=false", "diff-tree", "-z", "--no-commit-id", "--name-only",
            "-r", "--root", "--no-renames", f"{oid}^1" if _has_parent(repo, oid) else oid,
            oid,
        ).split("\0")  # fmt: skip
        hit = [f for f in changed if f in owners]
        out.append((oid, list(dict.fromkeys(n for f in hit for n in owners[f]))))
    return out


def _has_parent(repo: Repo, oid: str) -> bool:
    return len(repo.git("rev-list", "--parents", "-n1", oid).split()) > 1


def test_the_walk_gives_git_no_pathspec_and_keeps_git_logs_commits(moved, tmp_path) -> None:
    repo, a, b, old, new = moved
    trace = tmp_path / "trace"
    os.environ["GIT_TRACE"] = str(trace)
    try:
        doc = json.loads(repo.ps("review", str(old), str(new), "--json").stdout)
    finally:
        del os.environ["GIT_TRACE"]
    owners: dict[str, list[str]] = {}
    for name in ("p1.patch", "p2.patch", "p3.patch"):
        for path in parse_patch((new / name).read_bytes(), name).paths:
            owners.setdefault(path, []).append(name)
    assert {"tab\tname.py", 'q"uote.py', "ünï.py", "dir/old.py", "dir/new.py"} <= set(owners)
    expected = _oracle(repo, a, b, owners)
    got = [(h["commit"], h["patches"]) for h in doc["base"]["hits"]]
    assert got == expected
    subjects = {h["subject"] for h in doc["base"]["hits"]}
    assert "merge side2" in subjects and "merge side1" not in subjects
    assert not any(s.startswith("side3") for s in subjects)  # the side git prunes
    assert "upstream: a folder named like the patch's new file" in subjects
    assert "a merged stack's own commit" not in subjects
    # No git process was given the series' paths.
    logs = [ln for ln in trace.read_text().splitlines() if "trace: built-in: git log" in ln]
    assert logs and not any("ünï.py" in ln or "uote.py" in ln for ln in logs)


def test_status_drift_and_the_review_are_the_same_walk(moved) -> None:
    repo, a, b, _old, _new = moved
    owners = {"ünï.py": ["p2.patch"], "spaced name.py": ["p1.patch"]}
    count, touching, every = walk(find_repo(str(repo.path)), a, b, owners)
    assert count == len(every) == len(repo.git("rev-list", f"{a}..{b}").split()) - 1
    assert [(c.oid, list(c.patches)) for c in touching] == _oracle(repo, a, b, owners)


def test_the_culprit_walk_of_many_files_is_the_pathspec_walks(moved, monkeypatch) -> None:
    """`line_changes` of more files than `PATHSPEC_MAX` finds the commits that touch them in
    a walk without pathspec and diffs those only, at those paths: the same changes as git's
    pathspec walk (first parent, merges against it, folders matched by what is under them)."""
    from patchstack.git import history

    repo, a, b, _old, _new = moved
    git = find_repo(str(repo.path))
    many = [*NAMES, "renamed\ttab.py", "dir/new.py"] + [f"none{i}.py" for i in range(12)]
    # (a path with a newline cannot be a line of the diff's standard input: diffed whole)
    for paths in (many, NAMES[1:5], ["plain.py", *many], [*many, "new\nline.py"]):
        paths = list(dict.fromkeys(paths))
        monkeypatch.setattr(history, "PATHSPEC_MAX", 1000)
        given = git.line_changes(f"{a}..{b}", paths, trailers.PATCH)
        monkeypatch.setattr(history, "PATHSPEC_MAX", 2)
        filtered = git.line_changes(f"{a}..{b}", paths, trailers.PATCH)
        assert filtered == given and len(given) > 3


def test_a_first_parent_log_of_many_paths_is_the_pathspec_walks(moved, monkeypatch) -> None:
    """`log_commits(first_parent=True)` of many paths (the evidence search's, of a patch's
    files) is filtered here: the commits git's pathspec walk gives, in its order."""
    from patchstack.git import history

    repo, a, b, _old, _new = moved
    git = find_repo(str(repo.path))
    for paths in (NAMES, ["dir/new.py", "renamed\ttab.py", "spaced name.py"]):
        monkeypatch.setattr(history, "PATHSPEC_MAX", 1000)
        given = git.log_commits(f"{a}..{b}", paths, first_parent=True)
        monkeypatch.setattr(history, "PATHSPEC_MAX", 2)
        assert git.log_commits(f"{a}..{b}", paths, first_parent=True) == given
        assert len(given) > 3
