"""refresh: the three routes, verdicts, conflicts, --continue, --abort, and folding edits."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from .conftest import Repo, make_repo, names, numbered, replace_line
from .refresh_fixtures import PATCHES, make_fork, quilt_applies, snapshot

EXPECTED = {
    "far.patch": "offset",
    "near.patch": "unchanged",
    "calm.patch": "unchanged",
    "known.patch": "upstream",
}


def verdicts(result) -> dict[str, str]:
    return {p["name"]: p["verdict"] for p in json.loads(result.stdout)["patches"]}


def linear_stack(repo: Repo, base: str) -> list[str]:
    """Subjects from HEAD down to ``base``; asserts there is no merge commit in between."""
    assert repo.git("rev-list", "--merges", f"{base}..HEAD") == ""
    return repo.git("log", "--format=%s", f"{base}..HEAD").split("\n")[:-1]


def files_of(repo: Repo) -> dict[str, bytes]:
    return {n: (repo.path / "patches" / n).read_bytes() for n in [*PATCHES, "series"]}


def test_route2_onto_gives_verdicts_and_keeps_unaffected_bytes(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    before = files_of(repo)
    stat_before = {n: os.stat(repo.path / "patches" / n) for n in PATCHES}
    up = repo.git("rev-parse", "upstream").strip()

    result = repo.ps("refresh", "--onto", "upstream", "--json")
    assert verdicts(result) == EXPECTED
    data = json.loads(result.stdout)
    assert data["route"] == "onto" and data["new_base"] == up
    assert [p["rewritten"] for p in data["patches"]] == [True, False, False, True]

    after = files_of(repo)
    # Unaffected patches keep their bytes and are not even rewritten (same inode, same mtime).
    for n in ("near.patch", "calm.patch"):
        assert after[n] == before[n]
        st = os.stat(repo.path / "patches" / n)
        assert (st.st_ino, st.st_mtime_ns) == (stat_before[n].st_ino, stat_before[n].st_mtime_ns)
    # The offset patch changed only in its diff: header and description are the same bytes.
    old_far, new_far = before["far.patch"].decode(), after["far.patch"].decode()
    assert old_far.split("---\n")[0] == new_far.split("---\n")[0]
    assert "@@ -27,7 +27,7 @@" in old_far and "@@ -30,7 +30,7 @@" in new_far
    # The series keeps every comment and blank line; the base line changed, and the patch
    # upstream took is marked with its change's commit and the upstream commit that brought it.
    old_lines, new_lines = before["series"].decode(), after["series"].decode()
    mark = re.search(
        r"^# upstream: known\.patch ([0-9a-f]{40}) in ([0-9a-f]{40})\n", new_lines, re.M
    )
    assert mark is not None, new_lines
    assert repo.git("log", "-1", "--format=%s", mark[2]).strip() == "d: the fix the fork carried"
    # The patch upstream took says so in its header (DEP-3), its diff the same bytes.
    old_known, new_known = before["known.patch"].decode(), after["known.patch"].decode()
    assert f"Applied-Upstream: commit:{mark[2]}\n" in new_known.split("---\n")[0]
    assert "Applied-Upstream" not in old_known
    assert old_known.split("\n---\n", 1)[1] == new_known.split("\n---\n", 1)[1]
    assert new_lines.replace(mark[0], "") == old_lines.replace(
        old_lines.split("# base: ")[1].split("\n")[0], f"{up} upstream"
    )
    # Linear history: the new base plus one commit per patch still applicable.
    assert linear_stack(repo, up) == ["Calm: speed c", "Near: fix a", "Far: log b"]
    assert names(repo) == ["far.patch", "near.patch", "calm.patch"]
    assert "b 30 far" in repo.read("b.py") and repo.read("b.py").startswith("# header 1")
    assert repo.git("status", "--porcelain") == "?? patches/\n"
    status = json.loads(repo.ps("status", "--json").stdout)
    assert status["differs"] == [] and status["stack_base"] == up

    # A second refresh finds nothing to do and writes nothing.
    again = files_of(repo)
    result = repo.ps("refresh", "--json")
    assert set(verdicts(result).values()) == {"unchanged", "upstream"}
    assert files_of(repo) == again


def test_the_three_routes_end_in_the_same_state(tmp_path) -> None:
    heads, series = {}, {}
    # Route 1: popped, then a fast-forward pull.
    r1 = make_fork(tmp_path / "r1" / "fork", conflict=False)
    r1.ps("pop", "--all")
    r1.git("merge", "-q", "--ff-only", "upstream")
    assert verdicts(r1.ps("refresh", "--json")) == EXPECTED
    assert names(r1) == [] and r1.head() == r1.git("rev-parse", "upstream").strip()
    # known.patch is in the new base: push leaves it out (as rebase drops a commit that
    # becomes empty) and says so; the patches above it apply.
    pushed = r1.ps("push", "--all")
    assert "already in the tree (not applied) 1 patch(es): known.patch" in pushed.stdout
    assert names(r1) == [n for n in PATCHES if n != "known.patch"]
    r1.ps("pop", "--all")
    r1.ps("push", "calm")
    heads["pull"], series["pull"] = r1.head(), files_of(r1)
    # Route 2: applied, --onto.
    r2 = make_fork(tmp_path / "r2" / "fork", conflict=False)
    r2.ps("refresh", "--onto", "upstream")
    heads["onto"], series["onto"] = r2.head(), files_of(r2)
    # Route 3a: applied, git pull (a merge).
    r3 = make_fork(tmp_path / "r3" / "fork", conflict=False)
    r3.git("merge", "-q", "--no-edit", "upstream")
    result = r3.ps("refresh", "--json")
    assert json.loads(result.stdout)["route"] == "merge"
    assert verdicts(result) == EXPECTED
    heads["merge"], series["merge"] = r3.head(), files_of(r3)
    # Route 3b: applied, git pull --rebase (git drops the commit already upstream).
    r4 = make_fork(tmp_path / "r4" / "fork", conflict=False)
    r4.git("rebase", "-q", "upstream")
    result = r4.ps("refresh", "--json")
    assert json.loads(result.stdout)["route"] == "rebased"
    heads["rebase"], series["rebase"] = r4.head(), files_of(r4)

    # Commits are deterministic, so every route gives the very same commits and files
    # (the base line's ref label aside: only --onto names one).
    assert len(set(heads.values())) == 1, heads
    for route in ("pull", "merge", "rebase"):
        for n in PATCHES:
            assert series[route][n] == series["onto"][n], (route, n)
        assert series[route]["series"] == series["onto"]["series"].replace(b" upstream\n", b"\n")
    assert r3.git("rev-list", "--merges", "HEAD") == ""


def test_conflict_stops_with_report_markers_and_continue(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    near_before = repo.read("patches/near.patch")
    culprit = repo.git("log", "-1", "--format=%h", "--grep=rework line 11", "upstream").strip()
    result = repo.ps("refresh", "--onto", "upstream", code=1)
    out = result.stdout
    assert "offset    far.patch" in out
    assert "conflict  near.patch" in out
    err = result.stderr
    assert "conflict in patch near.patch" in err and "file a.py" in err
    # The short report: upstream's change and the patch's, each a diff from what it expected.
    assert (
        "upstream made (the patch expected -> there now):\n      - a 11\n      + a 11 upstream\n"
        in err
    )
    assert f"upstream commits that changed these lines:\n      {culprit}" in err
    assert "a: rework line 11 next to the patch" in err
    assert "refresh --continue" in err and "refresh --abort" in err
    # The work tree: the stack up to far.patch, plus near.patch with readable markers.
    text = repo.read("a.py")
    assert "<<<<<<< new base " in text and "(upstream)\n" in text
    assert "||||||| old base " in text and ">>>>>>> near.patch\n" in text
    assert repo.git("log", "-1", "--format=%s") == "Far: log b\n"
    assert repo.git("diff", "--name-only") == "a.py\n"
    # Patch files are untouched while stopped.
    assert repo.read("patches/near.patch") == near_before

    # Every other command refuses, saying how to go on; status says so on its first line.
    for args in (("push",), ("pop", "--all"), ("refresh",), ("check",)):
        refused = repo.ps(*args, code=2)
        assert "a refresh is stopped" in refused.stderr, args
        assert "refresh --continue" in refused.stderr, args
    warned = repo.ps("status", code=None)
    assert warned.stdout.startswith("refresh stopped at a conflict in near.patch")
    # --continue refuses while markers remain, naming the file and line.
    refused = repo.ps("refresh", "--continue", code=2)
    assert "conflict markers remain: a.py:10" in refused.stderr

    # Resolve (keep both changes) without git add; continue.
    resolved = text.split("<<<<<<<")[0] + "a 10 near\na 11 upstream\n"
    resolved += text.split(">>>>>>> near.patch\n")[1]
    repo.write("a.py", resolved)
    result = repo.ps("refresh", "--continue", "--json")
    data = json.loads(result.stdout)
    by_name = {p["name"]: p for p in data["patches"]}
    assert by_name["near.patch"]["verdict"] == "merged" and by_name["near.patch"]["resolved"]
    assert by_name["far.patch"]["verdict"] == "offset"
    assert by_name["calm.patch"]["verdict"] == "unchanged"
    assert by_name["known.patch"]["verdict"] == "upstream"
    assert repo.read("a.py") == resolved
    new_near = repo.read("patches/near.patch")
    assert "-a 10\n+a 10 near\n a 11 upstream\n" in new_near
    assert new_near.split("---\n")[0] == near_before.split("---\n")[0]
    up = repo.git("rev-parse", "upstream").strip()
    assert linear_stack(repo, up) == ["Calm: speed c", "Near: fix a", "Far: log b"]
    assert repo.git("status", "--porcelain") == "?? patches/\n"
    assert not (repo.path / ".git" / "patchstack" / "refresh-state.json").exists()
    repo.ps("status")  # no longer refused
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []


def test_abort_restores_everything_byte_for_byte(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    # The user's own state: a staged edit edited again, an untracked file, a staged deletion.
    repo.write("docs/guide.md", "staged\n")
    repo.git("add", "docs/guide.md")
    repo.write("docs/guide.md", "staged, then edited again\n")
    repo.write("e-local.txt", "scratch\n")
    repo.git("rm", "-q", "--cached", "d.py")
    repo.write("d.py", repo.read("d.py") + "local tail\n")
    before = snapshot(repo)
    stopped = repo.ps("refresh", "--onto", "upstream", code=1)
    assert "conflict in patch near.patch" in stopped.stderr
    assert snapshot(repo)["head"] != before["head"]
    # The user starts resolving, then changes their mind.
    repo.write("a.py", "half resolved\n")
    repo.write("docs/guide.md", "edited while stopped\n")
    result = repo.ps("refresh", "--abort")
    assert "refresh aborted" in result.stdout
    after = snapshot(repo)
    assert after["head"] == before["head"]
    assert after["status"] == before["status"]
    assert after["files"] == before["files"]
    assert after["refs"] == before["refs"]
    assert repo.git("diff", "--cached", "--name-status") == "D\td.py\nM\tdocs/guide.md\n"
    assert repo.git("show", ":docs/guide.md") == "staged\n"
    assert not (repo.path / ".git" / "patchstack" / "refresh-state.json").exists()
    repo.ps("refresh", "--abort", code=2)  # nothing to abort any more


def test_uncommitted_edit_in_a_file_the_move_changes_is_refused(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    repo.write("docs/notes.md", "mine\n")  # upstream changes this file too
    before = snapshot(repo)
    result = repo.ps("refresh", "--onto", "upstream", code=2)
    assert "uncommitted edits in files this command would change: docs/notes.md" in result.stderr
    assert snapshot(repo) == before


def test_unrelated_edit_is_carried_across_a_refresh(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    repo.write("README.local", "untracked\n")
    replace_line(repo, "c.py", "c 30\n", "c 30 local edit\n")
    repo.ps("pop", "--all", code=2)  # c.py has an edit and calm.patch would change it
    repo.ps("refresh", "--onto", "upstream")
    assert "c 30 local edit" in repo.read("c.py") and "c 5 calm" in repo.read("c.py")
    assert repo.read("README.local") == "untracked\n"


def test_drop_merged_removes_the_entry_keeps_the_file_and_quilt_agrees(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    repo.ps("pop", "--all")
    repo.git("merge", "-q", "--ff-only", "upstream")
    result = repo.ps("refresh", "--drop-merged")
    assert "already" not in result.stdout and "dropped from the series" in result.stdout
    series = repo.read("patches/series")
    assert "known.patch" not in series and "calm.patch # optimization, nvidia\n" in series
    assert (repo.path / "patches" / "known.patch").exists()
    repo.ps("push", "--all")
    expected = {p: repo.read(p) for p in ("a.py", "b.py", "c.py", "d.py")}
    if shutil.which("quilt") is None:
        if os.environ.get("CI"):
            pytest.fail("quilt is not installed (.ci/run installs it)")
        pytest.skip("quilt is not installed")
    up = repo.git("rev-parse", "upstream").strip()
    assert quilt_applies(repo, up, tmp_path) == expected


def test_fold_edits_into_the_top_patch(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    calm_before = repo.read("patches/calm.patch")
    replace_line(repo, "d.py", "d 22\n", "d 22 more\n")  # a file of known.patch, the top
    replace_line(repo, "docs/notes.md", "upstream notes\n", "mine\n")  # in no patch
    result = repo.ps("refresh")
    assert "folded d.py into known.patch" in result.stdout
    assert "+d 22 more" in repo.read("patches/known.patch")
    assert repo.read("patches/calm.patch") == calm_before
    assert repo.git("status", "--porcelain") == " M docs/notes.md\n?? patches/\n"
    assert "d 22 more" in repo.git("show", "HEAD:d.py")
    status = json.loads(repo.ps("status", "--json").stdout)
    assert status["differs"] == [] and status["edits_in_patches"] == {}


def test_fold_into_a_named_patch_reapplies_the_ones_above(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    replace_line(repo, "a.py", "a 30\n", "a 30 also\n")
    head_tree = repo.tree()
    result = repo.ps("refresh", "--patch", "near", "--json")
    data = json.loads(result.stdout)
    assert data["fold_into"] == "near.patch" and data["folded"] == ["a.py"]
    assert "+a 30 also" in repo.read("patches/near.patch")
    assert repo.git("show", "HEAD~2:a.py").count("also") == 1  # in near.patch's commit
    assert names(repo) == PATCHES
    assert repo.git("status", "--porcelain") == "?? patches/\n"
    assert repo.tree() != head_tree and "a 30 also" in repo.read("a.py")
    # The series still rebuilds to the same tree from its files.
    tree = repo.tree()
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    assert repo.tree() == tree


def test_popped_series_two_conflicts_continue_twice(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x"), "y.py": numbered(30, "y")})
    repo.git("branch", "upstream")
    repo.ps("init")
    replace_line(repo, "x.py", "x 5\n", "x 5 mine\n")
    repo.ps("new", "one", "--tag", "essential", "x.py")
    replace_line(repo, "y.py", "y 5\n", "y 5 mine\n")
    repo.ps("new", "two", "--tag", "diagnostic", "-m", "Two\n\nKeeps its description.", "y.py")
    repo.ps("pop", "--all")
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "x.py", "x 5\n", "x 5 theirs\n")
    replace_line(repo, "y.py", "y 5\n", "y 5 theirs\n")
    repo.git("commit", "-qam", "upstream rewrites line 5 everywhere")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "upstream")
    up = repo.head()
    before = snapshot(repo)

    first = repo.ps("refresh", code=1)
    assert "conflict in patch one.patch" in first.stderr
    assert "upstream commits that changed these lines:" in first.stderr
    assert "upstream rewrites line 5 everywhere" in first.stderr
    text = repo.read("x.py")
    replace_line(repo, "x.py", "<<<<<<<", "")  # a half-hearted edit: markers remain
    repo.ps("refresh", "--continue", code=2)
    repo.write("x.py", text.split("<<<<<<<")[0] + "x 5 both\n" + text.split("one.patch\n")[1])
    second = repo.ps("refresh", "--continue", code=1)
    assert "conflict in patch two.patch" in second.stderr
    assert repo.git("log", "-1", "--format=%s") == "one\n"
    text = repo.read("y.py")
    repo.write("y.py", text.split("<<<<<<<")[0] + "y 5 both\n" + text.split("two.patch\n")[1])
    done = repo.ps("refresh", "--continue", "--json")
    assert [(p["verdict"], p["resolved"]) for p in json.loads(done.stdout)["patches"]] == [
        ("merged", True),
        ("merged", True),
    ]
    # The series was popped before, so it is popped after; the files carry the resolutions.
    assert repo.head() == up and names(repo) == []
    assert "+x 5 both" in repo.read("patches/one.patch")
    assert "Keeps its description." in repo.read("patches/two.patch")
    assert repo.read("x.py") == numbered(30, "x").replace("x 5\n", "x 5 theirs\n")
    repo.ps("push", "--all")
    assert "x 5 both" in repo.read("x.py") and "y 5 both" in repo.read("y.py")
    assert snapshot(repo)["head"] != before["head"]


def test_abort_after_a_popped_pull_returns_to_the_new_head(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    repo.ps("pop", "--all")
    repo.git("merge", "-q", "--ff-only", "upstream")
    before = snapshot(repo)
    repo.ps("refresh", code=1)
    assert repo.head() != before["head"]
    repo.ps("refresh", "--abort")
    assert snapshot(repo) == before


def test_edits_in_a_lower_patch_file_need_patch_name(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    replace_line(repo, "b.py", "b 2\n", "b 2 edited\n")
    before = snapshot(repo)
    result = repo.ps("refresh", code=2)
    assert "the uncommitted edits in b.py change lines of 'far.patch', not of 'known.patch'" in (
        result.stderr
    )
    assert "refresh --patch far.patch" in result.stderr
    assert snapshot(repo) == before
    repo.ps("refresh", "--patch", "far")
    assert "+b 2 edited" in repo.read("patches/far.patch")
    assert names(repo) == PATCHES
