"""Path torture: every command through file names git and shells find awkward.

Names with spaces, NFC and NFD accents, CJK, ``[ ] * ?`` (glob characters), quotes, a
backslash, a leading ``-``, a tab, a CR, a newline, and a very long name go through new, push,
pop, pop --only, refresh with a conflict, --continue, --abort, status drift, undo, review and
export; an untracked file whose name holds a newline sits in the work tree all along. Paths must
stay bytes from git to the patch file and back: a path printed C-quoted by git is the same file,
a pathspec never matches another file, and nothing is lost or committed with conflict markers.
Commits and trees are checked with GitPython, which reads the repository without patchstack's
git layer.
"""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path

import git as gitpython
import pytest

from .conftest import Repo, copy_repo, make_repo, numbered, slow_after

NAMES = [
    "with space.txt",
    unicodedata.normalize("NFC", "café nfc.txt"),
    unicodedata.normalize("NFD", "café nfd.txt"),
    "日本語/ファイル.txt",
    "app/[slug]/page.tsx",
    "app/s/page.tsx",  # what the glob app/[slug]/page.tsx would match
    "star*.txt",
    "what?.txt",
    'dq"uote.txt',
    "sq'uote.txt",
    "back\\slash.txt",
    "-leading.txt",
    "tab\tname.txt",
    "cr\rname.txt",
    "new\nline.txt",
    "x" * 200 + ".txt",
]
TAGS = ("essential", "diagnostic", "optimization")
UNTRACKED = "notes\nfile.txt"


def patch_name(i: int) -> str:
    return f"p{i:02}.patch"


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    """Built once: every name captured as its own patch (16 'new' commands)."""
    root = module_env.mktemp("torture")
    repo = make_repo(root / "fork", {name: numbered(30, f"n{i}") for i, name in enumerate(NAMES)})
    repo.git("branch", "upstream")
    repo.ps("init")
    repo.write(UNTRACKED, "mine\n")
    for i, name in enumerate(NAMES):
        text = repo.read(name).replace(f"n{i} 10\n", f"n{i} 10 fork\n")
        repo.write(name, text)
        # Every other file is edited too, so that a wrong pathspec would capture it.
        other = NAMES[(i + 1) % len(NAMES)]
        repo.write(other, repo.read(other) + "stray\n")
        result = repo.ps("new", patch_name(i), "--tag", TAGS[i % 3], "--", name)
        assert "1 file(s)" in result.stdout
        repo.write(other, repo.read(other).removesuffix("stray\n"))
        left = repo.git("status", "--porcelain", "-z", "--", ".", ":(exclude)patches")
        assert left == f"?? {UNTRACKED}\0"
    return repo.path


@pytest.fixture
def fork(built: Path, tmp_path: Path) -> Repo:
    return copy_repo(built, tmp_path / "fork")


def committed_paths(repo: Repo) -> list[list[str]]:
    """For each patch commit, oldest first, the paths it changes (read by GitPython)."""
    r = gitpython.Repo(repo.path)
    out = []
    for c in reversed(list(r.iter_commits("HEAD", max_count=len(NAMES)))):
        assert f"Patchstack-Patch: {patch_name(len(out))}" in c.message
        out.append(sorted(_changed(c.parents[0].tree, c.tree)))
    return out


def _blobs(tree: gitpython.Tree) -> dict[str, str]:
    return {b.path: b.hexsha for b in tree.traverse() if b.type == "blob"}


def _changed(a: gitpython.Tree, b: gitpython.Tree) -> set[str]:
    """Paths that differ, from the tree objects themselves (GitPython's diff parser reads
    git's textual output and cannot take every name)."""
    old, new = _blobs(a), _blobs(b)
    return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}


def test_each_name_is_captured_alone_and_pushed_and_popped(fork: Repo) -> None:
    assert committed_paths(fork) == [[name] for name in NAMES]
    top = fork.tree()
    tree = gitpython.Repo(fork.path).head.commit.tree
    for i, name in enumerate(NAMES):
        assert f"n{i} 10 fork\n" in (tree / name).data_stream.read().decode()
    fork.ps("pop", "--all")
    assert fork.read(NAMES[0]) == numbered(30, "n0")
    fork.ps("push", "--all")
    assert fork.tree() == top
    fork.ps("pop", "--only", "diagnostic")
    for i, name in enumerate(NAMES):
        assert ("fork" in fork.read(name)) == (TAGS[i % 3] != "diagnostic")
    fork.ps("push", "--all")
    assert fork.tree() == top
    status = json.loads(fork.ps("status", "--json").stdout)
    assert {p["matches"] for p in status["patches"]} == {"exact"}
    assert status["untracked"] == [UNTRACKED]
    assert fork.read(UNTRACKED) == "mine\n"


