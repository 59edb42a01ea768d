"""What makes the fixed costs small stays exact: the operation log's "after" snapshot derived
from the "before" one equals the snapshot taken; patch files proven by an earlier command are
proven only for their very bytes; and the git boundary's in-process reads and loose writes
agree with git."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from patchstack.checkout import open_checkout
from patchstack.git import find_repo, objects
from patchstack.journal.oplog import newest
from patchstack.journal.snapshot import series_tree, take_snapshot

from .conftest import Repo, names, numbered, replace_line, slow_after


def stack_of_three(repo: Repo) -> None:
    repo.write("b.py", numbered(30, "b"))
    repo.commit_all("b")
    repo.ps("init")
    for i, (f, tag) in enumerate([("a.py", "essential"), ("b.py", "diagnostic"), ("a.py", "x")]):
        replace_line(repo, f, f"{f[0]} {5 + 5 * i}\n", f"{f[0]} {5 + 5 * i} p{i}\n")
        repo.ps("new", f"p{i}", "--tag", tag if tag != "x" else "optimization")


def recorded_and_taken(repo: Repo) -> tuple[dict, dict]:
    ws = open_checkout(None, str(repo.path))
    try:
        entry = newest(ws.git)
        assert entry is not None and entry.after is not None
        taken = take_snapshot(ws, refresh=entry.after.refresh)
        return entry.after.to_json(), taken.to_json()
    finally:
        ws.git.close()


# Edits and odd kinds by default; a clean tree and a staged file under -m slow (a stop's
# staged file: test_stop_move's default case).
@pytest.mark.parametrize(
    "user_state",
    [
        "untracked and edited elsewhere",
        "executable and symlink",
        *slow_after(["clean", "staged elsewhere"], 0),
    ],
)
def test_the_derived_after_snapshot_is_the_taken_one(repo: Repo, user_state: str) -> None:
    stack_of_three(repo)
    if user_state != "clean":
        repo.write("notes/todo.txt", "an untracked file\n")
        repo.write("c.txt", "an edited file no patch touches\n")
    if user_state == "staged elsewhere":
        repo.git("add", "c.txt")
    if user_state == "executable and symlink":
        os.chmod(repo.path / "c.txt", 0o755)
        os.symlink("c.txt", repo.path / "link")
    for command in (["pop", "--all"], ["push", "--all"], ["pop", "p1.patch"], ["push", "p2"]):
        before = names(repo)
        repo.ps(*command)
        recorded, taken = recorded_and_taken(repo)
        assert recorded == taken, command
    repo.ps("undo")
    assert names(repo) == before


def test_a_patch_file_proven_before_is_read_again_when_its_bytes_change(repo: Repo) -> None:
    stack_of_three(repo)
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    repo.ps("pop", "--all")
    proofs = repo.path / ".git" / "patchstack" / "cache"
    assert proofs.exists()
    text = repo.read("patches/p1.patch")
    bad = re.sub(r"^(@@ -\d+,\d+ \+\d+,)(\d+)", lambda m: m[1] + "99", text, count=1, flags=re.M)
    assert bad != text
    repo.write("patches/p1.patch", bad)
    result = repo.ps("push", "--all", code=2)
    assert "p1.patch" in result.stderr and "line" in result.stderr
    repo.write("patches/p1.patch", text)
    proofs.write_bytes(b"not a marshal file")  # a cache that cannot be read is empty
    repo.ps("push", "--all")
    assert names(repo) == ["p0.patch", "p1.patch", "p2.patch"]
    assert repo.ps("status").exit_code == 0


def cached(repo: Repo, section: str) -> dict:
    """One section of the repository's cache (`patchstack.store`): key -> value."""
    import marshal

    path = repo.path / ".git" / "patchstack" / "cache"
    if not path.exists():
        return {}
    data = marshal.loads(path.read_bytes())
    entries = marshal.loads(data["sections"][section]) if section in data["sections"] else {}
    return {k: v for k, (_gen, v) in entries.items()}


def test_a_push_tells_the_proof_what_its_fast_path_proved(repo: Repo) -> None:
    """A cold push proves each patch's hunks against its index lines' blobs; the first
    ``status`` after it (1,000 patches: 0.93 s, now 0.34 s) need not read them all again."""
    import hashlib

    stack_of_three(repo)
    repo.ps("pop", "--all")
    (repo.path / ".git" / "patchstack" / "cache").unlink(missing_ok=True)
    repo.ps("push", "--all")
    known = cached(repo, "proven")
    for i in range(3):
        data = (repo.path / "patches" / f"p{i}.patch").read_bytes()
        assert known.get(f"c {hashlib.sha256(data).hexdigest()}") is True
    assert repo.ps("status").exit_code == 0


