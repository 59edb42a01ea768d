"""edit, rename, tag, labels and the per-patch log: the series' metadata, applied or not.

None of these changes a tree: an applied patch's commit (and the ones above it) is made again
with the very same tree and new trailers or message; the patch file's diff keeps its bytes.
Each is one entry of the operation log that undo takes back exactly.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line


def full(repo: Repo) -> tuple[object, ...]:
    """Everything a command may change: branch, HEAD, index, status and every file."""
    return (
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.head(),
        repo.git("ls-files", "-s"),
        repo.status_all(),
        repo.snapshot(),
    )


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    """Three patches, all applied: one (a.py), two (b.py), three (a.py and c.py)."""
    repo = make_repo(
        module_env.mktemp("edit") / "fork",
        {"a.py": numbered(40, "a"), "b.py": numbered(40, "b"), "c.py": numbered(40, "c")},
    )
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 one\n")
    repo.ps("new", "one", "--tag", "essential", "-m", "First patch\n\nWhy it exists.")
    replace_line(repo, "b.py", "b 5\n", "b 5 two\n")
    repo.ps("new", "two", "--tag", "diagnostic", "-m", "Second patch")
    replace_line(repo, "a.py", "a 30\n", "a 30 three\n")
    replace_line(repo, "c.py", "c 30\n", "c 30 three\n")
    repo.ps("new", "three", "--tag", "optimization,moe", "-m", "Third patch")
    repo.write("notes.txt", "untracked, mine\n")
    return repo.path


@pytest.fixture
def fork(built: Path, tmp_path: Path) -> Repo:
    return copy_repo(built, tmp_path / "fork")


def trees(repo: Repo) -> list[str]:
    """The trees of the applied commits, bottom to top."""
    count = len(names(repo))
    return [repo.tree(f"HEAD~{i}") for i in range(count, -1, -1)]


def trailer(repo: Repo, rev: str, key: str) -> str:
    return repo.git("log", "-1", f"--format=%(trailers:key={key},valueonly)", rev).strip()


def diff_part(data: str) -> str:
    return data[data.index("\n---\n") :]


def undo_restores(repo: Repo, before: tuple[object, ...]) -> None:
    """undo gives back ``before`` exactly, redo the state after; left at ``before``."""
    after = full(repo)
    repo.ps("undo")
    assert full(repo) == before
    repo.ps("redo")
    assert full(repo) == after
    repo.ps("undo")


def test_edit_message_and_author_of_an_applied_patch_keeps_trees_and_diff(fork: Repo) -> None:
    before, old_trees = full(fork), trees(fork)
    old = fork.read("patches/one.patch")
    result = fork.ps("edit", "one", "-m", "Better subject\n\nA new why.", "--author", "Jö <j@x>")
    assert "edited one.patch: Better subject" in result.stdout
    assert trees(fork) == old_trees
    new = fork.read("patches/one.patch")
    assert diff_part(new) == diff_part(old)
    assert "Subject: [PATCH] Better subject\n\nA new why.\n---\n" in new
    assert "From: =?UTF-8?q?J=C3=B6?= <j@x>" in new
    assert fork.git("log", "-1", "--format=%an|%s|%b", "HEAD~2").startswith("Jö|Better subject|")
    assert trailer(fork, "HEAD~2", "Patchstack-Patch") == "one.patch"
    # The commits are the ones a pop and push build from the files.
    head = fork.head()
    fork.ps("pop", "--all")
    fork.ps("push", "--all")
    assert fork.head() == head
    fork.ps("undo")
    fork.ps("undo")
    undo_restores(fork, before)


def test_edit_an_unapplied_patch_and_in_the_editor(fork: Repo, tmp_path: Path) -> None:
    fork.ps("pop", "--all")
    head = fork.head()
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\n"
        "path = sys.argv[1]\n"
        "text = open(path).read()\n"
        "assert text.startswith('Second patch\\n') and '# The message of patch two' in text\n"
        "open(path, 'w').write('Edited subject\\n\\nEdited body.\\n# a comment\\n')\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    os.environ["GIT_EDITOR"] = f"python3 {editor}"
    try:
        before = full(fork)
        fork.ps("edit", "two")
        text = fork.read("patches/two.patch")
        assert "Subject: [PATCH] Edited subject\n\nEdited body.\n---\n" in text
        assert "a comment" not in text and fork.head() == head
        undo_restores(fork, before)
        os.environ["GIT_EDITOR"] = (
            'python3 -c \'import sys; open(sys.argv[1], "w").write("# x\\n")\''
        )
        before = full(fork)
        result = fork.ps("edit", "two", code=2)
        assert "the message is empty" in result.stderr
        assert full(fork) == before
    finally:
        del os.environ["GIT_EDITOR"]
    assert not (fork.path / ".git" / "PATCHSTACK_EDITMSG").exists()


def test_rename_applied_and_unapplied_keeps_bytes_and_trees(fork: Repo) -> None:
    before, old_trees = full(fork), trees(fork)
    data = fork.read("patches/two.patch")
    fork.ps("rename", "two", "nccl-two")
    assert trees(fork) == old_trees
    assert fork.read("patches/nccl-two.patch") == data
    assert not (fork.path / "patches" / "two.patch").exists()
    assert "nccl-two.patch # diagnostic\n" in fork.read("patches/series")
    assert trailer(fork, "HEAD~1", "Patchstack-Patch") == "nccl-two.patch"
    assert names(fork) == ["one.patch", "nccl-two.patch", "three.patch"]
    undo_restores(fork, before)
    fork.ps("pop", "--all")
    before = full(fork)
    fork.ps("rename", "three.patch", "three-renamed.diff")
    assert fork.head() == before[1]
    assert "three-renamed.diff # optimization, moe\n" in fork.read("patches/series")
    undo_restores(fork, before)


def test_rename_and_edit_refuse_unknown_and_taken_names(fork: Repo) -> None:
    before = full(fork)
    result = fork.ps("rename", "tow", "x", code=2)
    assert "no patch named 'tow'" in result.stderr and "did you mean 'two'?" in result.stderr
    result = fork.ps("rename", "one", "two", code=2)
    assert "already in the series" in result.stderr
    result = fork.ps("rename", "one", "bad/name", code=2)
    assert "path separator" in result.stderr
    result = fork.ps("edit", "one", "--author", "nobody", code=2)
    assert "'Name <email>'" in result.stderr
    assert full(fork) == before


def test_tag_and_labels_applied_and_unapplied(fork: Repo) -> None:
    before, old_trees = full(fork), trees(fork)
    fork.ps("tag", "one", "diagnostic,nccl")
    assert trees(fork) == old_trees
    assert trailer(fork, "HEAD~2", "Patchstack-Tag") == "diagnostic"
    assert "one.patch # diagnostic, nccl\n" in fork.read("patches/series")
    undo_restores(fork, before)
    head = fork.head()
    fork.ps("tag", "three", "--add-label", "nvidia", "--remove-label", "moe")
    assert fork.head() == head  # labels live in the series file only
    assert "three.patch # optimization, nvidia\n" in fork.read("patches/series")
    result = fork.ps("tag", "three", "--remove-label", "moe", code=2)
    assert "has no label 'moe'" in result.stderr
    result = fork.ps("tag", "three", "--add-label", "essential", code=2)
    assert "is a tag, not a label" in result.stderr
    fork.ps("pop", "--all")
    head = fork.head()
    fork.ps("tag", "two", "essential")
    assert fork.head() == head and "two.patch # essential\n" in fork.read("patches/series")


def test_series_and_status_show_labels_and_disagreements(fork: Repo) -> None:
    assert "+ three.patch  [optimization, moe]" in fork.ps("series").stdout
    assert "+ three.patch [optimization, moe]" in fork.ps("status").stdout
    # The series edited by hand: a tag, then two swapped lines.
    series = fork.read("patches/series")
    fork.write("patches/series", series.replace("two.patch # diagnostic", "two.patch # essential"))
    result = fork.ps("status", code=1)
    assert "the commit of two.patch says tag diagnostic, the series essential" in result.stdout
    assert "next: 'patchstack tag two.patch essential'" in result.stdout
    data = json.loads(fork.ps("status", "--json", code=1).stdout)
    assert [p["commit_tag"] for p in data["patches"]] == ["essential", "diagnostic", "optimization"]
    assert data["patches"][2]["labels"] == ["moe"] and data["patches"][1]["labels"] == []
    fork.ps("tag", "two", "essential")
    assert json.loads(fork.ps("status", "--json").stdout)["disagreements"] == []
    swapped = fork.read("patches/series").replace("two.patch # essential\n", "")
    fork.write("patches/series", swapped + "two.patch # essential\n")
    result = fork.ps("status", code=1)
    assert "applied in another order than the series" in result.stdout
    assert "next: 'patchstack refresh' rebuilds the applied commits in the series order" in (
        result.stdout
    )
    fork.ps("refresh")
    assert json.loads(fork.ps("status", "--json").stdout)["disagreements"] == []
    assert names(fork) == ["one.patch", "three.patch", "two.patch"]


def test_only_selects_by_label(fork: Repo) -> None:
    fork.ps("pop", "--all")
    fork.ps("push", "--only", "moe")
    assert names(fork) == ["three.patch"]
    result = fork.ps("push", "--only", "mo", code=2)
    assert "unknown tag 'mo'" in result.stderr and "did you mean 'moe'?" in result.stderr


def test_log_of_one_patch_follows_renames(fork: Repo) -> None:
    fork.ps("tag", "two", "essential")
    fork.ps("edit", "two", "-m", "Reworded")
    fork.ps("rename", "two", "deux")
    fork.ps("pop", "--all")
    fork.ps("move", "deux", "--bottom")
    out = fork.ps("log", "deux").stdout
    lines = [ln.strip() for ln in out.splitlines()]
    assert lines[1::2][:5] == [
        "moved to the bottom (first)",
        "popped",
        "renamed from two.patch",
        "changed: message",
        "tag diagnostic -> essential",
    ]
    assert "patchstack new two --tag diagnostic" in out and "added to the series" in out
    data = json.loads(fork.ps("log", "deux", "--json").stdout)
    assert data["patch"] == "deux.patch" and len(data["history"]) == 6
    fork.ps("delete", "one")
    assert "taken out of the series" in fork.ps("log", "one").stdout
    assert "did you mean 'deux'?" in fork.ps("log", "dexu", code=2).stderr


def test_completion_of_patch_names_and_labels(fork: Repo) -> None:
    import subprocess
    import sys

    def complete(words: str, cword: int) -> list[str]:
        env = dict(os.environ, _PATCHSTACK_COMPLETE="bash_complete")
        env.update(COMP_WORDS=words, COMP_CWORD=str(cword))
        proc = subprocess.run(
            [sys.executable, "-c", "from patchstack.cli import main; main()"],
            cwd=fork.path,
            env=env,
            capture_output=True,
            text=True,
        )
        return proc.stdout.split()

    assert complete("patchstack fold one --into t", 4) == ["plain,two.patch", "plain,three.patch"]
    assert complete("patchstack pop --only diagnostic,m", 3) == ["plain,diagnostic,moe"]