def move_upstream(repo: Repo, conflict_in: int) -> str:
    """Upstream edits line 20 of every file (an offset-free merge) and line 11 of one (next
    to the patch's line 10: a conflict). Built in a separate clone."""
    up = repo.path.parent / "up"
    subprocess.run(["git", "clone", "-q", "-b", "upstream", str(repo.path), str(up)], check=True)
    upr = Repo(up)
    for i, name in enumerate(NAMES):
        text = upr.read(name).replace(f"n{i} 20\n", f"n{i} 20 upstream\n")
        if i == conflict_in:
            text = text.replace(f"n{i} 11\n", f"n{i} 11 upstream\n")
        upr.write(name, text)
        upr.git("add", "--", name)
        upr.git("commit", "-q", "-m", f"upstream: {name!r}")
    repo.git("fetch", "-q", str(up), "upstream:upstream", "--force")
    repo.git("branch", "-q", "--set-upstream-to=upstream")
    return repo.git("rev-parse", "upstream").strip()


# newline (C-quoted by git) by default; café NFD and leading - under -m slow (both still go
# through new, push, pop, status, refresh, review and export by default, above and below).
@pytest.mark.parametrize("conflict_in", slow_after([14, 2, 11], 1))
def test_refresh_conflict_continue_abort_and_undo(fork: Repo, conflict_in: int) -> None:
    name = NAMES[conflict_in]
    before = fork.state()
    move_upstream(fork, conflict_in)
    status = json.loads(fork.ps("status", "--json").stdout)
    touching = {f for c in status["drift"]["touching"] for f in c["files"]}
    assert touching == set(NAMES)
    assert all(c["patches"] for c in status["drift"]["touching"])

    # --abort gives back everything.
    result = fork.ps("refresh", "--onto", "upstream", code=1)
    assert f"conflict in patch {patch_name(conflict_in)}" in result.stderr
    assert f"file {name}" in result.stderr
    assert f"n{conflict_in} 11 upstream" in result.stderr  # the hunk is reported
    text = fork.read(name)
    assert "<<<<<<< new base" in text and f">>>>>>> {patch_name(conflict_in)}" in text
    fork.ps("refresh", "--abort")
    assert fork.state() == before

    # --continue refuses while markers remain, then finishes; no marker reaches a patch file.
    fork.ps("refresh", "--onto", "upstream", code=1)
    refused = fork.ps("refresh", "--continue", code=2)
    assert "conflict markers remain" in refused.stderr and name in refused.stderr
    resolved = fork.read(name).split("<<<<<<<")[0]
    resolved += f"n{conflict_in} 10 fork\nn{conflict_in} 11 upstream\n"
    resolved += fork.read(name).split(f">>>>>>> {patch_name(conflict_in)}\n")[1]
    fork.write(name, resolved)
    fork.ps("refresh", "--continue")
    for i in range(len(NAMES)):
        data = (fork.path / "patches" / patch_name(i)).read_bytes()
        assert b"<<<<<<<" not in data and b">>>>>>>" not in data
    assert fork.read(UNTRACKED) == "mine\n"
    assert json.loads(fork.ps("status", "--json").stdout)["differs"] == []
    # The resolved patch applies from its file alone.
    fork.ps("pop", "--all")
    fork.ps("push", "--all")
    assert fork.read(name) == resolved

    # undo walks back through push, pop, --continue, the stop, to the state before.
    for _ in range(4):
        fork.ps("undo")
    assert fork.state() == before


def test_review_and_export_keep_every_name(fork: Repo, tmp_path: Path) -> None:
    old = tmp_path / "old-series"
    fork.ps("export", "quilt", str(old))
    move_upstream(fork, 99)  # no conflict
    fork.ps("refresh", "--onto", "upstream")
    review = fork.ps("review", str(old), str(fork.path / "patches"), "--verbose").stdout
    for i in range(len(NAMES)):
        assert patch_name(i) in review
    mbox = tmp_path / "series.mbox"
    fork.ps("export", "mbox", str(mbox))
    (tmp_path / "other").mkdir()
    other = Repo(tmp_path / "other")
    other.git("init", "-q", "-b", "main")
    other.git("fetch", "-q", str(fork.path), "upstream:upstream")
    other.git("reset", "-q", "--hard", "upstream")
    other.git("am", "-q", str(mbox))
    assert other.tree() == fork.tree()
