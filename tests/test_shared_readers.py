"""The git package's one way of each: a work-tree file read and stored as git stages it
(`objects.write_file`: the snapshot, the derived snapshots, `tree_with_files`), the ``-U0``
hunks of a diff parsed once (`hunks.parse_hunks`: `pairs_hunks` and `Listings.line_hunks`),
the index set from work-tree files (`Worktree.stage_files`, as its docstring says), and the
configuration read once a command (`merge_inputs` too). Each against git."""

from __future__ import annotations

import os
import subprocess

from patchstack.commands.refresh import knockons
from patchstack.git import base, find_repo
from patchstack.git.hunks import only, pairs_hunks

from .conftest import Repo, make_repo, numbered
from .test_kept_verdicts import _fork


def _staged(repo: Repo, path: str) -> tuple[str, str]:
    """(mode, blob) ``git add`` stages for ``path`` (in an index of its own)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.path / ".git" / "probe-index")}
    subprocess.run(["git", "add", "--force", "--", path], cwd=repo.path, env=env, check=True)
    out = subprocess.run(
        ["git", "ls-files", "-s", "--", path], cwd=repo.path, env=env, capture_output=True
    ).stdout.decode()
    mode, blob = out.split()[:2]
    return mode, blob


def test_a_file_is_stored_as_git_add_stages_it(tmp_path) -> None:
    from patchstack.git.objects import staged_mode

    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    files = {"plain": 0o644, "exec": 0o755, "group-exec": 0o654, "owner-only": 0o744}
    for name, perm in files.items():
        (repo.path / name).write_bytes(b"x\r\n\0 binary\n")
        (repo.path / name).chmod(perm)
    os.symlink("a.py", repo.path / "link")
    os.symlink("nowhere/at all", repo.path / "dangling")
    os.mkdir(repo.path / "folder")
    os.symlink("folder", repo.path / "to-folder")
    git = find_repo(str(repo.path))
    for name in [*files, "link", "dangling", "to-folder", "a.py"]:
        full = os.path.join(git.top, name)
        assert git.write_file(full, os.lstat(full)) == _staged(repo, name), name
    assert git.write_file(os.path.join(git.top, "folder"), os.lstat(repo.path / "folder")) is None
    os.mkfifo(repo.path / "fifo")
    assert staged_mode(os.lstat(repo.path / "fifo")) is None


def test_a_snapshot_of_a_folder_turned_into_a_file(tmp_path) -> None:
    """A tracked file whose folder the user replaced by a file: the snapshot records the
    file (the command went on; it stopped at ``lstat``'s "not a directory"), and undo gives
    it back."""
    repo = make_repo(tmp_path / "r", {"a.py": numbered(5, "a"), "d/f.py": "f\n"})
    repo.ps("init")
    repo.write("a.py", numbered(5, "a") + "mine\n")
    repo.ps("new", "p", "--tag", "essential", "-m", "p", "a.py")
    repo.ps("pop")
    (repo.path / "d" / "f.py").unlink()
    (repo.path / "d").rmdir()
    (repo.path / "d").write_text("a file now\n")
    before = repo.state()
    repo.ps("push")
    assert repo.read("d") == "a file now\n" and "mine" in repo.read("a.py")
    repo.ps("undo")
    assert repo.state() == before


def test_line_hunks_of_a_type_change_are_those_of_its_two_diffs(tmp_path) -> None:
    """A file that becomes a link is two diffs of one ``diff --git`` line (deleted, created):
    `line_hunks` (``PATCHSTACK_NO_PAIR_HUNKS=1``) has the hunks of both, as `pairs_hunks`
    has (it kept the second alone)."""
    repo = make_repo(tmp_path / "r", {"t.py": numbered(3, "t"), "u.py": numbered(4, "u")})
    old = repo.tree()
    (repo.path / "t.py").unlink()
    os.symlink("u.py", repo.path / "t.py")
    repo.write("u.py", numbered(4, "u").replace("u 2\n", "changed\n"))
    repo.commit_all("a link")
    new = repo.tree()
    git = find_repo(str(repo.path))
    plain = git.line_hunks(old, new, ["t.py", "u.py"])
    assert plain == {"t.py": ((1, 3, 0, 0), (0, 0, 1, 1)), "u.py": ((2, 1, 2, 1),)}
    assert only(pairs_hunks(git, [(old, new)], ["t.py", "u.py"])[0], ["t.py", "u.py"]) == plain
    assert only(pairs_hunks(find_repo(str(repo.path)), [(old, new)])[0], ["u.py"]) == {
        "u.py": plain["u.py"]
    }


def _index(repo: Repo) -> str:
    return repo.git("ls-files", "-s")


def test_stage_files_does_what_its_docstring_says(tmp_path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"a.py": "a\n", "b.py": "b\n", "gone.py": "g\n", "was/f.py": "f\n", "dir/x.py": "x\n"},
    )
    (repo.path / "n.py").write_text("new\n")
    (repo.path / "b.py").write_text("b edited\n")
    (repo.path / "b.py").chmod(0o755)
    (repo.path / "gone.py").unlink()
    os.symlink("a.py", repo.path / "l")
    git = find_repo(str(repo.path))
    # files as they are, with their stat data; a missing one removed
    assert git.stage_files(["n.py", "b.py", "gone.py", "l"])
    assert repo.git("diff", "--name-only") == ""  # (stat data: nothing looks modified)
    for path in ("n.py", "b.py", "l"):
        assert repo.git("ls-files", "-s", "--", path).split()[:2] == list(_staged(repo, path))
    assert repo.git("ls-files", "--", "gone.py") == ""
    # refused, nothing changed: an untracked folder, a tracked folder's own path
    (repo.path / "untracked").mkdir()
    (repo.path / "untracked" / "u.py").write_text("u\n")
    repo.write("a.py", "a edited\n")
    index = _index(repo)
    assert not git.stage_files(["a.py", "untracked"])
    assert not git.stage_files(["a.py", "dir"])
    assert _index(repo) == index
    # a folder where the index has a file: the entry removed, the folder's files not added
    (repo.path / "a.py").unlink()
    (repo.path / "a.py").mkdir()
    (repo.path / "a.py" / "inner").write_text("inner\n")
    assert git.stage_files(["a.py"])
    assert repo.git("ls-files", "--", "a.py") == ""
    # a path under what is now a file: missing, removed
    (repo.path / "was" / "f.py").unlink()
    (repo.path / "was").rmdir()
    (repo.path / "was").write_text("a file\n")
    assert git.stage_files(["was/f.py"])
    assert repo.git("ls-files", "--", "was") == ""
    # a folder holding a repository of its own: a submodule entry at its commit
    nested = make_repo(repo.path / "nested", {"n.py": "n\n"})
    assert git.stage_files(["nested"])
    assert repo.git("ls-files", "-s", "--", "nested").split()[:2] == ["160000", nested.head()]


def test_a_skip_reads_the_configuration_once(tmp_path, monkeypatch) -> None:
    """The digest of what a merge reads (`merge_inputs`) takes the configuration the command
    read: one ``config --list`` a skip (it read it again)."""
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    ran: list[list[str]] = []
    digests: list[str] = []
    real_run, real_inputs = base.run_git, knockons.merge_inputs

    def run_git(args, *a, **k):  # type: ignore[no-untyped-def]
        ran.append(list(args))
        return real_run(args, *a, **k)

    def merge_inputs(git):  # type: ignore[no-untyped-def]
        digests.append(real_inputs(git))
        return digests[-1]

    monkeypatch.setattr(base, "run_git", run_git)
    monkeypatch.setattr(knockons, "merge_inputs", merge_inputs)
    repo.ps("refresh", "--skip", code=1)
    assert digests, "the skip asked no merge_inputs: the test proves nothing"
    assert sum(1 for args in ran if "config" in args and "--list" in args) == 1, ran


def test_merge_inputs_follow_the_configuration_of_each_command(tmp_path) -> None:
    """Read once a command, the configuration still decides the digest: a change between two
    commands is a new digest, none the same one."""
    from patchstack.git.attributes import merge_inputs

    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    first = merge_inputs(find_repo(str(repo.path)))
    assert merge_inputs(find_repo(str(repo.path))) == first
    repo.git("config", "merge.renormalize", "true")
    assert merge_inputs(find_repo(str(repo.path))) != first
