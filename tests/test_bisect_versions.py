"""bisect across refreshes: each step carries the version of each patch whose base is nearest
the commit tested, from the operation log or the series folder's git history.

The bundled example is the story: the series is made on 434057dae1, upstream pulls four
commits, the fourth of which (9d6d1af69a) conflicts with nccl-diagnostic-logging; the user
resolves it and refreshes onto it. The refreshed patch expects upstream's new lines, so it no
longer applies at the three commits before; the version before the refresh does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from patchstack.demo import RESOLVED_FILE, build_sandbox, resolve_conflict, upstream_pull

from .conftest import Repo, make_repo, numbered, replace_line

CULPRIT = "9d6d1af69a5887f0ad5edbe5783680f70798ef4d"
TEST = ["grep", "-q", "init_distributed_environment", "srt/managers/scheduler.py"]


@pytest.fixture(scope="module")
def refreshed(module_env: pytest.TempPathFactory) -> Path:
    """The example after its pull and a resolved refresh onto origin/main (copied per test)."""
    root = module_env.mktemp("versions")
    box = build_sandbox(str(root / "sandbox"))
    repo = Repo(box.fork)
    repo.ps("push", "--all")
    upstream_pull(box)
    repo.git("fetch", "-q", "origin")
    repo.ps("refresh", "--onto", "origin/main", code=1)
    repo.write(RESOLVED_FILE, resolve_conflict(repo.read(RESOLVED_FILE)))
    repo.ps("refresh", "--continue")
    return Path(box.fork)


def fork_copy(refreshed: Path, tmp_path: Path) -> Repo:
    dest = tmp_path / "sandbox" / "fork"
    shutil.copytree(refreshed.parent, dest.parent, symlinks=True)
    return Repo(dest)


def bisect_json(repo: Repo, *args: str, code: int = 0) -> dict:
    result = repo.ps("bisect", "--json", "434057dae1", "origin/main", *args, "--", *TEST, code=code)
    return json.loads(result.stdout)


def test_bisect_crosses_the_refresh_with_the_versions_from_the_log(
    refreshed: Path, tmp_path: Path
) -> None:
    repo = fork_copy(refreshed, tmp_path)
    data = bisect_json(repo)
    assert data["outcome"] == "found" and data["culprit"]["commit"] == CULPRIT
    assert [s["verdict"] for s in data["steps"]] == ["good", "good", "bad"]  # no skip
    versions = {s["commit"][:10]: s["series"] for s in data["steps"]}
    before = versions["52c8910d19"]
    assert [v["base"][:10] for v in before] == ["434057dae1"]
    assert re.fullmatch(r"the series before log #3 \(refresh --continue\)", before[0]["version"])
    assert versions[CULPRIT[:10]] == [
        {"version": "the series now", "base": CULPRIT, "patches": data["selected"]}
    ]
    assert data["stops"] == []
    # The steps say which version they built; the table numbers them.
    out = repo.ps("bisect", "434057dae1", "origin/main", "--", *TEST)
    assert "patches as in the series before log #3 (refresh --continue), base 434057dae1" in (
        out.stderr
    )
    assert f"first failing commit: {CULPRIT}" in out.stdout
    assert "v1: patches as in the series before log #3" in out.stdout
    assert f"v2: patches as in the series now, base {CULPRIT[:10]}" in out.stdout


def export(repo: Repo, tree: str, dest: Path) -> None:
    """The files of ``tree`` (a series folder) into ``dest``, replacing what is there."""
    for f in dest.iterdir():
        if f.name != ".git":
            f.unlink()
    for name in filter(None, repo.git("ls-tree", "-r", "--name-only", tree).split("\n")):
        blob = subprocess.run(
            ["git", "cat-file", "blob", f"{tree}:{name}"], cwd=repo.path, capture_output=True
        )
        (dest / name).write_bytes(blob.stdout)


def test_the_series_folders_git_history_serves_a_clone_without_the_log(
    refreshed: Path, tmp_path: Path
) -> None:
    """A colleague's clone has no operation log, but the series lives in a repository of its
    own whose history has the version before the refresh."""
    repo = fork_copy(refreshed, tmp_path)
    held = Repo(tmp_path / "series-repo")
    held.path.mkdir()
    held.git("init", "-q", "-b", "main")
    log = repo.git("log", "--first-parent", "--format=%H %s", "refs/patchstack/oplog")
    first = [ln.split()[0] for ln in log.splitlines() if " patchstack: " in ln][-1]
    for tree, message in (
        (repo.git("rev-parse", f"{first}:before/series").strip(), "the series as made"),
        (repo.git("rev-parse", "refs/patchstack/oplog:after/series").strip(), "refresh"),
    ):
        export(repo, tree, held.path)
        held.git("add", "-A")
        held.git("commit", "-q", "-m", message)
    repo.git("update-ref", "-d", "refs/patchstack/oplog")
    shutil.rmtree(repo.path / "patches")
    repo.git("config", "patchstack.dir", str(held.path))
    data = bisect_json(repo)
    assert data["outcome"] == "found" and data["culprit"]["commit"] == CULPRIT
    assert [s["verdict"] for s in data["steps"]] == ["good", "good", "bad"]
    older = held.git("rev-parse", "HEAD~1").strip()
    assert data["steps"][0]["series"][0]["version"] == f"the series of commit {older[:10]}"


def test_without_history_the_refreshed_patch_skips_as_before(
    refreshed: Path, tmp_path: Path
) -> None:
    """With no earlier version anywhere, the steps before the conflict are skipped (and the
    answer says from where, and that the patch applies again nowhere before BAD)."""
    repo = fork_copy(refreshed, tmp_path)
    repo.git("update-ref", "-d", "refs/patchstack/oplog")
    data = bisect_json(repo, code=1)
    assert data["outcome"] == "ambiguous"
    assert [s["patch"] for s in data["stops"]] == ["nccl-diagnostic-logging.patch"]
    stop = data["stops"][0]
    assert stop["from"].startswith("434057dae1")  # from GOOD on: builds pinned it
    assert stop["applies_after"] == CULPRIT


@pytest.fixture
def moved(tmp_path: Path) -> tuple[Repo, list[str]]:
    """A series refreshed straight from B onto D over X, the upstream commit it conflicts with;
    C, between them, breaks the test."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(5, "b")})
    b = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 patched\n")
    repo.ps("new", "p", "--tag", "essential", "a.py")
    repo.ps("pop", "--all")
    commits = [b]
    for message, rel, old, new in [
        ("X: upstream's own line 10", "a.py", "a 10\n", "a 10 upstream\n"),
        ("C: break b", "b.py", "b 3\n", "b 3 broken\n"),
        ("D: more b", "b.py", "b 5\n", "b 5 more\n"),
    ]:
        replace_line(repo, rel, old, new)
        commits.append(repo.commit_all(message))
    repo.git("branch", "upstream")
    repo.git("reset", "-q", "--hard", b)
    repo.ps("push", "--all")
    repo.ps("refresh", "--onto", "upstream", code=1)
    repo.write("a.py", numbered(20, "a").replace("a 10\n", "a 10 upstream patched\n"))
    repo.ps("refresh", "--continue")
    return repo, commits


