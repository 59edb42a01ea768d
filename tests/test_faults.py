"""Environment faults: a full disk, a read-only series folder, a git hook that refuses. Each is
exit status 2 with one line naming the cause and the file, a hint, no traceback, nothing
changed (work tree, index, refs and series byte for byte), and no debris left in ``.git``.

The disk and the read-only folder are real mounts (a small tmpfs, a read-only bind mount); the
tests are skipped where this machine does not allow mounting.
"""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Repo, make_repo, numbered, replace_line


@contextlib.contextmanager
def mounted(args: list[str], target: Path) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def everything(repo: Repo, log: bool = True) -> tuple:
    """Work tree and series bytes, index entries, every ref (the operation log's too)."""
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    if not log:
        refs = "".join(ln for ln in refs.splitlines(True) if "refs/patchstack/" not in ln)
    return (
        repo.snapshot(),
        repo.git("ls-files", "-s"),
        refs,
        repo.status_all("--no-optional-locks"),
    )


def debris(repo: Repo) -> list[str]:
    git = repo.path / ".git"
    found = []
    for pattern in ("objects/??/tmp_obj_*", "objects/pack/tmp_*", "fast_import_crash_*",
                    "patchstack-index-*", "patchstack-link-*", "*.lock"):  # fmt: skip
        found += glob.glob(str(git / pattern))
    found += glob.glob(str(repo.path / "patches" / ".*.*"))  # atomic writes cut short
    return found


def small_fork(path: Path) -> Repo:
    repo = make_repo(path, {f"f{i}.txt": numbered(200, f"f{i}") for i in range(12)})
    repo.git("branch", "upstream")
    repo.ps("init")
    for i in range(12):
        replace_line(repo, f"f{i}.txt", f"f{i} 5\n", f"f{i} 5 x\n")
        repo.ps("new", f"p{i}", "--tag", ("essential", "diagnostic")[i % 2])
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "f3.txt", "f3 100\n", "f3 100 upstream\n")
    repo.git("commit", "-qam", "upstream")
    repo.git("checkout", "-q", "main")
    replace_line(repo, "f0.txt", "f0 150\n", "f0 150 mine\n")  # the user's unstaged edit
    return repo


def test_a_full_disk_changes_nothing_and_leaves_no_debris(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    with mounted(["-t", "tmpfs", "-o", "size=6m", "tmpfs"], disk):
        repo = small_fork(disk / "fork")
        quilt = tmp_path / "quilt"
        quilt.mkdir()
        (quilt / "series").write_text("q.patch\n")
        (quilt / "q.patch").write_text("--- a/q.txt\n+++ b/q.txt\n@@ -0,0 +1 @@\n+q\n")
        repo.ps("pop", "--only", "diagnostic")
        repo.ps("push", "--all")
        filler = disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        before = everything(repo)
        commands = [
            ("pop",),
            ("pop", "--all"),
            ("pop", "--only", "diagnostic"),
            ("refresh", "--onto", "upstream"),
            ("import", "quilt", str(quilt), "--tag", "essential", "--append"),
            ("undo",),
            ("export", "quilt", str(disk / "exported")),
        ]
        for args in commands:
            result = repo.ps(*args, code=None)
            assert result.exit_code == 2, (args, result.stdout, result.stderr)
            err = result.stderr
            assert "Traceback" not in err and len(err.splitlines()) == 2, (args, err)
            assert "No space left on device" in err or "Out of diskspace" in err, (args, err)
            assert "hint: free some space" in err
            assert everything(repo) == before, args
            assert debris(repo) == [], (args, debris(repo))
            assert sorted(os.listdir(disk)) == ["filler", "fork"], args
            assert "was interrupted" not in repo.ps("series", code=None).stderr
        filler.unlink()
        repo.ps("pop", "--only", "diagnostic")  # with space again, everything works
        repo.ps("undo")
        assert everything(repo)[:2] == before[:2]


def test_a_read_only_series_folder_changes_nothing(tmp_path: Path) -> None:
    repo = small_fork(tmp_path / "fork")
    series_dir = repo.path / "patches"
    replace_line(repo, "f1.txt", "f1 150\n", "f1 150 new edit\n")
    before = everything(repo)
    with mounted(["--bind", str(series_dir)], series_dir):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(series_dir)], check=True)
        for args in (
            ("new", "mine", "--tag", "essential", "f1.txt"),
            ("refresh", "--onto", "upstream"),
            ("refresh", "--patch", "p0"),  # folds f0.txt edit: a patch file to write
        ):
            result = repo.ps(*args, code=None)
            assert result.exit_code == 2, (args, result.stdout, result.stderr)
            assert "Read-only file system" in result.stderr and "Traceback" not in result.stderr
            assert "patches/" in result.stderr  # names the file
            assert everything(repo) == before, args
            assert " M f1.txt" in repo.git("status", "--porcelain")  # still unstaged
            assert "was interrupted" not in repo.ps("series", code=None).stderr
        repo.ps("pop")  # a command that writes no series file works
        repo.ps("push")
    assert everything(repo, log=False) == before[:2] + everything(repo, log=False)[2:3] + before[3:]


def test_a_refusing_hook_is_named_and_changes_nothing(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "x", "--tag", "essential")
    hook = repo.path / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] && exit 1\nexit 0\n')
    hook.chmod(0o755)
    before = everything(repo)
    for args in (("pop",), ("undo",)):
        result = repo.ps(*args, code=2)
        assert "a git hook refused" in result.stderr and "reference-transaction" in result.stderr
        assert "run the command again" not in result.stderr
        assert everything(repo) == before
    os.unlink(hook)
    repo.ps("pop")


def test_the_sweep_after_a_failure_covers_only_this_command(repo: Repo) -> None:
    """Many commands in one interpreter (CliRunner, shell completion): each failure sweeps the
    repositories its own command opened, not every one an earlier command opened."""
    from patchstack import transaction

    repo.ps("init")
    for _ in range(3):
        repo.ps("status")
    repo.write("patches/series", "a b.patch # essential\n")
    repo.ps("push", "--all", code=2)
    assert len(transaction._OPENED) <= 1