def test_verdicts_are_kept_by_commit_and_patch_bytes(repo: Repo) -> None:
    """``status``, ``pop`` and ``push`` prove the applied commits once for the same (commit,
    patch file) pair (a push says which commits its fast path proved); a changed file or
    another commit is proven again."""
    import hashlib

    stack_of_three(repo)
    repo.ps("pop", "--all")
    (repo.path / ".git" / "patchstack" / "cache").unlink(missing_ok=True)
    repo.ps("push", "--all")

    def verdicts() -> dict[str, str]:
        return {k: v for k, v in cached(repo, "proven").items() if k.startswith("v ")}

    commits = repo.git("log", "--format=%H", "-3").split()[::-1]
    want = {}
    for i, commit in enumerate(commits):
        digest = hashlib.sha256((repo.path / "patches" / f"p{i}.patch").read_bytes()).hexdigest()
        want[f"v {commit} {digest} p1"] = "exact"
    assert verdicts() == want  # written by the push
    assert repo.ps("status").exit_code == 0
    assert verdicts() == want
    replace_line(repo, "a.py", "a 1\n", "a 1 amended\n")
    repo.git("commit", "--amend", "-q", "--no-edit", "-a")  # another commit, another change
    result = repo.ps("status", code=1)
    assert "the commit of p2.patch differs from its patch file" in result.stdout
    assert verdicts() == want  # a command that only reads writes nothing


def test_pop_of_one_patch_reads_no_other_patch_file_left_alone(repo: Repo, monkeypatch) -> None:
    """The verdicts are also kept by each patch file's stat data (as git's index keeps a
    file's id): a pop of the top patch reads none of the files below it when they are as
    they were when their commits were proven; a file edited since (even to the same size,
    its time put back) is read, and its patch rebuilt from it; a file changed less than two
    seconds before it was proven is proven again next time."""
    from patchstack.checkout import Checkout

    stack_of_three(repo)
    files = [repo.path / "patches" / f"p{i}.patch" for i in range(3)]
    old = 1_700_000_000
    for f in files:
        os.utime(f, (old, old))
    repo.ps("pop", "--all")
    repo.ps("push", "--all")  # proves them at their old times
    read: list[str] = []
    real = Checkout.proven_bytes

    def counting(self, entry):
        read.append(entry.name)
        return real(self, entry)

    monkeypatch.setattr(Checkout, "proven_bytes", counting)
    repo.ps("pop")
    assert read == []
    repo.ps("push")
    text = files[0].read_text()
    edited = text.replace("+a 5 p0\n", "+a 5 P0\n")
    assert len(edited) == len(text) and edited != text
    files[0].write_text(edited)
    os.utime(files[0], (old, old))  # same size, same time: the inode's change time differs
    read.clear()
    repo.ps("pop")
    assert "p0.patch" in read and "p2.patch" not in read
    assert "a 5 P0" in repo.read("a.py")  # rebuilt from the edited file
    files[1].write_text(files[1].read_text())  # just now: not kept by its stat data
    repo.ps("push")
    read.clear()
    repo.ps("pop")
    assert read[:1] == ["p1.patch"]  # the only one proven again: then popped


def test_commands_that_only_read_write_no_proofs(repo: Repo) -> None:
    stack_of_three(repo)
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    proofs = repo.path / ".git" / "patchstack" / "cache"
    proofs.unlink()
    repo.ps("check")
    assert not proofs.exists()
    repo.ps("status")  # status alone keeps what it proved: the next status is a blink
    assert [s for s in ("build", "parsed", "proven") if cached(repo, s)] == ["parsed", "proven"]


def test_in_process_tree_reads_and_loose_writes_agree_with_git(repo: Repo) -> None:
    repo.write("dir/sub/x.py", "x\n")
    repo.write("dir/y.py", "y\n")
    repo.commit_all("files")
    git = find_repo(str(repo.path))
    try:
        tree = git.tree_of("HEAD")
        found = git.entries_at(tree, ["dir/sub/x.py", "dir/sub", "dir/nope.py", "a.py/x", "a.py"])
        listed = git.ls_tree_paths(tree, ["dir/sub/x.py", "a.py"])
        listed.update(git.ls_tree_paths(tree, ["dir/sub"]))
        assert found == listed
        commit = git.throwaway_commit(tree, git.head() or "", "a label")
        assert repo.git("cat-file", "-t", commit).strip() == "commit"
        assert repo.git("rev-parse", f"{commit}^{{tree}}").strip() == tree
        assert git.write_loose("commit", repo.git("cat-file", "commit", commit).encode()) == commit
        stream = git.fast_import()
        made = stream.commit(git.head() or "", "A U Thor <a@b.c>", "1700000001 +0000", b"m\n", [])
        assert stream.tree_of(made) == tree
        stream.checkpoint()
        assert repo.git("cat-file", "-t", made).strip() == "commit"  # visible before the end
        stream.close()
    finally:
        git.close()
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo.path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_loose_writes_are_read_only_objects_git_reads_whatever_is_in_the_way(
    repo: Repo,
) -> None:
    git = find_repo(str(repo.path))
    old = os.umask(0o077)
    try:
        data = b"one blob\n"
        oid = git.fmt.hash("blob", data)
        folder = os.path.join(git.common_dir, "objects", oid[:2])
        os.makedirs(folder, exist_ok=True)
        # What a killed process of this id left under the next temporary name stays, unread.
        stale = os.path.join(folder, f"tmp_obj_{os.getpid()}_{next(objects._TEMP_NAMES) + 1}")
        with open(stale, "wb") as f:
            f.write(b"left by a killed process")
        assert git.write_loose("blob", data) == oid
        assert repo.git("cat-file", "blob", oid) == data.decode()
        assert os.stat(os.path.join(folder, oid[2:])).st_mode & 0o777 == 0o444  # umask or not
        with open(stale, "rb") as f:
            assert f.read() == b"left by a killed process"
        os.unlink(stale)
        # The folder removed after a write into it (git prune removes emptied ones) is made
        # again for the next object that goes there.
        os.unlink(os.path.join(folder, oid[2:]))
        os.rmdir(folder)
        other = next(
            d for i in range(100_000) if git.fmt.hash("blob", d := b"%d\n" % i)[:2] == oid[:2]
        )
        assert git.write_loose("blob", other) == git.fmt.hash("blob", other)
        assert repo.git("cat-file", "blob", git.fmt.hash("blob", other)) == other.decode()
        assert not [n for n in os.listdir(folder) if n.startswith("tmp_obj_")]
    finally:
        os.umask(old)
        git.close()