def test_a_version_made_on_a_later_base_is_tried_where_the_older_one_conflicts(
    moved: tuple[Repo, list[str]],
) -> None:
    repo, commits = moved
    test = ["sh", "-c", "grep -q 'a 10.*patched' a.py && ! grep -q broken b.py"]
    data = json.loads(repo.ps("bisect", "--json", commits[0], "upstream", "--", *test).stdout)
    assert data["outcome"] == "found" and data["culprit"]["commit"] == commits[2]
    steps = {s["commit"]: s for s in data["steps"]}
    at_x = steps[commits[1]]
    assert at_x["verdict"] == "good"
    assert at_x["series"][0]["version"] == "the series now"  # made on D: it applies at X
    assert at_x["tried"][0].startswith("the series before log #")  # made on B: conflicts


def test_a_series_that_does_not_build_on_its_own_base_is_said_and_set_aside(
    refreshed: Path, tmp_path: Path
) -> None:
    """A patch file edited by hand so that it no longer applies where it was made: the steps
    carry the earlier versions (at BAD the refreshed one, as the log has it), and the answer
    says why."""
    repo = fork_copy(refreshed, tmp_path)
    path = repo.path / "patches" / "nccl-diagnostic-logging.patch"
    lines = path.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("@@")) + 1
    lines[at] = " # not what upstream has"
    path.write_text("\n".join(lines))
    data = bisect_json(repo)
    assert data["culprit"]["commit"] == CULPRIT
    assert data["notes"] == [
        "the series now does not build on its own base (nccl-diagnostic-logging.patch does not"
        " apply where it was made): its earlier versions were carried instead"
    ]
    at_bad = [s["series"][0] for s in data["steps"] if s["commit"] == CULPRIT]
    assert at_bad[0]["version"] == "the series of log #3 (refresh --continue)"
