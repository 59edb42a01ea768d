"""The placement contract's reproductions: each of these once gave another result than git
(a tree, a refusal, a dropped mode, a commit id) or left the user stuck."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line


def rebase_result(repo: Repo, base: str, onto: str, tmp: Path) -> tuple[int, str]:
    """(exit status, HEAD's tree) of ``git rebase`` of HEAD onto ``onto`` in a clone."""
    clone = Repo(tmp)
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(tmp)], check=True)
    value = repo.git("config", "--get", "merge.directoryRenames", check=False).strip()
    if value:
        clone.git("config", "merge.directoryRenames", value)
    clone.git("checkout", "-q", "-B", "work", repo.head())
    target = repo.git("rev-parse", onto).strip()
    proc = subprocess.run(
        ["git", "rebase", "-q", "--onto", target, base, "work"], cwd=tmp, capture_output=True
    )
    return proc.returncode, clone.tree()


def folder_renamed_upstream(tmp_path: Path, renames: str | None) -> tuple[Repo, str]:
    repo = make_repo(
        tmp_path / "fork", {f"olddir/f{i}.py": numbered(20, f"f{i}") for i in range(3)}
    )
    if renames:
        repo.git("config", "merge.directoryRenames", renames)
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.git("mv", "olddir", "newdir")
    repo.git("commit", "-q", "-m", "rename olddir to newdir")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.write("olddir/new.py", "new\n")
    repo.ps("new", "add-new", "--tag", "essential", "olddir/new.py")
    return repo, base


def test_a_file_added_to_a_folder_upstream_renamed_conflicts_as_in_git(tmp_path) -> None:
    repo, base = folder_renamed_upstream(tmp_path, None)
    status, _tree = rebase_result(repo, base, "up", tmp_path / "rebase")
    assert status != 0  # CONFLICT (file location)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    assert [c["patch"] for c in data["conflicts"]] == ["add-new.patch"]
    result = repo.ps("refresh", "--onto", "up", code=1)
    assert "newdir/new.py" in result.stderr  # the suggested place
    repo.ps("refresh", "--abort")
    repo.ps("pop", "--all")
    for fast in ("", "1"):
        os.environ["PATCHSTACK_NO_FAST_PATH"] = fast
        try:
            repo.ps("push", "--all", "--onto", "up", code=1)
        finally:
            os.environ.pop("PATCHSTACK_NO_FAST_PATH")


def test_with_directory_renames_on_the_file_moves_as_in_git(tmp_path) -> None:
    repo, base = folder_renamed_upstream(tmp_path, "true")
    status, tree = rebase_result(repo, base, "up", tmp_path / "rebase")
    assert status == 0
    repo.ps("refresh", "--onto", "up")
    assert repo.tree() == tree
    assert (repo.path / "newdir" / "new.py").exists()
    assert not (repo.path / "olddir").exists()


def test_a_file_upstream_adds_to_a_folder_a_patch_moves_follows_the_move(tmp_path) -> None:
    files = {f"plugins/p{i}.py": numbered(20, f"p{i}") for i in range(1, 4)}
    repo = make_repo(tmp_path / "fork", files)
    repo.git("config", "merge.directoryRenames", "true")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.write("plugins/p4.py", numbered(20, "p4"))
    repo.commit_all("add p4")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.git("mv", "plugins", "ext")
    repo.git("reset", "-q")
    repo.ps("new", "move-plugins", "--tag", "essential", "plugins", "ext")
    status, tree = rebase_result(repo, base, "up", tmp_path / "rebase")
    assert status == 0
    repo.ps("refresh", "--onto", "up")
    assert repo.tree() == tree
    assert (repo.path / "ext" / "p4.py").exists()