def test_loose_writes_use_gits_own_loose_compression_level(repo: Repo) -> None:
    """Loose objects are deflated at level 1, git's default for them (core.looseCompression):
    a replay writes thousands of throwaway objects, and level 6 cost 2-3.5x the time. The zlib
    header's FLEVEL bits say which level wrote the stream (0: fastest), and git reads it."""
    git = find_repo(str(repo.path))
    try:
        data = b"def f():\n    return 1\n" * 200
        oid = git.write_loose("blob", data)
        path = os.path.join(git.common_dir, "objects", oid[:2], oid[2:])
        with open(path, "rb") as f:
            header = f.read(2)
        assert header[0] == 0x78 and header[1] >> 6 == 0, header.hex()
        assert repo.git("cat-file", "blob", oid) == data.decode()
    finally:
        git.close()


def test_tree_changes_are_what_diff_tree_lists(repo: Repo) -> None:
    """What a replay re-reads after a merge (`tree_changes`): exactly the entries ``git
    diff-tree -r -t`` lists between the two trees, found or gone, and only within the paths
    asked for."""
    for path in ("keep/x.py", "mod/deep/y.py", "gone/z.py", "flip", "same/s.py"):
        repo.write(path, path + "\n")
    repo.git("add", "-A")
    old = repo.git("write-tree").strip()
    repo.write("mod/deep/y.py", "changed\n")
    repo.git("rm", "-rqf", "gone", "flip")
    repo.write("flip/now-a-folder.py", "f\n")
    repo.write("new/n.py", "n\n")
    repo.git("add", "-A")
    new = repo.git("write-tree").strip()
    listed = repo.git("diff-tree", "-r", "-t", "-z", old, new).split("\0")
    expected: dict[str, tuple[str, str] | None] = {}
    for meta, path in zip(listed[0::2], listed[1::2], strict=False):
        if meta.startswith(":"):
            _, new_mode, _, new_id, _status = meta[1:].split(" ")
            expected[path] = None if set(new_id) == {"0"} else (new_mode, new_id)
    everything = {
        p
        for t in (old, new)
        for p in repo.git("ls-tree", "-r", "-t", "--name-only", "-z", t).split("\0")
        if p
    }
    git = find_repo(str(repo.path))
    try:
        assert git.tree_changes(old, new, everything) == expected
        assert "gone/z.py" in expected and "flip/now-a-folder.py" in expected
        only = {"mod", "mod/deep", "mod/deep/y.py", "keep", "keep/x.py"}
        assert git.tree_changes(old, new, only) == {p: e for p, e in expected.items() if p in only}
        assert git.tree_changes(new, new, everything) == {}
    finally:
        git.close()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="parallel checkout needs two cores")
def test_a_large_move_writes_files_with_parallel_workers_unless_the_user_chose(
    repo: Repo, tmp_path, monkeypatch
) -> None:
    for i in range(120):
        repo.write(f"many/f{i}.py", f"f{i}\n")
    repo.commit_all("many files")
    repo.ps("init")
    for i in range(120):
        repo.write(f"many/f{i}.py", f"f{i} patched\n")
    repo.ps("new", "wide", "--tag", "essential")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    repo.ps("pop", "--all")
    assert "checkout--worker" in trace.read_text()
    trace.unlink()
    repo.git("config", "checkout.workers", "1")
    repo.ps("push", "--all")
    assert "checkout--worker" not in trace.read_text()
    assert repo.read("many/f7.py") == "f7 patched\n"


