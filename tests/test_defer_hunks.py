"""Deferral keeps every hunk: a later patch whose change, placed without a deferred patch, is
not its own change any more (it removes or edits lines the deferred patch makes) is not
rewritten without them. It is deferred with that patch, as a knock-on, and comes back with
it; bringing them back gives what ``git rebase`` gives with the patch picked again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, built_once, make_repo, names, numbered, replace_line

RESOLVED = numbered(20, "c").replace("c 3\n", "c 3 upstream and mine\n")


@built_once
def debug_drift(tmp_path: Path, removes: bool = True) -> Repo:
    """p1 adds a DEBUG line to b.txt and changes a.c line 3, which upstream changes too
    (primary); p2 removes that DEBUG line (``removes``) and changes b.txt line 30."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "c"), "b.txt": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "c 3\n", "c 3 mine\n")
    replace_line(repo, "b.txt", "b 5\n", "b 5\nDEBUG\n")
    repo.ps("new", "p1", "--tag", "diagnostic")
    if removes:
        replace_line(repo, "b.txt", "b 5\nDEBUG\n", "b 5\n")
    replace_line(repo, "b.txt", "b 30\n", "b 30 mine\n")
    repo.ps("new", "p2", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "c 3\n", "c 3 upstream\n")
    repo.commit_all("upstream reworks line 3")
    repo.git("checkout", "-q", "main")
    return repo


def picked_again(repo: Repo, tmp: Path) -> str:
    """git's tree: up, p1 cherry-picked (its conflict resolved to RESOLVED), then p2."""
    clone = Repo(tmp)
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(tmp)], check=True)
    clone.git("checkout", "-q", "-B", "work", repo.git("rev-parse", "up").strip())
    p1, p2 = repo.git("rev-list", "--reverse", "-2", "main").split()
    proc = subprocess.run(["git", "cherry-pick", p1], cwd=tmp, capture_output=True)
    assert proc.returncode != 0  # a.c conflicts
    clone.write("a.c", RESOLVED)
    clone.git("add", "a.c")
    clone.git("-c", "core.editor=true", "cherry-pick", "--continue")
    clone.git("cherry-pick", p2)
    return clone.tree()


def bring_p1_back(repo: Repo) -> None:
    stopped = repo.ps("push", "p1", code=1)
    assert "conflict in patch p1.patch" in stopped.stderr
    repo.write("a.c", RESOLVED)
    repo.ps("refresh", "--continue")


def test_defer_conflicts_defers_the_patch_that_removes_the_deferred_patch_s_line(
    tmp_path,
) -> None:
    repo = debug_drift(tmp_path)
    want = picked_again(repo, tmp_path / "git")
    p2 = repo.read("patches/p2.patch")
    result = repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "+ 1 knock-on(s) waiting for it: p2.patch" in result.stdout
    assert "p2.patch: placed without p1.patch, its change to b.txt" in result.stdout
    series = repo.read("patches/series")
    assert "# deferred: p2.patch " in series and " after p1.patch\n" in series
    assert repo.read("patches/p2.patch") == p2  # never rewritten without the removal
    assert "-DEBUG" in p2
    assert "DEBUG" not in repo.read("b.txt")
    data = json.loads(repo.ps("check", "--onto", "up", "--json").stdout)
    assert {p["name"]: p["verdict"] for p in data["patches"]} == {
        "p1.patch": "deferred",
        "p2.patch": "deferred",
    }
    bring_p1_back(repo)
    assert names(repo) == ["p1.patch", "p2.patch"]
    assert "# deferred:" not in repo.read("patches/series")
    assert "DEBUG" not in repo.read("b.txt") and "b 30 mine" in repo.read("b.txt")
    assert repo.tree() == want
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    assert repo.tree() == want


def test_skip_at_the_stop_defers_it_too_and_says_why(tmp_path) -> None:
    repo = debug_drift(tmp_path)
    want = picked_again(repo, tmp_path / "git")
    repo.ps("refresh", "--onto", "up", code=1)
    result = repo.ps("refresh", "--skip")
    assert "+ 1 knock-on(s) waiting for it: p2.patch" in result.stdout
    assert "p2.patch: placed without p1.patch, its change to b.txt" in result.stdout
    assert " after p1.patch\n" in repo.read("patches/series")
    assert names(repo) == []
    bring_p1_back(repo)
    assert repo.tree() == want


def test_check_reports_what_refresh_does(tmp_path) -> None:
    repo = debug_drift(tmp_path)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    kinds = {c["patch"]: (c["kind"], c["root"]) for c in data["conflicts"]}
    assert kinds == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
    out = repo.ps("check", "--onto", "up", code=1).stdout
    assert "+ 1 knock-on(s) waiting for it: p2.patch" in out
    assert "p2.patch: placed without p1.patch, its change to b.txt" in out
    refreshed = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    assert [(c["patch"], c["kind"], c["root"], c["note"]) for c in refreshed["deferred"]] == [
        (c["patch"], c["kind"], c["root"], c["note"]) for c in data["conflicts"]
    ]


def test_a_patch_that_is_its_own_change_without_it_is_placed(tmp_path) -> None:
    """p2 only changes b.txt line 30: placed without p1, as git rebase --skip places it."""
    repo = debug_drift(tmp_path, removes=False)
    result = repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert "knock-on" not in result.stdout
    assert names(repo) == ["p2.patch"]
    assert "b 30 mine" in repo.read("b.txt") and "DEBUG" not in repo.read("b.txt")