def test_a_patch_upstream_took_blocks_nothing_above_it(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.ps("init")
    repo.write("a.py", numbered(20, "a").replace("a 3\n", "a 3 fixed\n"))
    repo.ps("new", "fix-a", "--tag", "essential")
    repo.write("b.py", numbered(20, "b").replace("b 9\n", "b 9 tweaked\n"))
    repo.ps("new", "tweak-b", "--tag", "optimization")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", numbered(20, "a").replace("a 3\n", "a 3 fixed\n"))
    repo.commit_all("upstream takes fix-a")
    repo.git("checkout", "-q", "main")
    result = repo.ps("refresh", "--onto", "up", "--json")
    verdicts = {p["name"]: p["verdict"] for p in json.loads(result.stdout)["patches"]}
    assert verdicts == {"fix-a.patch": "upstream", "tweak-b.patch": "unchanged"}
    assert names(repo) == ["tweak-b.patch"]
    repo.ps("pop", "--all")
    pushed = repo.ps("push", "tweak-b")
    assert names(repo) == ["tweak-b.patch"]
    repo.ps("pop", "--all")
    pushed = repo.ps("push", "--all")
    assert "fix-a.patch" in pushed.stdout and "not applied" in pushed.stdout
    assert names(repo) == ["tweak-b.patch"]
    assert "a 3 fixed" in repo.read("a.py") and "b 9 tweaked" in repo.read("b.py")
    repo.ps("check")


def test_an_amended_mode_is_a_commit_that_differs(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(5, "a")})
    repo.ps("init")
    repo.write("scripts/run.sh", "#!/bin/sh\necho run\n")
    repo.ps("new", "run-script", "--tag", "essential", "scripts/run.sh")
    os.chmod(repo.path / "scripts" / "run.sh", 0o755)
    repo.git("add", "scripts/run.sh")
    repo.git("commit", "-q", "--amend", "--no-edit")
    status = repo.ps("status", code=1)
    assert "differs from its patch file" in status.stdout
    refused = repo.ps("pop", "--all", code=2)
    assert "differs from its patch file" in refused.stderr
    assert os.access(repo.path / "scripts" / "run.sh", os.X_OK)  # nothing was lost


def turning_a_file_into_a_folder(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"config": "key = 1\n", "a.py": numbered(5, "a")})
    repo.ps("init")
    (repo.path / "config").unlink()
    repo.write("config/main.toml", "key = 2\n")
    repo.ps("new", "config-folder", "--tag", "essential", "config", "config/main.toml")
    repo.ps("pop", "--all")
    return repo


def test_undo_takes_back_a_push_that_turned_a_file_into_a_folder(tmp_path) -> None:
    repo = turning_a_file_into_a_folder(tmp_path)
    before = repo.state()
    repo.ps("push", "--all")
    assert (repo.path / "config" / "main.toml").exists()
    repo.ps("undo")
    assert repo.state() == before
    assert repo.read("config") == "key = 1\n"


@pytest.mark.parametrize("where", ["publish-worktree", "publish-ref"])
def test_undo_after_a_killed_push_that_turned_a_file_into_a_folder(tmp_path, where) -> None:
    from .test_kill import spawn, wait_unlocked

    repo = turning_a_file_into_a_folder(tmp_path)
    before = repo.state()
    proc = spawn(repo, ["push", "--all"], PATCHSTACK_TEST_KILL_AT=where)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    wait_unlocked(repo)
    assert (repo.path / "config").is_dir()  # the move was made before the kill
    repo.ps("undo")
    assert repo.state() == before


JR = "John Smith Jr. <john@example.org>"