def test_trees_edited_in_process_are_the_trees_git_writes(repo: Repo) -> None:
    """`edit_tree` (conflict markers relabelled, a pull's resolution taken) writes the very
    trees a temporary index gives: entries replaced, added in new folders, removed (an
    emptied folder goes), modes and awkward names kept, and `write_blob` stores bytes as
    ``hash-object -w --stdin`` does."""
    for path in ("a.py", "dir/b.py", "dir/only/c.py", "x y/ü.txt", "tool.sh"):
        repo.write(path, path + "\n")
    os.chmod(repo.path / "tool.sh", 0o755)
    os.symlink("a.py", repo.path / "link")
    repo.git("add", "-A")
    tree = repo.git("write-tree").strip()
    git = find_repo(str(repo.path))
    try:
        blob = git.write_blob(b"new\r\ncontent\n")
        assert blob == repo.git("hash-object", "--stdin", input="new\r\ncontent\n").strip()
        changes = {
            "a.py": ("100755", blob),
            "dir/only/c.py": None,
            "new/deeper/n.py": ("100644", blob),
            "x y/ü.txt": ("100644", blob),
            "link": None,
        }
        edited = git.edit_tree(tree, changes)
        with git.temp_index() as idx:
            idx.read_tree(tree)
            idx.set_entries(
                [(e[0], e[1], p) if e else ("0", git.fmt.null, p) for p, e in changes.items()]
            )
            assert edited == idx.write_tree()
        assert git.edit_tree(tree, {}) == tree
        assert (
            git.edit_tree(
                tree, {"dir/b.py": ("100644", git.entries_at(tree, ["dir/b.py"])["dir/b.py"][1])}
            )
            == tree
        )
    finally:
        git.close()
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo.path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_the_series_tree_is_the_folder_whether_cached_or_not(repo: Repo, tmp_path) -> None:
    """The snapshot's tree of the series folder, taken from the stat cache (whole, when no file
    changed) or made again, is what git makes of the series in it: the series file and the
    patch files it names, nothing else (a README, a nested repository's .git)."""
    stack_of_three(repo)
    folder = repo.path / "patches"

    def age() -> None:  # the cache trusts only files older than two seconds
        for f in folder.rglob("*"):
            os.utime(f, (1_000_000_000, 1_000_000_000))

    def git_tree() -> str:
        env = {
            **os.environ,
            "GIT_INDEX_FILE": str(tmp_path / "index"),
            "GIT_WORK_TREE": str(folder),
        }
        (tmp_path / "index").unlink(missing_ok=True)
        named = [
            ln.split()[0] for ln in (folder / "series").read_text().splitlines() if ln[:1].isalnum()
        ]
        there = ["series", *(n for n in named if (folder / n).exists())]
        subprocess.run(["git", "add", "--", *there], cwd=folder, env=env, check=True)
        out = subprocess.run(["git", "write-tree"], cwd=folder, env=env, capture_output=True)
        return out.stdout.decode().strip()

    ws = open_checkout(None, str(repo.path))
    try:
        age()
        for change in (
            lambda: None,  # made
            lambda: None,  # the cached tree
            lambda: (folder / "p1.patch").unlink(),
            lambda: (folder / "p0.patch").rename(folder / "p0-renamed.patch"),
            lambda: (folder / "p2.patch").write_text("a hand edit\n"),
            lambda: (folder / "README").write_text("not a patch\n"),
            lambda: subprocess.run(["git", "init", "-q", str(folder)], check=True),
        ):
            change()
            age()
            assert series_tree(ws) == (git_tree(), True)
    finally:
        ws.git.close()


def test_a_refresh_parses_no_patch_file_it_carries(repo: Repo, monkeypatch) -> None:
    """The patches a refresh carries without a merge are committed from the header their
    proven summary keeps (author, date, message): their files are not parsed again, and the
    commits are the ones a parse gives (the same ids as with the cache gone)."""
    from patchstack.model import patchfile  # (read by the checkout when it parses)

    stack_of_three(repo)
    base = repo.git("rev-parse", "HEAD~3").strip()
    blob = repo.git("hash-object", "-w", "--stdin", input="upstream\n").strip()
    listing = repo.git("ls-tree", base) + f"100644 blob {blob}\tc.py\n"  # a file no patch has
    tree = repo.git("mktree", input=listing).strip()
    moved = repo.git("commit-tree", tree, "-p", base, "-m", "upstream adds c.py").strip()
    repo.ps("pop", "--all")  # proves the three files, kept for the next command
    repo.ps("push", "--all")
    parsed: list[bytes] = []
    real = patchfile.parse_patch

    def counting(data: bytes, *args, **kwargs):
        parsed.append(data)
        return real(data, *args, **kwargs)

    monkeypatch.setattr(patchfile, "parse_patch", counting)
    copy = repo.path.parent / "copy"
    shutil.copytree(repo.path, copy, symlinks=True)
    repo.ps("refresh", "--onto", moved)
    assert parsed == []
    (copy / ".git" / "patchstack" / "cache").unlink()  # no summaries: every file parsed
    Repo(copy).ps("refresh", "--onto", moved)
    assert len(parsed) == 3
    assert Repo(copy).head() == repo.head()


def test_status_walks_upstreams_history_once_per_base_and_tip(
    repo: Repo, tmp_path, monkeypatch
) -> None:
    """The drift (which upstream commits touch which patches) is walked once for a series base,
    an upstream tip and the files the patches touch, and kept: the next status prints the same
    without a walk of the history; a new upstream commit, or a patch touching another file, is
    walked again."""
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.git("branch", "up", repo.git("rev-parse", "HEAD~1").strip())
    repo.git("branch", "--set-upstream-to", "up")
    repo.git("checkout", "-q", "up")
    replace_line(repo, "a.py", "a 30\n", "a 30 upstream\n")
    repo.commit_all("upstream edits a.py")
    repo.write("other.py", "other\n")
    repo.commit_all("upstream adds other.py")
    repo.git("checkout", "-q", "main")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    def status() -> tuple[str, list[str]]:
        if trace.exists():
            trace.unlink()
        out = repo.ps("status").stdout
        walks = [
            ln for ln in trace.read_text().splitlines() if "git log" in ln and "--name-only" in ln
        ]
        return out, walks

    first, walked = status()
    assert "upstream moved: 2 commits since the series base" in first and walked
    again, walked = status()
    assert again == first and not walked
    repo.git("checkout", "-q", "up")
    repo.write("third.py", "third\n")
    repo.commit_all("upstream adds third.py")
    repo.git("checkout", "-q", "main")
    moved, walked = status()
    assert "upstream moved: 3 commits" in moved and walked