def test_a_hunk_upstream_took_is_not_taken_for_a_lost_one(tmp_path) -> None:
    """Upstream made p2's change itself: p2 is its own change without p1 on the old base,
    so it is not deferred with p1 (upstream has it)."""
    repo = debug_drift(tmp_path, removes=False)
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.txt", "b 30\n", "b 30 mine\n")
    repo.commit_all("upstream takes p2")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    series = repo.read("patches/series")
    assert "# deferred: p1.patch " in series and "# deferred: p2.patch" not in series


def test_the_knock_on_brought_back_alone_keeps_its_hunk(tmp_path) -> None:
    """``push p2`` while p1 stays deferred: p2 would lose its removal of p1's line; it stays
    deferred with p1, its file untouched, and comes back with it."""
    repo = debug_drift(tmp_path)
    want = picked_again(repo, tmp_path / "git")
    p2 = repo.read("patches/p2.patch")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    result = repo.ps("push", "p2", code=1)  # refused, naming its root: nothing changed
    assert "placed without p1.patch, its change to b.txt" in result.stderr
    assert "'patchstack push p1.patch' first" in result.stderr
    assert repo.read("patches/p2.patch") == p2
    assert " after p1.patch\n" in repo.read("patches/series")
    bring_p1_back(repo)
    assert repo.tree() == want


def test_skipping_the_root_again_keeps_the_knock_on_s_hunk(tmp_path) -> None:
    """``push p1`` stops at its conflict; ``--skip`` leaves it out again: p2, which came back
    with it, is not placed without it either."""
    repo = debug_drift(tmp_path)
    want = picked_again(repo, tmp_path / "git")
    p2 = repo.read("patches/p2.patch")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    repo.ps("push", "p1", code=1)
    result = repo.ps("refresh", "--skip")
    assert "p2.patch: placed without p1.patch, its change to b.txt" in result.stdout
    assert repo.read("patches/p2.patch") == p2
    assert " after p1.patch\n" in repo.read("patches/series")
    bring_p1_back(repo)
    assert repo.tree() == want


def test_a_held_patch_that_also_conflicts_on_its_own_is_primary(tmp_path) -> None:
    """p2 needs p1's DEBUG line (it removes it), and upstream also edits b.txt line 30, which
    p2 edits: with p1 applied, p2 still conflicts. By the one definition (a knock-on of P
    applies once P is applied) it is primary, for check, refresh and push NAME alike; it still
    waits for p1 (deferred after it) and its report shows its own conflict, upstream's."""
    repo = debug_drift(tmp_path)
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.txt", "b 30\n", "b 30 upstream\n")
    up30 = repo.commit_all("upstream edits line 30")
    repo.git("checkout", "-q", "main")
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    found = {c["patch"]: c for c in data["conflicts"]}
    assert (found["p1.patch"]["kind"], found["p1.patch"]["root"]) == ("primary", None)
    p2 = found["p2.patch"]
    assert (p2["kind"], p2["root"], p2["held"]) == ("primary", "p1.patch", True)
    assert [(h["path"], h["now"], h["wanted"]) for h in p2["hunks"]] == [
        ("b.txt", ["b 30 upstream"], ["b 30 mine"])
    ]
    assert [u["commit"] for u in p2["hunks"][0]["upstream_commits"]] == [up30]
    out = repo.ps("check", "--onto", "up", code=1).stdout
    assert "conflicts: 2 primary" in out and "knock-on" not in out
    assert "it waits for p1.patch too: placed without p1.patch" in out
    refreshed = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    assert [(c["patch"], c["kind"], c["root"]) for c in refreshed["deferred"]] == [
        ("p1.patch", "primary", None),
        ("p2.patch", "primary", "p1.patch"),
    ]
    assert " after p1.patch primary\n" in repo.read("patches/series")  # it comes back with p1
    result = repo.ps("push", "p2", code=1)  # refused while p1 stays deferred: nothing changed
    assert "it waits for p1.patch, still deferred, and with it applied still conflicts" in (
        result.stderr
    )
    assert "primary: with p1.patch applied it still conflicts" in result.stderr
    assert "'patchstack push p1.patch' first" in result.stderr
    bring_p1_back_to(repo, "p2.patch")


def test_the_held_patch_s_proof_reuses_its_root_s_conflict_merge(tmp_path, monkeypatch) -> None:
    """p2 would be placed where p1 conflicted: its proof takes p1's merge from the replay and
    makes one merge of its own (p2 onto p1 as p1 has it); the plain path, which merges p1
    again, says the same."""
    from patchstack.engine import triage

    repo = debug_drift(tmp_path)
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.txt", "b 30\n", "b 30 upstream\n")
    repo.commit_all("upstream edits line 30")
    repo.git("checkout", "-q", "main")
    made: list[str] = []
    plain_place = triage.place_fast

    def counted(git, before, tree, after, labels, *rest):  # type: ignore[no-untyped-def]
        made.append(labels[1])
        return plain_place(git, before, tree, after, labels, *rest)

    monkeypatch.setattr(triage, "place_fast", counted)
    fast = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    assert made == ["p2.patch"]
    monkeypatch.setenv("PATCHSTACK_NO_FAST_PATH", "1")
    made.clear()
    plain = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    assert made == ["p1.patch", "p2.patch"]
    assert fast == plain


def bring_p1_back_to(repo: Repo, stop: str) -> None:
    """``push p1``, resolved: the refresh goes on and stops at ``stop``'s own conflict."""
    repo.ps("push", "p1", code=1)
    repo.write("a.c", RESOLVED)
    stopped = repo.ps("refresh", "--continue", code=1)
    assert f"conflict in patch {stop}" in stopped.stderr
    assert "<<<<<<<" in repo.read("b.txt") and "DEBUG" not in repo.read("b.txt")
