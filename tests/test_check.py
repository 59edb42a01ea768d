"""check (a dry run that touches nothing) and the upstream drift that status reports."""

from __future__ import annotations

import json
import os

from .conftest import Repo, make_repo, numbered, replace_line
from .refresh_fixtures import make_fork, snapshot


def untouched(repo: Repo) -> dict:
    """Everything check must leave alone, including the index file's mtime and .git files."""
    snap = snapshot(repo)
    git_dir = repo.path / ".git"
    snap["index_mtime"] = os.stat(git_dir / "index").st_mtime_ns
    snap["index_bytes"] = (git_dir / "index").read_bytes()
    snap["git_files"] = sorted(
        str(p.relative_to(git_dir))
        for p in git_dir.rglob("*")
        if p.is_file() and "objects" not in p.parts
    )
    snap["cache"] = (
        (git_dir / "patchstack" / "cache").read_bytes()
        if (git_dir / "patchstack" / "cache").exists()
        else None
    )
    return snap


def test_check_reports_verdicts_and_conflict_and_touches_nothing(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    repo.write("docs/notes.md", "an uncommitted edit\n")
    before = untouched(repo)
    culprit = repo.git("log", "-1", "--format=%H", "--grep=rework line 11", "upstream").strip()

    result = repo.ps("check", "--onto", "upstream", "--json", code=1)
    data = json.loads(result.stdout)
    assert not data["ok"]
    assert {p["name"]: p["verdict"] for p in data["patches"]} == {
        "far.patch": "offset",
        "near.patch": "conflict",
        "calm.patch": "unchanged",
        "known.patch": "upstream",
    }
    [conflict] = data["conflicts"]
    assert conflict["patch"] == "near.patch" and conflict["files"] == ["a.py"]
    [hunk] = conflict["hunks"]
    assert hunk["expected"] == ["a 10", "a 11"] and hunk["now"] == ["a 10", "a 11 upstream"]
    assert hunk["upstream_commits"] == [
        {"commit": culprit, "subject": "a: rework line 11 next to the patch"}
    ]
    assert untouched(repo) == before

    text = repo.ps("check", "--onto", "upstream", code=1).stdout
    assert "  conflict  near.patch" in text
    assert text.splitlines()[-1] == "4 patches: 1 unchanged, 1 offset, 1 conflict, 1 upstream"
    assert f"{culprit[:10]} a: rework line 11 next to the patch" in text
    assert untouched(repo) == before


def test_check_selectors_and_default_target(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    # Without an upstream branch the target is HEAD below the stack: everything applies.
    result = json.loads(repo.ps("check", "--json").stdout)
    assert result["target_name"].startswith("HEAD") and result["ok"]
    assert {p["verdict"] for p in result["patches"]} == {"unchanged"}
    # With @{upstream} set, that is the default target.
    repo.git("branch", "--set-upstream-to=upstream")
    before = untouched(repo)
    result = json.loads(repo.ps("check", "--json", code=1).stdout)
    assert result["target_name"] == "upstream"
    result = json.loads(repo.ps("check", "--except", "essential", "--json").stdout)
    assert result["ok"] and [p["name"] for p in result["patches"]] == ["far.patch", "calm.patch"]
    result = json.loads(repo.ps("check", "--only", "essential", "--json", code=1).stdout)
    assert [p["verdict"] for p in result["patches"]] == ["conflict", "upstream"]
    assert untouched(repo) == before
    repo.ps("check", "--only", "nonsense", code=2)


def test_status_names_the_upstream_commit_that_collides(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=True)
    repo.ps("pop", "--all")
    repo.git("merge", "-q", "--ff-only", "upstream")  # a pull that moved the base unnoticed
    culprit = repo.git("log", "-1", "--format=%H", "--grep=rework line 11").strip()
    text = repo.ps("status").stdout
    assert "upstream moved: 4 commits since the series base, to HEAD" in text
    assert f"{culprit[:10]} a: rework line 11 next to the patch  (a.py: near.patch)" in text
    assert "docs and e.py" not in text  # touches no file of the series...
    assert "docs and e.py" in repo.ps("status", "--verbose").stdout  # ...listed with --verbose
    assert text.endswith("next: 'patchstack check', then 'patchstack refresh'\n")
    drift = json.loads(repo.ps("status", "--json").stdout)["drift"]
    assert drift["commits"] == 4
    touching = {c["subject"]: (c["files"], c["patches"]) for c in drift["touching"]}
    assert touching == {
        "b: add a header far from the patch": (["b.py"], ["far.patch"]),
        "a: rework line 11 next to the patch": (["a.py"], ["near.patch"]),
        "d: the fix the fork carried": (["d.py"], ["known.patch"]),
    }


def test_status_drift_against_the_upstream_ref_and_after_refresh(tmp_path) -> None:
    repo = make_fork(tmp_path / "fork", conflict=False)
    repo.git("branch", "--set-upstream-to=upstream")
    drift = json.loads(repo.ps("status", "--json").stdout)["drift"]
    assert drift["target_name"] == "upstream" and drift["commits"] == 3
    repo.ps("refresh", "--onto", "upstream")
    drift = json.loads(repo.ps("status", "--json").stdout)["drift"]
    assert drift["commits"] == 0 and drift["touching"] == []
    assert "upstream moved" not in repo.ps("status").stdout


def test_check_without_an_upstream_says_it_checked_head_not_upstream(tmp_path) -> None:
    """No --onto and no @{upstream}: 'all patches apply' against HEAD is true by construction;
    the check says what it checked and how to name upstream, in text and JSON."""
    repo = make_repo(tmp_path / "fork", {"x.py": numbered(30, "x")})
    repo.ps("init")
    replace_line(repo, "x.py", "x 10\n", "x 10 ess\n")
    repo.ps("new", "ess", "--tag", "essential")
    result = repo.ps("check")
    assert "check against HEAD (below the stack)" in result.stdout
    assert "this branch has no @{upstream}, and no --onto was given" in result.stderr
    assert "'patchstack check --onto origin/main'" in result.stderr
    warnings = json.loads(repo.ps("check", "--json").stdout)["warnings"]
    assert any("checked against HEAD, not against upstream" in w for w in warnings)
    # Named: no such note.
    assert "no upstream" not in repo.ps("check", "--onto", "HEAD~1").stderr


def test_a_hunks_there_now_says_upstream_made_it_only_where_traced_there(tmp_path) -> None:
    """The short report titles what is there now "upstream made" only for a primary conflict
    whose lines were traced to upstream commits; a knock-on's lines (its root missing, here
    'a 10 p1' -> 'a 10 up' is p1's absence and upstream's change at once) get the neutral
    title, though its hunk names upstream's commit."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(30, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 p1\n")
    repo.ps("new", "p1", "--tag", "essential")
    replace_line(repo, "a.py", "a 10 p1\n", "a 10 p1 p2\n")
    repo.ps("new", "p2", "--tag", "essential")
    repo.git("branch", "up", "HEAD~2")
    repo.git("switch", "-q", "up")
    replace_line(repo, "a.py", "a 10\n", "a 10 up\n")
    culprit = repo.commit_all("upstream edits line 10")
    repo.git("switch", "-q", "main")
    primary = repo.ps("check", "--onto", "up", "--patch", "p1.patch", code=1).stdout
    assert "upstream made (the patch expected -> there now):\n      - a 10\n      + a 10 up\n" in (
        primary
    )
    knock_on = repo.ps("check", "--onto", "up", "--patch", "p2.patch", code=1).stdout
    assert "a knock-on: it conflicts only because p1.patch" in knock_on
    assert (
        "there now (the patch expected -> what the tree holds):\n      - a 10 p1\n"
        "      + a 10 up\n" in knock_on
    )
    assert "upstream made" not in knock_on and culprit[:10] in knock_on


def test_check_relabels_markers_only_where_a_record_reads_them(tmp_path, monkeypatch) -> None:
    """check's report is the conflict regions' lines, which no marker label changes: its
    merges keep git's labels (no blob rewritten, no tree edited) unless a recorded
    resolution, which reads the markers, may settle the conflict; the report is the same."""
    import patchstack.engine.merging as merging

    repo = make_fork(tmp_path / "fork", conflict=True)
    relabelled: list[bytes] = []
    real = merging.relabel

    def counted(data: bytes, names, base_label: str) -> bytes:
        relabelled.append(data)
        return real(data, names, base_label)

    monkeypatch.setattr(merging, "relabel", counted)
    plain = repo.ps("check", "--onto", "upstream", "--json", code=1).stdout
    text = repo.ps("check", "--onto", "upstream", code=1).stdout
    assert relabelled == []
    [hunk] = json.loads(plain)["conflicts"][0]["hunks"]
    assert hunk["expected"] == ["a 10", "a 11"] and hunk["now"] == ["a 10", "a 11 upstream"]

    (repo.path / "patches" / "resolutions").mkdir()  # (empty: nothing settles, all the same)
    assert repo.ps("check", "--onto", "upstream", "--json", code=1).stdout == plain
    assert repo.ps("check", "--onto", "upstream", code=1).stdout == text
    assert relabelled and all(b"<<<<<<< " in r for r in relabelled)
