"""``import branch REV --upstream REF``: a branch's first-parent history, upstream merges and
all, as a series whose ``push --all`` gives REV's tree. One small repository holds every case:
``fork`` (linear commits, an upstream merge whose conflict the merge resolved, a side
branch's merge, an upstream merge with a change of its own) and ``tangle`` (a conflict the
merge's tree cannot settle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchstack.model.branch import COMMIT, Piece, Taken, Walk, fixup_message

from .conftest import Repo, copy_repo, make_repo, numbered, replace_line


def resolve(repo: Repo, path: str, lines: str) -> None:
    """Replace the conflict region of ``path`` with ``lines``."""
    text = repo.read(path)
    repo.write(path, text.split("<<<<<<<")[0] + lines + text.split(">>>>>>>")[1].split("\n", 1)[1])


def _merge(repo: Repo, other: str, message: str, fix: dict[str, tuple[str, str]]) -> str:
    """Merge ``other``; a conflicted file (or any other) is then written as ``fix`` says:
    path -> (text to find, text to put)."""
    repo.git("merge", "-q", "--no-ff", "--no-commit", other, check=False)
    for path, (old, new) in fix.items():
        text = repo.read(path)
        if "<<<<<<<" in text:
            resolve(repo, path, new)
        else:
            repo.write(path, text.replace(old, new, 1))
        repo.git("add", path)
    repo.git("commit", "-q", "-m", message)
    return repo.head()


@pytest.fixture(scope="module")
def built(module_env) -> tuple[Path, dict[str, str]]:
    repo = make_repo(
        module_env.mktemp("branch") / "fork",
        {"a.py": numbered(40, "a"), "b.py": numbered(40, "b"), "c.py": numbered(40, "c")},
    )
    at = {"snapshot": repo.head()}
    repo.git("branch", "up2")
    repo.git("checkout", "-q", "-b", "fork")
    replace_line(repo, "a.py", "a 5\n", "a 5 fork\n")
    at["l1"] = repo.commit_all("Add a fork line\n\nWhy: the fork needs it.")
    replace_line(repo, "b.py", "b 10\n", "b 10 tuned\n")
    at["l2"] = repo.commit_all("Tune b\n\nPatchstack-Tag: diagnostic")
    repo.git("checkout", "-q", "main")
    replace_line(repo, "a.py", "a 6\n", "a 6 upstream\n")
    replace_line(repo, "c.py", "c 30\n", "c 30 upstream\n")
    at["u1"] = repo.commit_all("Upstream: a 6 and c 30")
    repo.git("checkout", "-q", "fork")
    # The conflict (a 5 and a 6 are adjacent) resolved as anyone would: both lines.
    both = {"a.py": ("", "a 5 fork\na 6 upstream\n")}
    at["m1"] = _merge(repo, "main", "Merge main into fork", both)
    replace_line(repo, "c.py", "c 2\n", "c 2 clean\n")
    at["l3"] = repo.commit_all("Clean up")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("d.py", "feature\n")
    repo.commit_all("Feature: add d.py")
    repo.git("checkout", "-q", "fork")
    at["m2"] = _merge(repo, "feature", "Merge branch 'feature' into fork", {})
    repo.git("checkout", "-q", "main")
    replace_line(repo, "b.py", "b 20\n", "b 20 upstream\n")
    at["u2"] = repo.commit_all("Upstream: b 20")
    repo.git("checkout", "-q", "fork")
    # A change of the merge's own (an "evil merge"): c 35, which no side made.
    evil = {"c.py": ("c 35\n", "c 35 evil\n")}
    at["m3"] = _merge(repo, "main", "Merge main into fork again", evil)
    replace_line(repo, "c.py", "c 3\n", "c 3 clean\n")
    at["l4"] = repo.commit_all("clean up")
    # tangle: patch A and then B change line 20; upstream changes it too; the merge keeps all.
    repo.git("checkout", "-q", "up2")
    replace_line(repo, "a.py", "a 20\n", "a 20 U\n")
    at["up2"] = repo.commit_all("Upstream: a 20")
    repo.git("checkout", "-q", "-b", "tangle", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 20 A\n", "a 20 AB\n")
    repo.commit_all("Patch B")
    at["tangle"] = _merge(repo, "up2", "Merge up2 into tangle", {"a.py": ("", "a 20 U AB\n")})
    repo.git("checkout", "-q", "-b", "work", at["snapshot"])
    return repo.path, at


@pytest.fixture
def fork(built: tuple[Path, dict[str, str]], tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    return copy_repo(built[0], tmp_path / "fork"), built[1]


def series(repo: Repo) -> list[tuple[str, str]]:
    data = json.loads(repo.ps("series", "--json").stdout)
    return [(p["name"], p["tag"]) for p in data["patches"]]


def on(repo: Repo, rev: str) -> None:
    """Put the work branch at ``rev`` (the team's branch, as a new user has it checked out)."""
    repo.git("checkout", "-q", "-B", "work", rev)


def pushed_tree(repo: Repo) -> str:
    repo.ps("push", "--all")
    return repo.tree()


def test_linear_segment_becomes_patches_as_import_commits_makes_them(fork) -> None:
    repo, at = fork
    out = repo.ps("import", "branch", at["l2"], "--upstream", "main", "--tag", "essential").stdout
    assert "as 2 patches: 2 from commits, 0 side-branch merges, 0 fixups" in out
    assert f"created the series (base {at['snapshot'][:12]})" in out
    assert "next: 'patchstack push --all' applies them" in out  # HEAD is at the base
    assert series(repo) == [("Add-a-fork-line.patch", "essential"), ("Tune-b.patch", "diagnostic")]
    text = (repo.path / "patches" / "Add-a-fork-line.patch").read_text()
    assert "From: Test Author <author@example.org>" in text and "Why: the fork needs it." in text
    assert repo.head() == at["snapshot"]  # the branch is not moved
    assert pushed_tree(repo) == repo.tree(at["l2"])


def test_upstream_merge_is_a_refresh_settled_by_the_merge_and_its_own_change_a_fixup(fork):
    repo, at = fork
    on(repo, "fork")
    out = repo.ps("import", "branch", "fork", "--upstream", "main", "--tag", "essential").stdout
    assert out.splitlines()[0] == (
        "imported fork (7 first-parent commits since main) as 6 patches: 4 from commits,"
        " 1 side-branch merge, 1 fixup"
    )
    assert (
        f"  {at['m1'][:12]} -> upstream {at['u1'][:12]}: 2 patches carried, 1 conflict settled"
        " by the merge's tree"
    ) in out
    assert "1 fixup: what a merge changed beyond its conflicts" in out
    assert f"  fixup-Merge-main-into-fork-again.patch (merge {at['m3'][:12]})" in out
    assert "checked: the patch files applied on the base give exactly fork's tree" in out
    assert "HEAD already carries them as" in out
    # "Clean up" and "clean up" would be one file on macOS: numbered.
    assert [n for n, _t in series(repo)] == [
        "Add-a-fork-line.patch",
        "Tune-b.patch",
        "Clean-up.patch",
        "Merge-branch-feature-into-fork.patch",
        "fixup-Merge-main-into-fork-again.patch",
        "clean-up-2.patch",
    ]
    base = (repo.path / "patches" / "series").read_text()
    assert f"# base: {at['u2']}" in base  # the last upstream commit the branch merged
    patches = repo.path / "patches"
    # The patch carried onto upstream, with the merge's resolution as its context.
    assert " a 6 upstream" in (patches / "Add-a-fork-line.patch").read_text()
    assert "+feature" in (patches / "Merge-branch-feature-into-fork.patch").read_text()
    fixup = (patches / "fixup-Merge-main-into-fork-again.patch").read_text()
    assert "+c 35 evil" in fixup and "Subject: [PATCH] fixup: Merge main into fork again" in fixup
    assert pushed_tree(repo) == repo.tree(at["l4"])


def test_a_conflict_the_merge_cannot_settle_stops_then_continue_or_abort(fork) -> None:
    repo, at = fork
    before = repo.state()
    args = ("import", "branch", "tangle", "--upstream", "up2", "--tag", "essential")
    result = repo.ps(*args, code=1)
    assert "import stopped at merge" in result.stdout and "patch Patch-A.patch" in result.stdout
    assert "git checkout" in result.stderr and "import branch --continue" in result.stderr
    assert "<<<<<<<" in repo.read("a.py")
    status = repo.ps("status", code=1).stdout.splitlines()
    assert status[0].startswith("import stopped at a conflict in Patch-A.patch")
    assert "'patchstack import branch --continue'" in status[0]
    refused = repo.ps("push", "--all", code=2).stderr
    assert "an import is stopped at a conflict" in refused and "import branch --abort" in refused
    assert "import branch --continue" in repo.ps("refresh", "--continue", code=2).stderr
    repo.ps("import", "branch", "--abort")
    assert repo.state() == before
    # Again, and resolved by hand: Patch B is then settled by the merge (its last patch).
    repo.ps(*args, code=1)
    resolve(repo, "a.py", "a 20 U A\n")
    out = repo.ps("import", "branch", "--continue").stdout
    assert "1 conflict settled by the merge's tree, 1 resolved by hand" in out
    assert repo.head() == at["snapshot"] and not repo.git("status", "--porcelain", "--", "a.py")
    assert "+a 20 U A" in (repo.path / "patches" / "Patch-A.patch").read_text()
    assert f"next: check out the series base ('git switch -c NAME {at['up2'][:12]}'" in out
    repo.git("switch", "-q", "--detach", at["up2"])
    assert pushed_tree(repo) == repo.tree("tangle")


def test_take_merge_settles_every_conflict_and_names_the_patch(fork) -> None:
    repo, _at = fork
    args = ("import", "branch", "tangle", "-u", "up2", "--tag", "essential", "--take-merge")
    out = repo.ps(*args).stdout
    assert "1 patch took the merge's version of a conflicted file whole" in out
    assert "  Patch-A.patch (at merge" in out
    repo.git("switch", "-q", "--detach", "up2")
    assert pushed_tree(repo) == repo.tree("tangle")


def test_import_and_a_stop_are_undone_and_continue_gives_back_the_stop(fork) -> None:
    repo, at = fork
    before = repo.state()
    repo.ps("import", "branch", "fork", "-u", "main", "-t", "essential")
    repo.ps("undo")
    assert repo.state() == before
    repo.ps("import", "branch", "tangle", "-u", "up2", "-t", "essential", code=1)
    repo.ps("undo")  # the stop: as --abort
    assert repo.state() == before
    repo.ps("import", "branch", "tangle", "-u", "up2", "-t", "essential", code=1)
    stopped = repo.state()
    resolve(repo, "a.py", "a 20 U A\n")
    repo.ps("import", "branch", "--continue")
    repo.ps("undo")
    assert repo.ps("status", code=1).stdout.startswith("import stopped at a conflict")
    assert repo.state()[0] == stopped[0]
    log = repo.ps("log").stdout
    assert log.count("patchstack import branch") == 4 and "[stopped at a conflict]" in log


def test_append_numbers_names_as_a_first_import_and_never_by_case_alone(fork) -> None:
    repo, at = fork
    on(repo, at["u2"])
    repo.ps("init")
    replace_line(repo, "b.py", "b 35\n", "b 35 mine\n")
    repo.ps("new", "clean-up", "--tag", "optimization", "-m", "clean up")
    on(repo, "fork")
    args = ("import", "branch", "fork", "-u", "main", "-t", "essential")
    assert "--append" in repo.ps(*args, code=2).stderr  # refused before any work
    repo.git("checkout", "-q", "work", "--", ".")
    out = repo.ps(*args, "--append").stdout
    assert "appended after the patches already in the series" in out
    names = [n for n, _t in series(repo)]
    assert names[0] == "clean-up.patch" and "Clean-up-2.patch" in names
    assert "clean-up-3.patch" in names
    keys = [n.casefold() for n in names]
    assert len(set(keys)) == len(keys)


def test_refusals_name_what_is_missing_and_change_nothing(fork) -> None:
    repo, at = fork
    before = repo.state()
    err = repo.ps("import", "branch", "fork", code=2).stderr
    assert "no upstream" in err and "--upstream" in err
    err = repo.ps("import", "branch", "fork", "-u", "main", code=2).stderr
    assert "6 of 7 commit(s) carry no 'Patchstack-Tag:' trailer" in err and "--tag" in err
    err = repo.ps("import", "branch", "main", "-u", "fork", "-t", "essential", code=2).stderr
    assert "has no commits that fork's history lacks" in err
    assert "--continue and --abort" in repo.ps("import", "branch", "x", "--abort", code=2).stderr
    assert "no refresh is in progress" in repo.ps("import", "branch", "--continue", code=2).stderr
    assert repo.state() == before


def test_walk_round_trips_through_json_and_fixups_are_worded() -> None:
    piece = Piece("p.patch", None, "Subject\n\nBody\n", "A <a@b>", "1 +0000", "commit 1", COMMIT)
    walk = Walk("r", "rev", "f", "ref", "essential", False, "b", ("t0", "t1"), 1, (piece,))
    walk = Walk(**{**walk.__dict__, "taken": (Taken("m", "u", True, 3, 1, 0, ("x",)),)})
    assert Walk.from_json(walk.to_json()) == walk
    text = fixup_message("1" * 40, "2" * 40, "Merge main\n\nPatchstack-Tag: essential\n")
    assert text.startswith("fixup: Merge main\n\n") and max(map(len, text.splitlines())) <= 72
