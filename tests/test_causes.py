"""Messages that name the real cause, with a next step that works (issue 26, item 11): a
repository path with a newline, a repository owned by another user, changes inside a
submodule. Each advised step is run, and the command then works."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from .conftest import Repo, make_repo, numbered, replace_line


def test_a_repository_whose_path_holds_a_newline_works(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork\nwith a newline", {"a.py": numbered(10, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "fix", "--tag", "essential")  # format-patch, through its alternates
    repo.ps("pop")
    assert "patched" not in repo.read("a.py")
    repo.ps("push")
    repo.ps("undo")
    assert json.loads(repo.ps("status", "--json").stdout)["applied"] == []
    repo.ps("worktree", "../exp")
    assert "a 3 patched" in (tmp_path / "exp" / "a.py").read_text()
    repo.ps("worktree", "--remove", "../exp")


def test_a_repository_of_another_user_names_git_s_check_and_its_advice_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "theirs", {"a.py": "a\n"})
    if os.geteuid() == 0:
        for folder, dirs, files in os.walk(repo.path):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.lchown(name, 65534, 65534)
    else:  # git's own switch for the test: ownership taken as another user's
        monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    config = tmp_path / "gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    refused = repo.ps("status", code=2).stderr
    assert f"git refuses to work in {repo.path}: the repository belongs to" in refused
    assert "git's safe.directory check" in refused and "not inside a git work tree" not in refused
    step = refused.split("run '", 1)[1].split("'", 1)[0]
    assert step == f"git config --global --add safe.directory {repo.path}"
    Repo(tmp_path).git(*shlex.split(step)[1:])  # what the hint says, as the user would
    repo.ps("init")
    assert "branch: main" in repo.ps("status").stdout


def test_changes_inside_a_submodule_are_named_and_both_advised_steps_work(
    tmp_path: Path,
) -> None:
    sub = make_repo(tmp_path / "lib", {"lib.c": "int x;\n"})
    repo = make_repo(tmp_path / "fork", {"a.py": "a\n"})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "lib")
    repo.git("commit", "-qm", "add the submodule")
    repo.ps("init")
    inner = Repo(repo.path / "lib")
    inner.write("lib.c", "int x = 1;\n")
    inner.write("new.c", "int y;\n")
    st = json.loads(repo.ps("status", "--json").stdout)
    assert st["edits"] == [] and st["submodules"] == ["lib"]
    out = repo.ps("status").stdout
    assert "changes inside submodules (a patch holds only the commit a submodule is at):" in out
    assert "next: commit them in the submodule ('git -C lib add -A && git -C lib commit')" in out
    for args in (["new", "x", "--tag", "essential"], ["new", "x", "--tag", "essential", "lib"]):
        refused = repo.ps(*args, code=2).stderr
        assert "the only changes are inside the submodule(s) lib" in refused
        assert "change nothing" not in refused and "no uncommitted edits" not in refused
    # Dropping them, as advised: nothing left to report.
    drop = out.split("or drop them ('", 1)[1].split("')", 1)[0]
    for part in drop.split(" && "):
        repo.git(*shlex.split(part)[1:])
    assert json.loads(repo.ps("status", "--json").stdout)["submodules"] == []
    # Committing them, as advised: the new commit of the submodule is a patch.
    inner.write("lib.c", "int x = 2;\n")
    inner.git("add", "-A")
    inner.git("commit", "-qm", "the fork's change to lib")
    repo.ps("new", "lib-fix", "--tag", "essential", "lib")
    assert (
        "+Subproject commit " + inner.head()
        in (repo.path / "patches" / "lib-fix.patch").read_text()
    )
    repo.ps("pop")
    assert repo.git("ls-tree", "HEAD", "lib").split()[2] == sub.head()