def test_status_of_many_paths_filters_what_git_status_of_the_pathspec_lists(repo: Repo) -> None:
    """Beyond a few paths, the work tree's state is read whole and filtered here (git matches
    a long pathspec slowly): the same records as the literal pathspec gives, for files,
    folders, untracked files in new folders, a file where a folder is asked, and paths that
    do not exist; checked on random choices against git itself."""
    import random

    from patchstack.git import listings

    for path in ("a.py", "dir/x.py", "dir/sub/y.py", "d2/z.py", "keep.txt", "sp ace/é.txt"):
        repo.write(path, path + "\n")
    repo.commit_all("more files")
    repo.write("dir/x.py", "changed\n")
    repo.write("dir/sub/y.py", "changed\n")
    repo.git("add", "dir/sub/y.py")
    repo.write("dir/sub/y.py", "changed again\n")
    (repo.path / "d2" / "z.py").unlink()
    repo.write("new/deep/n.py", "untracked\n")
    repo.write("dir/u.txt", "untracked\n")
    repo.write("sp ace/é.txt", "changed\n")
    candidates = [
        "a.py", "dir", "dir/x.py", "dir/sub", "dir/sub/y.py", "d2/z.py", "new", "new/deep",
        "new/deep/n.py", "dir/u.txt", "keep.txt", "missing.py", "a.py/below", "sp ace/é.txt",
        "sp ace", "di", "dir/su",
    ]  # fmt: skip
    rng = random.Random(7)
    git = find_repo(str(repo.path))
    try:
        for _ in range(40):
            paths = rng.sample(candidates, rng.randint(1, len(candidates)))
            seen = []
            for most in (0, 10_000):  # filtered here, then given to git as a pathspec
                old, listings.PATHSPEC_MAX = listings.PATHSPEC_MAX, most
                try:
                    seen.append(git.dirty(paths=paths))
                finally:
                    listings.PATHSPEC_MAX = old
            assert seen[0] == seen[1], paths
    finally:
        git.close()


