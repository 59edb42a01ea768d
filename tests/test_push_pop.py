"""push and pop: subsets, three-way carrying, conflicts, refusals, and what must never change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from .conftest import Repo, make_repo, names, numbered, replace_line


def shaped(tmp_path) -> Repo:
    """diag.patch edits line 10 of x.py; ess.patch (after it) edits line 12, inside its context."""
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x"), "y.py": numbered(30, "y")})
    repo.ps("init")
    replace_line(repo, "x.py", "x 10\n", "x 10 diag\n")
    repo.ps("new", "diag", "--tag", "diagnostic")
    replace_line(repo, "x.py", "x 12\n", "x 12 essential\n")
    repo.ps("new", "ess", "--tag", "essential")
    return repo


def test_push_only_essential_carries_a_patch_whose_context_a_diagnostic_shaped(tmp_path) -> None:
    repo = shaped(tmp_path)
    repo.ps("pop", "--all")
    repo.ps("push", "--only", "essential")
    assert names(repo) == ["ess.patch"]
    text = repo.read("x.py")
    assert "x 12 essential\n" in text and "diag" not in text
    status = json.loads(repo.ps("status", "--json").stdout)
    assert [p["matches"] for p in status["patches"]] == [None, "carried"]
    # pop --only gives the same tree as pop --all + push --except.
    repo.ps("push", "--all")
    assert "x 10 diag\n" in repo.read("x.py")
    repo.ps("pop", "--only", "diagnostic")
    only_tree = repo.tree()
    repo.ps("pop", "--all")
    repo.ps("push", "--except", "diagnostic")
    assert repo.tree() == only_tree


def test_conflict_names_patch_file_hunk_and_unselected_culprit(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x")})
    repo.ps("init")
    replace_line(repo, "x.py", "x 10\n", "x 10 diag\n")
    repo.ps("new", "diag", "--tag", "diagnostic")
    replace_line(repo, "x.py", "x 10 diag\n", "x 10 diag and essential\n")
    repo.ps("new", "ess", "--tag", "essential")
    repo.ps("pop", "--all")
    repo.write("notes.txt", "untracked\n")
    before = repo.state()
    result = repo.ps("push", "--only", "essential", code=1)
    err = result.stderr
    assert "patch 'ess.patch' conflicts" in err
    assert "file x.py" in err
    # the lines there now are the base's: the missing diag patch, not upstream, made the
    # difference, and no upstream commit was traced, so the title claims no maker
    assert (
        "there now (the patch expected -> what the tree holds):\n      - x 10 diag\n"
        "      + x 10\n" in err
    )
    assert "upstream made" not in err
    assert (
        "the patch makes (it expected -> it wants):\n"
        "      - x 10 diag\n      + x 10 diag and essential\n" in err
    )
    # --verbose: the three versions whole.
    err = repo.ps("push", "--only", "essential", "--verbose", code=1).stderr
    assert "the patch expected:\n      | x 10 diag" in err
    assert "there now:\n      | x 10\n" in err
    assert "the patch wants:\n      | x 10 diag and essential" in err
    assert "unselected patches touching these lines: diag.patch" in err
    assert repo.state() == before


def test_uncommitted_edit_in_a_pushed_file_is_refused_naming_it(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.ps("pop")
    replace_line(repo, "a.py", "a 5\n", "a 5 my edit\n")
    before = repo.state()
    result = repo.ps("push", code=2)
    assert "uncommitted edits in files this command would change: a.py" in result.stderr
    assert repo.state() == before
    # An untracked file where a patch creates one is refused too.
    repo.git("checkout", "a.py")
    repo.ps("push")
    repo.write("new.py", "from the patch\n")
    repo.ps("new", "adds", "--tag", "optimization", "new.py")
    repo.ps("pop")
    repo.write("new.py", "mine, untracked\n")
    before = repo.state()
    result = repo.ps("push", code=2)
    assert "would change: new.py" in result.stderr
    assert repo.state() == before


def test_push_all_when_everything_is_applied_exits_0(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    result = repo.ps("push", "--all")
    assert "nothing to push" in result.stdout
    result = repo.ps("pop", "--all")
    assert "popped 1 patch(es): p.patch" in result.stdout
    assert "nothing to pop" in repo.ps("pop").stdout


def test_repush_gives_identical_commits(repo: Repo) -> None:
    repo.ps("init")
    for i, f in enumerate(["a.py", "b.py"]):
        replace_line(repo, f, f"{f[0]} 7\n", f"{f[0]} 7 changed\n")
        repo.ps("new", f"p{i}", "--tag", "essential")
    top = repo.head()
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    assert repo.head() == top


def test_pop_name_and_push_name_undo_each_other(repo: Repo) -> None:
    repo.ps("init")
    for i in range(4):
        repo.write("a.py", repo.read("a.py") + f"added {i}\n")
        repo.ps("new", f"p{i}", "--tag", "essential")
    repo.ps("pop", "p1")
    assert names(repo) == ["p0.patch"]
    repo.ps("push", "p2")
    assert names(repo) == ["p0.patch", "p1.patch", "p2.patch"]
    result = repo.ps("pop", "p3", code=2)
    assert "not applied" in result.stderr


def test_new_captures_only_named_paths_and_untracked_only_when_named(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 1\n", "a 1 x\n")
    replace_line(repo, "b.py", "b 1\n", "b 1 y\n")
    repo.write("pkg/new_module.py", "print('new')\n")
    repo.ps("new", "only-a", "--tag", "essential", "a.py", "pkg/new_module.py")
    assert repo.git("status", "--porcelain").splitlines() == [" M b.py", "?? patches/"]
    patch = repo.read("patches/only-a.patch")
    assert "diff --git a/pkg/new_module.py b/pkg/new_module.py" in patch
    assert "b.py" not in patch
    result = repo.ps("new", "nothing", "--tag", "essential", "a.py", code=2)
    assert "no uncommitted edits in: a.py" in result.stderr
    result = repo.ps("new", "bad", "--tag", "opt", code=2)
    assert "unknown tag 'opt'" in result.stderr
    result = repo.ps("new", "only-a", "--tag", "essential", code=2)
    assert "already in the series" in result.stderr


def test_series_directory_outside_the_work_tree(tmp_path, monkeypatch) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(10, "a")})
    outside = tmp_path / "fork-patches"
    repo.ps("--dir", str(outside), "init")
    replace_line(repo, "a.py", "a 2\n", "a 2 x\n")
    repo.ps("--dir", str(outside), "new", "p", "--tag", "essential")
    assert (outside / "p.patch").exists() and not (repo.path / "patches").exists()
    monkeypatch.setenv("PATCHSTACK_DIR", str(outside))
    repo.ps("pop", "--all")
    assert repo.git("status", "--porcelain") == ""
    repo.ps("push", "--all", cwd=repo.path)


def test_commands_work_from_a_subfolder_and_detached_head(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"src/a.py": numbered(10, "a"), "b.py": numbered(5)})
    sub = repo.path / "src"
    repo.ps("init", cwd=sub)
    assert (repo.path / "patches" / "series").exists()
    replace_line(repo, "b.py", "line 2\n", "line 2 x\n")
    repo.ps("new", "top-level-file", "--tag", "essential", cwd=sub)
    repo.ps("pop", "--all", cwd=sub)
    repo.git("checkout", "-q", "--detach")
    repo.ps("push", "--all", cwd=sub)
    assert "line 2 x" in repo.read("b.py")
    assert repo.git("symbolic-ref", "-q", "HEAD", check=False) == ""


def test_status_reports_a_commit_that_no_longer_matches_its_patch(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []
    replace_line(repo, "a.py", "a 4\n", "a 4 sneaky\n")
    repo.git("commit", "-q", "-a", "--amend", "--no-edit")
    result = repo.ps("status", code=1)
    assert "commit differs from its patch file" in result.stdout
    replace_line(repo, "b.py", "b 1\n", "b 1 loose\n")
    data = json.loads(repo.ps("status", "--json", code=1).stdout)
    assert data["differs"] == ["p.patch"] and data["edits"] == ["b.py"]


def test_old_git_is_named(tmp_path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\necho 'git version 2.30.1'\n")
    (fake / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", "series"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "needs git >= 2.38, found: git version 2.30.1" in proc.stderr


def test_old_git_is_named_from_the_version_its_first_process_tells(repo: Repo, tmp_path) -> None:
    """git's version is learnt from the first git process of a command (its trace2 event
    stream names it: no ``git version`` process), and an old git is named before any of its
    answers is read; where that process names none, ``git version`` is asked."""
    fake = tmp_path / "bin"
    fake.mkdir()
    real = shutil.which("git")
    (fake / "git").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then echo "git version 2.99.0 (asked)"; exit 0; fi\n'
        'if [ "$GIT_TRACE2_EVENT" = 2 ]; then\n'
        '  echo \'{"event":"version","sid":"s","thread":"main","evt":"3","exe":"2.30.1"}\' >&2\n'
        "fi\n"
        f'exec {real} "$@"\n'
    )
    (fake / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    run = [sys.executable, "-m", "patchstack", "status"]
    proc = subprocess.run(run, cwd=repo.path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "needs git >= 2.38, found: git version 2.30.1" in proc.stderr
    env["GIT_TRACE2_EVENT"] = str(tmp_path / "theirs.json")  # the user traces: not taken over
    proc = subprocess.run(run, cwd=repo.path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "needs git" not in proc.stderr, proc.stderr
    assert "no series file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args", [("--help",), ("push", "--help"), ("--version",)])
def test_help_and_version_need_no_repository(tmp_path, args) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_fast_path_and_git_apply_make_identical_commits(tmp_path, monkeypatch) -> None:
    """The Python fast path (hunks proven by blob ids) must equal git apply + commit-tree."""

    files = {f"d{i}/f{i}.py": numbered(60, f"f{i}") for i in range(4)}
    files["tail.txt"] = "no newline at end"
    files["run.sh"] = "#!/bin/sh\necho hi\n"
    repo = make_repo(tmp_path / "fork", files)
    repo.git("update-index", "--chmod=+x", "run.sh")
    repo.git("commit", "-q", "-m", "exec")
    repo.ps("init")
    for i in range(6):
        path = f"d{i % 4}/f{i % 4}.py"
        replace_line(repo, path, f"f{i % 4} {5 + i * 7}\n", f"changed {i}\nand more {i}\n")
        if i == 2:
            repo.write("tail.txt", "no newline at end, still none")
            repo.write("new dir/added file.txt", "fresh\n")
        if i == 4:
            repo.write("run.sh", "#!/bin/sh\necho changed\n")
            (repo.path / "d3/f3.py").unlink()
        repo.ps("new", f"p{i}", "--tag", "essential", ".")
    top = repo.head()
    for fast in (True, False):
        monkeypatch.setenv("PATCHSTACK_NO_FAST_PATH", "" if fast else "1")
        (repo.path / ".git" / "patchstack" / "cache").unlink(missing_ok=True)
        repo.ps("pop", "--all")
        repo.ps("push", "--all")
        assert repo.head() == top, f"fast path {fast}"
        assert repo.git("status", "--porcelain") == "?? patches/\n"


def test_plain_commits_on_top_of_the_stack_are_never_buried(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    replace_line(repo, "b.py", "b 3\n", "b 3 mine\n")
    mine = repo.commit_all("my own commit")
    before = repo.state()
    for args in (
        ("push", "--all"),
        ("pop", "--all"),
        ("new", "q", "--tag", "essential"),
        ("refresh",),
        ("refresh", "--drop-merged"),
        ("refresh", "--onto", "HEAD~2"),
    ):
        result = repo.ps(*args, code=2)
        assert "HEAD has 1 commit(s) on top of the applied patches" in result.stderr, args
        assert mine[:12] in result.stderr and "--from-commit" in result.stderr
        assert repo.state() == before
    # status agrees: the patch is applied, the commit is on top of it, upstream did not move.
    status = repo.ps("status", code=None)
    assert "applied: 1 of 1" in status.stdout and "p.patch" in status.stdout
    assert "HEAD has 1 commit(s) on top of the applied patches" in status.stdout
    assert "upstream moved" not in status.stdout
    data = json.loads(repo.ps("status", "--json", code=None).stdout)
    assert data["applied"] == ["p.patch"] and data["on_top"] == [mine]


def test_new_refuses_when_the_base_moved(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.ps("pop")
    replace_line(repo, "b.py", "b 3\n", "b 3 upstream\n")
    repo.commit_all("upstream moved")
    replace_line(repo, "a.py", "a 9\n", "a 9 new\n")
    result = repo.ps("new", "q", "--tag", "essential", code=2)
    assert "is not the series base" in result.stderr


def test_push_onto_builds_the_stack_on_another_base(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.ps("pop", "--all")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "newer")
    replace_line(repo, "b.py", "b 30\n", "b 30 upstream\n")
    newer = repo.commit_all("upstream moved")
    repo.git("checkout", "-q", "main")
    assert repo.head() == base
    repo.ps("push", "--all", "--onto", "newer")
    assert repo.git("rev-parse", "HEAD~1").strip() == newer
    assert "a 3 patched" in repo.read("a.py") and "b 30 upstream" in repo.read("b.py")
    assert names(repo) == ["p.patch"]
    result = repo.ps("push", "--onto", "no-such-rev", code=2)
    assert "unknown revision 'no-such-rev'" in result.stderr


def test_a_conflict_a_commit_under_the_stack_caused_does_not_advise_with_deps(tmp_path) -> None:
    """No unselected patch is involved: the hint says the tree under the patch changed and
    points at refresh, not at --with-deps (which adds nothing here)."""
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x")})
    repo.ps("init")
    replace_line(repo, "x.py", "x 10\n", "x 10 ess\n")
    repo.ps("new", "ess", "--tag", "essential")
    repo.ps("pop", "--all")
    replace_line(repo, "x.py", "x 10\n", "x 10 mine\n")
    repo.commit_all("under the stack")
    before = repo.state()
    err = repo.ps("push", "--all", code=1).stderr
    assert "--with-deps" not in err
    assert "the tree it is pushed onto changed these lines" in err
    assert "'patchstack refresh'" in err
    assert repo.state() == before


def test_a_conflict_an_unselected_patch_explains_names_it_in_the_hint(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x")})
    repo.ps("init")
    replace_line(repo, "x.py", "x 10\n", "x 10 diag\n")
    repo.ps("new", "diag", "--tag", "diagnostic")
    replace_line(repo, "x.py", "x 10 diag\n", "x 10 diag and essential\n")
    repo.ps("new", "ess", "--tag", "essential")
    repo.ps("pop", "--all")
    err = repo.ps("push", "--only", "essential", code=1).stderr
    assert "carry the patches it leans on too (diag.patch): 'push --with-deps'" in err
