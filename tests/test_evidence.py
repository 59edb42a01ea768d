"""Upstream evidence: a patch the new base holds names the upstream commit that brought it
(check, refresh, the series' ``# upstream:`` mark, ``status``, ``series``, and the history of a
patch ``--drop-merged`` took out); a conflict whose upstream side already has the patch's lines
is said to be superseded; a patch that changes nothing only because an unselected patch is left
out is a ``no-op`` of the selection, not upstream's."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line
from .refresh_fixtures import make_fork, relanded_fork
from .test_defer import drift

TAKEN = "d: the fix the fork carried"  # the upstream commit of refresh_fixtures that takes known


def by_name(data: dict) -> dict[str, dict]:
    return {p["name"]: p for p in data["patches"]}


def test_check_and_refresh_name_the_upstream_commit_that_took_the_patch(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    taken = repo.git("log", "--format=%H", f"--grep={TAKEN}", "upstream").split()[0]

    checked = by_name(json.loads(repo.ps("check", "--onto", "upstream", "--json").stdout))
    assert checked["known.patch"]["verdict"] == "upstream"
    assert checked["known.patch"]["evidence"] == {"commit": taken, "subject": TAKEN}
    assert checked["far.patch"]["evidence"] is None
    text = repo.ps("check", "--onto", "upstream").stdout
    assert f"upstream  known.patch  (in {taken[:10]} {TAKEN})" in text

    refreshed = by_name(json.loads(repo.ps("refresh", "--onto", "upstream", "--json").stdout))
    assert refreshed["known.patch"]["evidence"] == {"commit": taken, "subject": TAKEN}
    assert "# upstream: known.patch " in repo.read("patches/series")
    assert f" in {taken}\n" in repo.read("patches/series")
    status = repo.ps("status").stdout
    assert f"- known.patch [essential]  (the base holds it: upstream took it in {taken[:10]})" in (
        status
    )
    listed = repo.ps("series").stdout
    assert f"- known.patch  [essential]  (the base holds it: upstream took it in {taken[:10]})" in (
        listed
    )
    mark = by_name(json.loads(repo.ps("series", "--json").stdout))["known.patch"]["mark"]
    assert mark["kind"] == "upstream" and mark["evidence"] == taken
    assert by_name(json.loads(repo.ps("status", "--json").stdout))["known.patch"]["mark"] == mark

    # A refresh that finds the base where it is keeps what the first one found.
    again = by_name(json.loads(repo.ps("refresh", "--json").stdout))
    assert again["known.patch"]["evidence"] == {"commit": taken, "subject": TAKEN}

    # --drop-merged takes it out and its history says why.
    dropped = repo.ps("refresh", "--drop-merged").stdout
    assert "dropped from the series (file kept)" in dropped
    assert "# upstream: known.patch" not in repo.read("patches/series")
    history = repo.ps("log", "known.patch").stdout
    assert f"dropped (--drop-merged): upstream took it in {taken[:10]} {TAKEN}" in history
    data = json.loads(repo.ps("log", "known.patch", "--json").stdout)
    assert any("upstream took it" in c for e in data["history"] for c in e["changes"])


def superseded_fork(tmp_path: Path) -> tuple[Repo, str]:
    """p1 adds ``guard()`` after a.py's line 10; upstream adds the same call its own way,
    nested under a condition: a conflict whose upstream side holds the patch's line."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10\nguard()\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    replace_line(repo, "a.py", "a 30\n", "a 30 mine\n")
    repo.ps("new", "p2", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10\nif ok:\n    guard()\n")
    repo.commit_all("upstream guards a 10 its own way")
    up = repo.head()
    replace_line(repo, "a.py", "a 30\n", "a 30 upstream\n")
    repo.commit_all("upstream reworks line 30")
    repo.git("checkout", "-q", "main")
    return repo, up


def test_a_conflict_upstream_already_holds_is_said_to_be_superseded(tmp_path) -> None:
    repo, up = superseded_fork(tmp_path)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    found = {c["patch"]: c for c in data["conflicts"]}
    assert found["p1.patch"]["superseded_by"] == {
        "commit": up,
        "subject": "upstream guards a 10 its own way",
    }
    assert found["p2.patch"]["superseded_by"] is None  # upstream's line 30 is not the patch's
    text = repo.ps("check", "--onto", "up", code=1).stdout
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if "conflict  p1.patch" in ln)
    assert lines[at + 1].strip() == (
        f"superseded by {up[:10]}? upstream's side already has every line it adds"
    )
    assert not any("superseded" in ln for ln in lines[at + 2 :])