def test_trees_and_commits_written_in_process_are_the_ones_plumbing_writes(repo: Repo) -> None:
    """`mktree` and `commit_tree` (an operation-log entry makes four at each step) write in
    process exactly what ``mktree --missing`` and ``commit-tree`` write; where git would change
    the input (crud around a name, a zone ``-0000``, text that is not UTF-8) git writes it."""
    repo.write("a.py", "a\n")
    repo.commit_all("a")
    git = find_repo(str(repo.path))
    blob = repo.git("rev-parse", "HEAD:a.py").strip()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    head = repo.git("rev-parse", "HEAD").strip()

    def plumbing_tree(entries: list[tuple[str, str, str]]) -> str:
        kinds = {"040000": "tree", "160000": "commit"}
        data = "".join(f"{m} {kinds.get(m, 'blob')} {o}\t{n}\0" for m, o, n in entries)
        return repo.git("mktree", "-z", "--missing", input=data).strip()

    def plumbing_commit(parents: list[str], message: str, name: str, email: str, date: str):
        env = dict(os.environ)
        for who in ("AUTHOR", "COMMITTER"):
            env.update({f"GIT_{who}_NAME": name, f"GIT_{who}_EMAIL": email})
            env[f"GIT_{who}_DATE"] = date
        args = ["git", "commit-tree", tree, *(a for p in parents for a in ("-p", p))]
        data = message.encode("utf-8", "surrogateescape")
        proc = subprocess.run(args, cwd=repo.path, input=data, env=env, capture_output=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().strip()

    try:
        trees = [
            [("100644", blob, "b"), ("040000", tree, "a"), ("100755", blob, "a.py")],
            [("040000", tree, "a-"), ("100644", blob, "a-b"), ("040000", tree, "a")],
            [("120000", blob, "link"), ("160000", head, "sub"), ("100644", blob, "ü x")],
            [],
        ]
        for entries in trees:
            assert git.mktree(entries) == plumbing_tree(entries), entries
        cases = [
            ([], "subject\n\nbody\n", "A U Thor", "a@b.c", "1700000000 +0000"),
            ([head], "no newline at the end", "Ünï Cödé", "u@x.org", "1700000005 +0530"),
            ([head, head], "two parents\n", "A", "a@b", "1700000000 -0130"),
            ([head], "zone\n", "A", "a@b", "1700000000 -0000"),
            ([head], "crud\n", " Crud, ", "<a@b>", "1700000001 +0000"),
            ([head], "bytes \udcff\n", "A", "a@b", "1700000001 +0000"),
            ([head], "nonchar \ufffe\n", "A", "a@b", "1700000001 +0000"),
        ]
        for parents, message, name, email, date in cases:
            made = git.commit_tree(tree, parents, message, f"{name} <{email}>", date)
            assert made == plumbing_commit(parents, message, name, email, date), message
    finally:
        git.close()
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo.path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def _git_runs(repo: Repo, monkeypatch, tmp_path, *command: str) -> list[str]:
    """The git commands one patchstack command ran (``GIT_TRACE``), as their argument lines."""
    trace = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*')))}"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    try:
        repo.ps(*command)
    finally:
        monkeypatch.delenv("GIT_TRACE")
    lines = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    return [
        ln.split("trace: built-in: git ", 1)[1] for ln in lines if "trace: built-in: git " in ln
    ]


def test_a_push_or_pop_runs_few_git_processes(repo: Repo, monkeypatch, tmp_path) -> None:
    """The fixed cost of a command is mostly its git processes: the configuration is read once
    (one ``config --list``), HEAD and other commits are asked of the batch ``cat-file``, and
    the operation log's trees and commits are written in process."""
    stack_of_three(repo)
    for command in (["pop", "--all"], ["push", "--all"], ["pop", "p1.patch"], ["push", "p2"]):
        runs = _git_runs(repo, monkeypatch, tmp_path, *command)
        verbs = [r.split()[0] for r in runs]
        assert "mktree" not in verbs and "commit-tree" not in verbs, runs
        assert [r for r in runs if r.startswith("config")] == ["config -z --list"], runs
        assert not [r for r in runs if r.startswith("rev-parse --verify --quiet --end")], runs
        assert not [r for r in runs if r.startswith("log") and " -n1 " in r], runs  # the log's tip
        # 22 before the one cat-file --batch-command of a command and the branch HEAD is on
        # told by the rev-parse that finds the repository (pop --all, push --all, pop, push:
        # 16, 14, 11, 12; now 14, 12, 9, 10)
        assert len(runs) <= 14, (command, len(runs), runs)
        assert "symbolic-ref" not in verbs, runs
        assert [r for r in runs if r.startswith("cat-file")] == ["cat-file --batch-command"], runs


def test_the_fixed_cost_of_a_command_is_its_own_git_processes(repo: Repo, tmp_path) -> None:
    """A command run from the shell starts no git process for its start-up beyond finding the
    repository (which also tells git's version: no ``git version``) and the configuration
    (one ``config --list``, which also has the colour the user configured: no ``config
    --get-regexp``), whatever colour it prints."""
    stack_of_three(repo)
    trace = tmp_path / "trace"
    for command in (["series"], ["show", "p1"], ["status"], ["status", "--color=always"]):
        trace.unlink(missing_ok=True)
        env = dict(os.environ, GIT_TRACE=str(trace))
        proc = subprocess.run(
            [sys.executable, "-m", "patchstack", *command], cwd=repo.path, env=env, check=False
        )
        assert proc.returncode == 0, command
        said = trace.read_text(errors="replace").splitlines()
        runs = [ln.split("trace: built-in: git ", 1)[1] for ln in said if "built-in: git " in ln]
        verbs = [r.split()[0] for r in runs]
        assert "version" not in verbs and "symbolic-ref" not in verbs, (command, runs)
        assert [r for r in runs if r.startswith("config")] == ["config -z --list"], runs
        assert verbs[:2] == ["rev-parse", "config"], runs
        if command[0] != "status":
            assert len(runs) <= 4, (command, runs)  # (and one cat-file: --batch-command)


def _started_as(repo: Repo, tmp_path, *command: str, path: str | None = None) -> tuple[set, str]:
    """Each git process's ``argv[0]`` as git itself records it (trace2's ``start`` event) for
    ``patchstack COMMAND`` run in process, and what the command printed."""
    events = tmp_path / "events"
    events.unlink(missing_ok=True)
    old = dict(os.environ)
    os.environ["GIT_TRACE2_EVENT"] = str(events)
    if path is not None:
        os.environ["PATH"] = path
    try:
        out = repo.ps(*command).stdout
    finally:
        os.environ.clear()
        os.environ.update(old)
    starts = [json.loads(ln) for ln in events.read_text().splitlines()]
    return {e["argv"][0] for e in starts if e["event"] == "start"}, out


def test_git_is_started_by_the_path_the_exec_of_a_bare_git_finds(repo: Repo, tmp_path) -> None:
    """A command starts each git process by the absolute path of the ``git`` its ``PATH``
    names (the exec of a bare ``git`` tries every folder before git's, each process), found
    again for another ``PATH``; the bare name where ``PATH`` has a relative folder (found from
    where git runs) or with ``PATCHSTACK_NO_GIT_LOOKUP_ONCE=1``; the same output each way."""
    stack_of_three(repo)
    git = shutil.which("git")
    assert git is not None
    started, plain = _started_as(repo, tmp_path, "series")
    assert started == {git}, started
    # another PATH, whose first folder holds a git (a link to the same one): that one
    first = tmp_path / "first"
    first.mkdir()
    (first / "git").symlink_to(git)
    started, out = _started_as(
        repo, tmp_path, "series", path=f"{first}{os.pathsep}{os.environ['PATH']}"
    )
    assert (started, out) == ({str(first / "git")}, plain)
    started, out = _started_as(
        repo, tmp_path, "series", path=f"{os.environ['PATH']}{os.pathsep}rel"
    )
    assert (started, out) == ({"git"}, plain)
    os.environ["PATCHSTACK_NO_GIT_LOOKUP_ONCE"] = "1"
    try:
        started, out = _started_as(repo, tmp_path, "series")
    finally:
        del os.environ["PATCHSTACK_NO_GIT_LOOKUP_ONCE"]
    assert (started, out) == ({"git"}, plain)


# -- what a command imports --------------------------------------------------------------------

_PROBE = (
    "import sys\n"
    "from patchstack.cli import main\n"
    "try:\n    main(sys.argv[1:])\n"
    "except SystemExit as e:\n    code = e.code\n"
    "print(code, *sorted(sys.modules))\n"
)

# What only some commands need: the other commands' modules, the renderers and their
# templates, import and export, the culprit tracing and its difflib.
_NOT_FOR_A_PLAIN_COMMAND = {
    "jinja2",
    "markupsafe",
    "patchstack.review",
    "patchstack.interop",
    "patchstack.demo",
    "patchstack.manpage",
    *(
        f"patchstack.cli.{m}"
        for m in ("completion", "edit", "interop", "lab", "manual", "oplog", "reorder")
    ),
    *(f"patchstack.cli.{m}" for m in ("resolutions", "review", "team", "bisecttext")),
}


def _imported(repo: Repo, *command: str) -> tuple[int, set[str]]:
    """The exit status of ``patchstack COMMAND`` run by a fresh interpreter, and every module
    it had imported when it ended."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *command],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    code, *modules = proc.stdout.splitlines()[-1].split()
    return int(code), set(modules)


def _ours(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == "patchstack" or m.startswith("patchstack."))


def test_a_plain_command_imports_only_what_it_runs(repo: Repo, tmp_path) -> None:
    """Every command pays the interpreter and its imports again (a refresh stop by stop runs
    one ``--skip`` per stop): ``--version`` and ``--help`` import the group alone; ``status``,
    ``push`` and ``pop`` no other command's module, no renderer and no culprit tracing, and
    each stays within a bound of the package's modules (raise it only for a module the
    command runs)."""
    from .refresh_fixtures import make_fork

    the_group = [
        "patchstack",
        "patchstack.cli",
        "patchstack.cli.app",
        "patchstack.cli.output",
        "patchstack.cli.registry",
        "patchstack.cli.terminal",
        "patchstack.errors",
        "patchstack.lock",
        "patchstack.safe_text",
    ]
    for command in ("--version", "--help"):  # the list of commands, from `cli.registry`
        code, modules = _imported(repo, command)
        assert code == 0 and _ours(modules) == the_group, (command, _ours(modules))
    fork = make_fork(tmp_path / "fork")
    # (+3: journal.blobs, journal.seriestree and journal.plan, split off snapshot and transaction)
    bounds = {"status": 81, "pop": 79, "push": 86}
    for command, bound in bounds.items():
        code, modules = _imported(fork, command)
        assert code == 0, command
        assert not modules & _NOT_FOR_A_PLAIN_COMMAND, (command, modules & _NOT_FOR_A_PLAIN_COMMAND)
        assert "patchstack.cli.refresh" not in modules and "difflib" not in modules, command
        assert {"patchstack.engine.merging", "patchstack.engine.culprits"}.isdisjoint(modules)
        assert len(_ours(modules)) <= bound, (command, len(_ours(modules)), _ours(modules))


def test_a_skip_at_a_stop_imports_only_what_a_replay_runs(tmp_path) -> None:
    """``refresh --skip`` at a stop imports the refresh and the replay, not the other commands,
    not the renderers, not what only a refresh's start needs (the placer, upstream's claims),
    within a bound of the package's modules."""
    from .refresh_fixtures import make_fork

    fork = make_fork(tmp_path / "fork")
    fork.ps("refresh", "--onto", "upstream", code=1)
    code, modules = _imported(fork, "refresh", "--skip")
    assert code == 0
    assert not modules & _NOT_FOR_A_PLAIN_COMMAND, modules & _NOT_FOR_A_PLAIN_COMMAND
    assert "patchstack.cli.stack" not in modules and "patchstack.engine.placer" not in modules
    # 116: the chain's builders and the commands an upstream patch needs imported where used;
    # 119: journal.blobs, journal.seriestree and journal.plan (split off snapshot, transaction)
    # 120: engine.renames, the resumed replay's rename proof (`KnockOns.resumed_proof`)
    # 121: engine.landings, split off engine.verdicts (no new work)
    # 122: engine.linehashes, split off engine.lineindex (no new work)
    # 123: engine.relocated, split off engine.relocate (no new work)
    assert len(_ours(modules)) <= 123, (len(_ours(modules)), _ours(modules))


