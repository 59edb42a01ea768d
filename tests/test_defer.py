"""A real drift is not all or nothing: ``refresh --skip`` and ``--defer-conflicts`` leave a
conflicting patch out, deferred (and the knock-ons that conflict only because it is missing
with it), place the rest as ``git rebase --skip`` places them, and ``push NAME`` brings a
deferred patch back later."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, built_once, make_repo, names, numbered, replace_line


@built_once
def drift(tmp_path: Path) -> Repo:
    """p1 creates new.py and changes a.py line 10, which upstream changes too (primary);
    p2 changes new.py (a knock-on when p1 is missing); p3 changes b.py (clean)."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.write("new.py", numbered(10, "new"))
    repo.ps("new", "p1", "--tag", "essential", "a.py", "new.py")
    replace_line(repo, "new.py", "new 5\n", "new 5 tuned\n")
    repo.ps("new", "p2", "--tag", "optimization")
    replace_line(repo, "b.py", "b 20\n", "b 20 mine\n")
    repo.ps("new", "p3", "--tag", "diagnostic")
    top = repo.head()
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    repo.commit_all("upstream reworks line 10")
    repo.git("checkout", "-q", "main")
    assert repo.head() == top
    return repo


def rebased_tree(repo: Repo, tmp: Path) -> tuple[str, list[str]]:
    """git rebase of the stack onto up, each conflict skipped: (tree, skipped subjects)."""
    clone = Repo(tmp)
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(tmp)], check=True)
    clone.git("checkout", "-q", "-B", "work", repo.head())
    up = repo.git("rev-parse", "up").strip()
    base = repo.git("rev-parse", "HEAD~3").strip()
    skipped = []
    proc = subprocess.run(["git", "rebase", "--onto", up, base], cwd=tmp, capture_output=True)
    while proc.returncode:
        done = (tmp / ".git" / "rebase-merge" / "done").read_text().split()
        skipped.append(clone.git("log", "-1", "--format=%s", done[-2]).strip())
        proc = subprocess.run(["git", "rebase", "--skip"], cwd=tmp, capture_output=True)
    return clone.tree(), skipped


def test_skip_defers_the_conflict_and_its_knock_on_and_places_the_rest_as_rebase(
    tmp_path,
) -> None:
    repo = drift(tmp_path)
    before = repo.state()
    want, skipped = rebased_tree(repo, tmp_path / "rebase")
    assert skipped == ["p1", "p2"]
    stopped = repo.ps("refresh", "--onto", "up", code=1)
    assert "conflict in patch p1.patch" in stopped.stderr and "--skip" in stopped.stderr
    p1 = repo.read("patches/p1.patch")
    result = repo.ps("refresh", "--skip")
    assert "deferred:" in result.stdout and "p1.patch" in result.stdout
    assert "1 knock-on(s) waiting for it: p2.patch" in result.stdout
    assert repo.tree() == want
    assert names(repo) == ["p3.patch"]
    assert repo.read("patches/p1.patch") == p1  # its file untouched
    series = repo.read("patches/series")
    assert "# deferred: p1.patch " in series and "# deferred: p2.patch " in series
    assert " after p1.patch\n" in series
    listing = json.loads(repo.ps("check", "--onto", "up", "--json").stdout)
    assert {p["name"]: p["verdict"] for p in listing["patches"]} == {
        "p1.patch": "deferred",
        "p2.patch": "deferred",
        "p3.patch": "unchanged",
    }
    repo.ps("undo")  # the skip
    repo.ps("refresh", "--abort")
    assert repo.state() == before


def test_defer_conflicts_does_it_in_one_command_and_says_which_is_which(tmp_path) -> None:
    repo = drift(tmp_path)
    want, _skipped = rebased_tree(repo, tmp_path / "rebase")
    data = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    kinds = {c["patch"]: (c["kind"], c["root"]) for c in data["deferred"]}
    assert kinds == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
    assert repo.tree() == want
    check = repo.ps("check", "--onto", "up").stdout
    assert "deferred  p1.patch" in check