def test_a_patch_that_only_reverts_an_unselected_one_is_a_no_op_not_upstream(tmp_path) -> None:
    """diag adds a debug line; quiet (essential) takes it out again. With --only essential,
    quiet changes nothing on the base: the selection's doing, not upstream's."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5\ndebug()\n")
    repo.ps("new", "diag", "--tag", "diagnostic", "a.py")
    replace_line(repo, "a.py", "debug()\n", "")
    repo.ps("new", "quiet", "--tag", "essential", "a.py")
    data = by_name(json.loads(repo.ps("check", "--only", "essential", "--json").stdout))
    assert data["quiet.patch"]["verdict"] == "no-op"
    assert data["quiet.patch"]["evidence"] is None
    assert "diag.patch" in data["quiet.patch"]["note"]  # the patch whose absence makes it one
    text = repo.ps("check", "--only", "essential").stdout
    assert "no-op     quiet.patch  (changes nothing without diag.patch" in text
    assert "upstream" not in text.split("\n", 1)[1]


def test_status_and_series_show_deferred_patches(tmp_path) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    status = repo.ps("status").stdout
    assert "- p1.patch [essential]  (deferred: conflicts on the base)\n" in status
    # one hint for every deferred patch, not one a patch (kernel-timers: 19 of them)
    assert status.count("brings a deferred patch back") == 1
    assert "next: 'patchstack push p1.patch' brings a deferred patch back" in status
    assert "- p2.patch [optimization]  (deferred: a knock-on, waiting for p1.patch)" in status
    listed = repo.ps("series").stdout
    assert "- p2.patch  [optimization]  (deferred: a knock-on, waiting for p1.patch)" in listed
    assert "- p1.patch  [essential]  (deferred: conflicts on the base)\n" in listed
    assert listed.count("brings a deferred patch back") == 1
    assert "'patchstack push NAME' brings a deferred patch back (first: p1.patch)" in listed


def test_a_deferred_patch_s_conflict_is_shown_again_on_demand_and_status_says_how_back(
    tmp_path,
) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    plain = repo.ps("check").stdout
    assert "conflict in patch" not in plain
    assert plain.splitlines()[-1] == (
        "3 patches: 1 unchanged, 2 deferred: the others apply ('check --patch NAME' shows a"
        " deferred one's conflict now)"
    )
    shown = repo.ps("check", "--patch", "p1").stdout
    assert "deferred p1.patch: its conflict on up now" in shown
    assert "conflict in patch p1.patch" in shown and "+ a 10 upstream" in shown
    data = json.loads(repo.ps("check", "--patch", "p1", "--json").stdout)
    assert data["ok"] is True and data["conflicts"] == []
    assert [c["patch"] for c in data["deferred"]] == ["p1.patch"]
    assert repo.ps("status").stdout.splitlines()[-1] == (
        "next: 'patchstack push p1.patch' brings a deferred patch back (1 deferred, 1 knock-on(s)"
        " waiting)"
    )


def test_evidence_after_a_revert_and_re_land_and_later_edits_names_the_re_land(tmp_path) -> None:
    """Upstream lands p1's change, reverts it, lands it again, then edits three other lines of
    the file: the base holds the change for good from the re-land on, so the re-land brought
    it. (A search that galloped back over the revert, from a holding commit to another, then
    bisected between the old base and that one, named the first landing, which the revert
    undid.)"""
    later = [
        ("a.py", f"a {n}\n", f"a {n} later\n", f"upstream edits line {n}") for n in (30, 31, 32)
    ]
    repo, _base, landed, reland = relanded_fork(
        tmp_path / "fork", {"a.py": numbered(40, "a")}, after=later
    )
    # git: the re-land's parent lacks the change, and every first-parent commit since has it
    since = repo.git("rev-list", "--first-parent", f"{reland}^..up").split()
    assert all("a 10 fixed" in repo.git("show", f"{c}:a.py") for c in since)
    assert "a 10 fixed" not in repo.git("show", f"{reland}^:a.py")
    assert "a 10 fixed" in repo.git("show", f"{landed}:a.py")
    data = json.loads(repo.ps("check", "--onto", "up", "--json").stdout)
    (p1,) = data["patches"]
    assert p1["verdict"] == "upstream"
    assert p1["evidence"]["commit"] == reland
    (refreshed,) = json.loads(repo.ps("refresh", "--onto", "up", "--json").stdout)["patches"]
    assert refreshed["evidence"]["commit"] == reland
    assert "# upstream: p1" in repo.read("patches/series")
    assert f" in {reland}\n" in repo.read("patches/series")


def test_a_line_upstream_had_and_removed_is_no_no_op_of_the_patch_that_made_it(tmp_path) -> None:
    """p1 adds ``fn`` and edits b.py's line 5 (which upstream edits too: p1 conflicts, left
    out); p2 removes a line of ``fn`` and edits a.py. Upstream takes ``fn`` (up1), removes that
    line (up2) and makes p2's a.py edit (up3): p2 is upstream's, in up3. The line is in neither
    the old base nor up3's parent, but up1 had it: an upstream commit removed it, so p2 is not
    a no-op for want of p1. (Seed 9200010 of the label soak.)"""
    fn = "def fn():\n    one = 1\n    two = 2\n    three = 3\n"
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "b.py", "b 5\n", "b 5 mine\n")
    repo.write("b.py", repo.read("b.py") + fn)
    repo.ps("new", "p1", "--tag", "essential", "b.py")
    replace_line(repo, "b.py", "    two = 2\n", "")
    replace_line(repo, "a.py", "a 3\n", "a 3 p2\n")
    repo.ps("new", "p2", "--tag", "essential", "a.py", "b.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.py", "b 5\n", "b 5 upstream\n")
    repo.commit_all("upstream edits line 5")
    repo.write("b.py", repo.read("b.py") + fn)
    had = repo.commit_all("upstream takes fn")
    replace_line(repo, "b.py", "    two = 2\n", "")
    repo.commit_all("upstream removes two")
    replace_line(repo, "a.py", "a 3\n", "a 3 p2\n")
    took = repo.commit_all("upstream edits a 3 as p2 does")
    repo.git("checkout", "-q", "main")
    assert "    two = 2" in repo.git("show", f"{had}:b.py")
    assert "    two = 2" not in repo.git("show", f"{base}:b.py") + repo.git("show", f"{took}^:b.py")
    data = by_name(json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout))
    assert data["p1.patch"]["verdict"] == "conflict"
    assert data["p2.patch"]["verdict"] == "upstream", data["p2.patch"]
    assert data["p2.patch"]["evidence"]["commit"] == took