def test_the_group_lists_each_command_as_the_command_itself_would() -> None:
    """The group lists the commands from `cli.registry` without importing them: each name is
    registered by the module the table says, an alias names the same command, and the short
    help the table gives is the command's own at every width."""
    import click

    from patchstack.cli import cli, registry

    ctx = click.Context(cli)
    names = cli.list_commands(ctx)
    assert sorted(names) == sorted({*registry.COMMANDS, *registry.ALIASES})
    for name in names:
        real = cli.get_command(ctx, name)
        assert real is not None, name
        assert real.callback is not None
        assert real.callback.__module__ == f"patchstack.cli.{registry.module_of(name)}", name
        assert real.name == registry.ALIASES.get(name, name), name
        shown = cli.listed(ctx, name)
        assert shown is not None and shown.hidden == real.hidden
        summary = real.get_short_help_str(10**6)
        for limit in range(10, 200):
            assert shown.get_short_help_str(limit) == real.get_short_help_str(limit), (
                f"registry.COMMANDS[{name!r}] should say {summary!r}"
            )
    unlisted = sorted(set(cli.commands) - set(names))  # every module imported now
    assert not unlisted, f"commands not in patchstack/cli/registry.py: {unlisted}"


# What a command that stops again, or reads a cache it made, never runs: the chain's builders
# (nothing is built at a stop), the end of a refresh (its proofs, the new stack's build), the
# commands a refresh calls only where upstream took a patch, the patch file parser.
_NOT_AT_A_STOP = {
    "patchstack.engine.build",
    "patchstack.engine.committer",
    "patchstack.engine.fastpath",
    "patchstack.engine.loaded",
    "patchstack.commands.edit",
    "patchstack.commands.upstream",
    "patchstack.commands.refresh.proof",
    "patchstack.model.selection",
    "patchstack.model.fields",
}