def run(repo: Repo, *args: str, fast: bool = True) -> None:
    """The CLI in a process of its own, the shortcut switch set as a user sets it."""
    env = dict(os.environ, PATCHSTACK_NO_FAST_PATH="" if fast else "1")
    cmd = [sys.executable, "-m", "patchstack", *args]
    subprocess.run(cmd, cwd=repo.path, env=env, check=True, capture_output=True)


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
@pytest.mark.parametrize("author", [JR, "Ada Lovelace <ada@example.org>"])
def test_one_patch_file_gives_one_commit_id_whichever_path_built_it(tmp_path, author) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.write("c.py", "upstream\n")
    repo.commit_all("upstream adds c.py")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    for i, f in enumerate(("a.py", "b.py")):
        repo.write(f, repo.read(f).replace(f"{f[0]} 5\n", f"{f[0]} 5 patched\n"))
        repo.ps("new", f"p{i}", "--tag", "essential")
    repo.ps("pop", "--all")
    name, email = author[:-1].split(" <")
    for i in range(2):  # the header as an import or a hand brings it
        path = repo.path / "patches" / f"p{i}.patch"
        text = path.read_text().replace("From: Test Author <author@example.org>", f"From: {author}")
        path.write_text(text)
    heads = set()
    for fast in (True, False):
        (repo.path / ".git" / "patchstack" / "cache").unlink(missing_ok=True)
        run(repo, "push", "--all", fast=fast)
        run(repo, "refresh", "--onto", "up", fast=fast)  # the replay's stream
        heads.add(repo.head())
        run(repo, "undo")
        run(repo, "pop", "--all")
        run(repo, "push", "--all", "--onto", "up", fast=fast)  # the placement's stream
        heads.add(repo.head())
        run(repo, "undo")
        assert repo.head() == base
    assert len(heads) == 1, heads
    # ... and it says what git itself writes for that name (git 2.39 drops the trailing dot)
    probe = subprocess.run(
        ["git", "commit-tree", repo.tree(), "-m", "probe"],
        cwd=repo.path,
        env=dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    want = repo.git("cat-file", "-p", probe).split("\n")[1].rsplit(" ", 2)[0]
    got = repo.git("cat-file", "-p", heads.pop()).split("\n")[2].rsplit(" ", 2)[0]
    assert got == want


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_twenty_refreshes_leave_the_cache_the_size_two_leave(tmp_path) -> None:
    files = {f"m{i}.py": numbered(12, f"m{i}") for i in range(20)}
    repo = make_repo(tmp_path / "fork", files)
    repo.ps("init")
    for i in range(20):
        repo.write(f"m{i}.py", repo.read(f"m{i}.py").replace(f"m{i} 6\n", f"m{i} 6 mine\n"))
        repo.ps("new", f"p{i}", "--tag", "essential")
    cache = repo.path / ".git" / "patchstack" / "cache"
    sizes = []
    for r in range(20):
        repo.git("checkout", "-q", "-B", f"up{r}", repo.git("rev-parse", "HEAD~20").strip())
        repo.write("upstream.txt", f"round {r}\n")
        repo.commit_all(f"upstream round {r}")
        repo.git("checkout", "-q", "main")
        repo.ps("refresh", "--onto", f"up{r}")
        sizes.append(cache.stat().st_size)
    assert sizes[-1] <= sizes[1] * 1.3, sizes
    assert not (repo.path / ".git" / "patchstack" / "proven").exists()
    assert not (repo.path / ".git" / "patchstack" / "parsed").exists()


def day_after(tmp_path: Path) -> tuple[Repo, str]:
    """p2 changes ``a 10``, p3 deletes ``a 30``, p4 inserts after ``c 5``. up1 takes p4 and
    wraps ``a 10`` in braces; up, on top of it, moves ``a 1``-``a 5`` to a new file. After
    ``refresh --onto up1 --defer-conflicts`` p2 is deferred and p4 marked upstream's.
    Returns the repository and p3's commit as it was made."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(40, "a"), "c.c": numbered(20, "c")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 10\n", "a 10 p2\n")
    repo.ps("new", "p2", "--tag", "essential")
    replace_line(repo, "a.c", "a 30\n", "")
    repo.ps("new", "p3", "--tag", "essential")
    p3 = repo.head()
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.ps("new", "p4", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up1", base)
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.commit_all("take p4")
    replace_line(repo, "a.c", "a 10\n", "{\na 10\n}\n")
    repo.commit_all("wrap a 10")
    repo.git("checkout", "-q", "-b", "up")
    text = repo.read("a.c")
    head = numbered(5, "a")
    assert text.startswith(head)
    repo.write("a.c", text[len(head) :])
    repo.write("moved.c", head)
    repo.commit_all("move a 1-5 to moved.c")
    repo.git("checkout", "-q", "main")
    day1 = repo.ps("refresh", "--onto", "up1", "--defer-conflicts")
    assert "p2" in day1.stdout
    assert "# upstream:" in (repo.path / "patches" / "series").read_text()
    return repo, p3


def test_a_deferred_patch_s_change_stays_out_of_the_day_after_s_tree(tmp_path) -> None:
    """The shortcuts once carried deferred p2's change into p3's commit on the day after
    (a merge from an anchor across the steps of p2 and upstream-marked p4); git rebase
    onto up, p2 skipped and p4 dropped as empty, is p3 alone on up."""
    repo, p3 = day_after(tmp_path)
    clone = Repo(tmp_path / "rebase")
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(clone.path)], check=True)
    clone.git("checkout", "-q", "-B", "work", repo.git("rev-parse", "up").strip())
    clone.git("cherry-pick", p3)
    want = clone.tree()
    slow = copy_repo(repo.path, tmp_path / "slow")
    result = repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "deferred  p2.patch" in result.stdout
    assert "a 10 p2" not in repo.read("a.c")
    assert repo.tree() == want
    os.environ["PATCHSTACK_NO_FAST_PATH"] = "1"
    try:
        slow.ps("refresh", "--onto", "up", "--defer-conflicts")
    finally:
        os.environ.pop("PATCHSTACK_NO_FAST_PATH")
    assert slow.tree() == want


def test_a_merge_run_from_an_anchor_does_not_cross_a_patch_brought_back(tmp_path) -> None:
    """p2, deferred by the first refresh, comes back with ``push p2.patch`` once upstream
    reverted what it conflicted with: carried by ids with its own recorded change, then p3 and
    p5 are merged in one run. From the anchor before p2 that merge would leave p2's change out
    of p3's file (its base is the chain before the first refresh, its "theirs" lacks p2)."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(40, "a"), "b.c": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    edits = [
        ("p2", "a.c", "a 10\n", "a 10 p2\n"),
        ("p3", "a.c", "a 30\n", ""),
        ("p5", "b.c", "b 5\n", "b 5 p5\n"),
    ]
    for name, path, old, new in edits:
        replace_line(repo, path, old, new)
        repo.ps("new", name, "--tag", "essential")
    commits = repo.git("rev-list", "--reverse", f"{base}..HEAD").split()
    repo.git("checkout", "-q", "-b", "up1", base)
    replace_line(repo, "a.c", "a 10\n", "{\na 10\n}\n")
    replace_line(repo, "b.c", "b 20\n", "b 20 up\n")
    repo.commit_all("wrap a 10, change b 20")
    repo.git("checkout", "-q", "-b", "up")
    replace_line(repo, "a.c", "{\na 10\n}\n", "a 10\n")
    repo.commit_all("unwrap a 10")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up1", "--defer-conflicts")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "# deferred: p2.patch" in (repo.path / "patches" / "series").read_text()
    clone = Repo(tmp_path / "rebase")
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(clone.path)], check=True)
    clone.git("checkout", "-q", "-B", "work", repo.git("rev-parse", "up").strip())
    clone.git("cherry-pick", *commits)
    slow = copy_repo(repo.path, tmp_path / "slow")
    repo.ps("push", "p2.patch")
    assert "a 10 p2\n" in repo.read("a.c")
    assert repo.tree() == clone.tree()
    os.environ["PATCHSTACK_NO_FAST_PATH"] = "1"
    try:
        slow.ps("push", "p2.patch")
    finally:
        os.environ.pop("PATCHSTACK_NO_FAST_PATH")
    assert slow.tree() == clone.tree()