def test_check_groups_knock_ons_under_their_root(tmp_path) -> None:
    repo = drift(tmp_path)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    kinds = {c["patch"]: (c["kind"], c["root"]) for c in data["conflicts"]}
    assert kinds == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
    out = repo.ps("check", "--onto", "up", code=1).stdout
    assert "conflicts: 1 primary (upstream changed the lines), 1 knock-on" in out
    line = next(ln for ln in out.splitlines() if "conflict  p1.patch" in ln)
    assert "a.py" in line and "upstream reworks line 10" in line
    assert "+ 1 knock-on(s) waiting for it: p2.patch" in out
    assert "the patch expected" not in out  # the whole report only on demand
    whole = repo.ps("check", "--onto", "up", "--patch", "p2", code=1).stdout
    assert "a knock-on: it conflicts only because p1.patch" in whole


def test_push_brings_a_deferred_patch_back_and_its_knock_ons_with_it(tmp_path) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    repo.git("gc", "-q", "--prune=now")  # the deferred change is kept by the operation log
    result = repo.ps("push", "p1", code=1)
    assert "conflict in patch p1.patch" in result.stderr
    text = repo.read("a.py")
    assert "<<<<<<< the series" in text and ">>>>>>> p1.patch" in text
    repo.write("a.py", numbered(40, "a").replace("a 10\n", "a 10 upstream and mine\n"))
    done = repo.ps("refresh", "--continue")
    assert "resolved" in done.stdout
    assert names(repo) == ["p1.patch", "p2.patch", "p3.patch"]  # p2 placed again by itself
    assert "# deferred:" not in repo.read("patches/series")
    assert "new 5 tuned" in repo.read("new.py") and "a 10 upstream and mine" in repo.read("a.py")
    assert "+a 10 upstream and mine" in repo.read("patches/p1.patch")
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    assert "a 10 upstream and mine" in repo.read("a.py")


def test_push_all_leaves_deferred_patches_out_and_says_how_to_bring_one_back(tmp_path) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    repo.ps("pop", "--all")
    result = repo.ps("push", "--all")
    assert "deferred (not applied) 2 patch(es): p1.patch, p2.patch" in result.stdout
    assert "'patchstack push NAME' brings one back" in result.stdout
    assert names(repo) == ["p3.patch"]


def resolve_p1(repo: Repo) -> None:
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("a.py", numbered(40, "a").replace("a 10\n", "a 10 upstream and mine\n"))
    repo.ps("refresh", "--continue")


@built_once
def drift_resolved(tmp_path: Path) -> Repo:
    """`drift`, then `resolve_p1`: built once per worker."""
    repo = drift(tmp_path)
    resolve_p1(repo)
    return repo


def test_a_resolution_is_recorded_and_survives_undo(tmp_path) -> None:
    repo = drift_resolved(tmp_path)
    resolved_tree = repo.tree()
    listing = repo.ps("resolutions").stdout
    assert "p1.patch  a.py  recorded " in listing
    repo.ps("undo")  # the --continue: the refresh is stopped again
    repo.ps("undo")  # the stop: back to before the refresh; what it learned stays
    assert "p1.patch  a.py" in repo.ps("resolutions").stdout
    again = repo.ps("refresh", "--onto", "up")  # the same conflict: settled, and said so
    assert "p1.patch  (recorded resolution reused for hunk a.py:10)" in again.stdout
    assert repo.tree() == resolved_tree
    repo.ps("undo")
    check = repo.ps("check", "--onto", "up").stdout
    assert "merged    p1.patch  (recorded resolution reused for hunk a.py:10)" in check
    repo.ps("resolutions", "--forget")
    repo.ps("refresh", "--onto", "up", code=1)  # forgotten: asked again
    repo.ps("refresh", "--abort")