def test_a_skip_that_stops_again_imports_nothing_that_builds_or_ends(tmp_path) -> None:
    """``refresh --skip`` that stops at the next patch (every stop of a drift but the last)
    builds no chain and writes no proof: it imports none of `_NOT_AT_A_STOP`, and `status`
    with the drift and the parses cached imports no patch file parser."""
    from .test_kept_verdicts import _fork

    fork = _fork(tmp_path)
    fork.ps("refresh", "--onto", "up", code=1)
    code, modules = _imported(fork, "refresh", "--skip")
    assert code == 1
    assert not modules & _NOT_AT_A_STOP, sorted(modules & _NOT_AT_A_STOP)
    # 111: 108, and journal.blobs, .seriestree and .plan (split off snapshot and transaction);
    # 112: engine.renames, the resumed replay's rename proof (`KnockOns.resumed_proof`)
    # 113: engine.landings, split off engine.verdicts (no new work)
    # 114: engine.linehashes, split off engine.lineindex (no new work)
    # 115: engine.relocated, split off engine.relocate (no new work)
    assert len(_ours(modules)) <= 115, (len(_ours(modules)), _ours(modules))
    plain = _fork(tmp_path / "plain")
    for _ in range(2):  # the second reads what the first cached
        code, modules = _imported(plain, "status")
    assert code == 0
    assert "patchstack.model.patchfile" not in modules
    # 70: 67, and the three modules split off snapshot and transaction
    # 71: commands.tracked, the one definition of the upstream the drift is counted against
    assert len(_ours(modules)) <= 71, (len(_ours(modules)), _ours(modules))


def test_the_sealed_environment_kept_is_the_one_made_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment a git process gets, kept from the call before while the caller's is the
    same, is the one made anew (``PATCHSTACK_NO_ENV_MEMO=1``) after every kind of change: a
    variable added, changed in place, removed, a dropped one, the caller's own GIT_CONFIG_COUNT,
    the hooks quieted; and what a caller adds to or changes in one never reaches the next."""
    from patchstack.git import process

    def both(extra: dict[str, str] | None = None) -> dict[str, str]:
        kept = process.sealed_env(extra)
        monkeypatch.setenv("PATCHSTACK_NO_ENV_MEMO", "1")
        anew = process.sealed_env(extra)
        monkeypatch.delenv("PATCHSTACK_NO_ENV_MEMO")
        del anew["PATCHSTACK_NO_ENV_MEMO"]
        assert kept == anew
        return kept

    first = both()
    assert process._MEMO and process.sealed_env() is not process._MEMO[0][2]  # kept: a copy
    first["GIT_DIR"] = "/elsewhere"  # a caller's change to its copy
    assert both() == {k: v for k, v in first.items() if k != "GIT_DIR"}
    assert both({"GIT_INDEX_FILE": "/tmp/i"})["GIT_INDEX_FILE"] == "/tmp/i"
    assert "GIT_INDEX_FILE" not in both()
    changes = [
        ("PATCHSTACK_TEST_VAR", "one"),
        ("PATCHSTACK_TEST_VAR", "two"),  # the same names, another value
        ("GIT_DIR", "/x"),  # dropped
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "user.name"),
        ("GIT_CONFIG_VALUE_0", "someone"),
    ]
    seen = []
    for key, value in changes:
        monkeypatch.setenv(key, value)
        seen.append(both())
    assert seen[0]["PATCHSTACK_TEST_VAR"] == "one" and seen[1]["PATCHSTACK_TEST_VAR"] == "two"
    assert "GIT_DIR" not in seen[2] and seen[-1]["GIT_CONFIG_KEY_1"] == "core.quotePath"
    monkeypatch.delenv("PATCHSTACK_TEST_VAR")
    assert "PATCHSTACK_TEST_VAR" not in both()
    process.quiet_hooks(True)
    try:
        assert both()["GIT_CONFIG_VALUE_" + str(len(process.PINNED_CONFIG) + 1)] == os.devnull
    finally:
        process.quiet_hooks(False)
    assert "core.hooksPath" not in both().values()