def test_a_colleague_reuses_a_resolution_committed_with_the_series(tmp_path) -> None:
    repo = drift_resolved(tmp_path)
    records = repo.path / "patches" / "resolutions"
    colleague = drift(tmp_path / "colleague")
    subprocess.run(["cp", "-r", str(records), str(colleague.path / "patches")], check=True)
    colleague.ps("refresh", "--onto", "up")
    assert "a 10 upstream and mine" in colleague.read("a.py")
    colleague.ps("pop", "--all")
    colleague.ps("push", "--all", "--onto", colleague.git("rev-parse", "up").strip())
    assert "a 10 upstream and mine" in colleague.read("a.py")


def test_a_resolution_for_other_versions_is_never_applied(tmp_path) -> None:
    repo = drift_resolved(tmp_path)
    repo.ps("undo")
    repo.ps("undo")
    repo.git("checkout", "-q", "up")
    replace_line(repo, "a.py", "a 11\n", "a 11 upstream again\n")
    repo.commit_all("upstream changes line 11 too")
    repo.git("branch", "-f", "up2")
    repo.git("checkout", "-q", "main")
    stopped = repo.ps("refresh", "--onto", "up2", code=1)
    assert "conflict in patch p1.patch" in stopped.stderr
    # upstream changed the lines of the recorded hunk: its record is for other lines
    assert "p1.patch's conflict hunks in a.py are for other lines" in stopped.stderr
    assert "<<<<<<<" in repo.read("a.py")
    repo.ps("refresh", "--abort")


def test_a_deferred_patch_s_probe_is_not_run_rather_than_broken(tmp_path) -> None:
    """A build carries nothing of a deferred patch: its probe proves nothing there, so
    refresh --probes and check --probes report it not run (it was 'broken: fails with it',
    the trees with and without it the same)."""
    repo = drift(tmp_path)
    repo.ps("edit", "p1", "--probe", "grep -q mine a.py")
    repo.ps("edit", "p3", "--probe", "grep -q 'b 20 mine' b.py")
    for args in (("refresh", "--onto", "up", "--defer-conflicts"), ("check",)):
        data = json.loads(repo.ps(*args, "--probes", "--json", code=1).stdout)
        verdicts = {r["name"]: (r["verdict"], r["why"]) for r in data["probes"]["results"]}
        assert verdicts == {
            "p1.patch": ("not-run", "deferred: 'patchstack push p1.patch' brings it back"),
            "p3.patch": ("effective", ""),
        }, args


def test_push_of_a_deferred_patch_sums_up_the_others_in_one_line(tmp_path) -> None:
    """A deferred patch brought back with ``push NAME`` that conflicts again: before its
    conflict, the patches still deferred are one line, not one line each (46 on a real
    branch; more than a stop names: each one stays counted); ``--verbose`` lists them."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(90, "a")})
    base = repo.head()
    repo.ps("init")
    for k in range(1, 9):
        replace_line(repo, "a.py", f"a {k * 10}\n", f"a {k * 10} mine\n")
        repo.ps("new", f"p{k}", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    for k in range(1, 9):
        replace_line(repo, "a.py", f"a {k * 10}\n", f"a {k * 10} upstream\n")
    repo.commit_all("upstream reworks every patched line")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    pushed = repo.ps("push", "p3.patch", code=1)
    others = [ln for ln in pushed.stdout.splitlines() if "deferred" in ln]
    assert others == ["  7 other patches stay deferred: 'patchstack status' lists them"]
    assert "conflict  p3.patch" in pushed.stdout and "conflict in patch p3.patch" in pushed.stderr
    repo.ps("refresh", "--abort")
    verbose = repo.ps("push", "p3.patch", "--verbose", code=1).stdout
    listed = [ln.split()[-1] for ln in verbose.splitlines() if ln.startswith("  deferred ")]
    assert listed == [f"p{k}.patch" for k in (1, 2, 4, 5, 6, 7, 8)]
