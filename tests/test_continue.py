"""``refresh --continue`` takes what the user changed since the stop, as ``git add -A && git
rebase --continue`` does (issue 33, item 3): every tracked file changed in the work tree goes
into the patch and into its recorded resolution, which replays the same files; a new untracked
file is refused, named, until the user adds it or removes it."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line

F = "def f(x):\n    y = x + 1\n    return y\n"


@built_once
def moved_function(tmp_path: Path) -> tuple[Repo, str, str]:
    """p1 edits ``f`` in a.py (and tunes c.py); upstream moves ``f`` into b.py. Returns the
    repository, upstream's a.py and the b.py a git user writes: upstream's, the edit ported."""
    a = numbered(10, "a") + F + numbered(10, "z")
    b = numbered(10, "b")
    files = {"a.py": a, "b.py": b, "c.py": numbered(30, "c"), "e.py": numbered(5, "e")}
    repo = make_repo(tmp_path / "fork", files)
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "x + 1\n", "x + 2  # mine\n")
    replace_line(repo, "c.py", "c 20\n", "c 20 mine\n")
    repo.ps("new", "p1", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", numbered(10, "a") + numbered(10, "z"))
    repo.write("b.py", b + F)
    repo.commit_all("upstream moves f into b.py")
    repo.git("checkout", "-q", "main")
    return repo, numbered(10, "a") + numbered(10, "z"), b + F.replace("x + 1", "x + 2  # mine")


def outside_series(repo: Repo) -> list[str]:
    return [ln for ln in repo.status_all().splitlines() if not ln[3:].startswith("patches/")]


def test_continue_takes_the_edit_ported_into_the_file_the_code_moved_to(tmp_path) -> None:
    repo, up_a, ported = moved_function(tmp_path)
    # The user's own edits, there before the refresh: never taken into the patch.
    repo.write("d.txt", "an untracked note\n")
    replace_line(repo, "e.py", "e 3\n", "e 3 local\n")
    repo.ps("refresh", "--onto", "up", code=1)
    assert "<<<<<<<" in repo.read("a.py")
    # Resolved as git users do: upstream's a.py, the edit ported into b.py, and c.py tuned.
    repo.write("a.py", up_a)
    repo.write("b.py", ported)
    replace_line(repo, "c.py", "c 21\n", "c 21 tuned while resolving\n")
    data = json.loads(repo.ps("refresh", "--continue", "--json").stdout)
    p1 = next(p for p in data["patches"] if p["name"] == "p1.patch")
    assert p1["resolved"] and p1["verdict"] not in ("upstream", "no-op"), p1
    text = repo.read("patches/p1.patch")
    assert "+++ b/b.py" in text and "+    y = x + 2  # mine" in text
    assert "+c 21 tuned while resolving" in text and "+c 20 mine" in text
    assert "a/a.py" not in text
    # Committed, nothing left behind but the user's own edits from before.
    assert outside_series(repo) == [" M e.py", "?? d.txt"]
    assert "e.py" not in text and "d.txt" not in text
    assert repo.git("show", "HEAD:b.py") == ported
    assert repo.git("show", "HEAD:a.py") == up_a
    assert "x + 2" not in repo.git("diff", "HEAD")
    resolved_tree = repo.tree()
    listing = repo.ps("resolutions").stdout
    assert "p1.patch  b.py" in listing and "p1.patch  c.py" in listing
    # The recorded resolution replays the same files.
    repo.ps("undo")
    repo.ps("undo")
    again = repo.ps("refresh", "--onto", "up")
    assert "p1.patch  (recorded resolution)" in again.stdout
    assert repo.tree() == resolved_tree
    assert repo.read("patches/p1.patch") == text
    # check settles it the same way.
    repo.ps("undo")
    assert "merged    p1.patch  (recorded resolution)" in repo.ps("check", "--onto", "up").stdout


def test_a_recorded_resolution_whose_other_file_moved_on_is_not_applied(tmp_path) -> None:
    repo, up_a, ported = moved_function(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("a.py", up_a)
    repo.write("b.py", ported)
    repo.ps("refresh", "--continue")
    repo.ps("undo")
    repo.ps("undo")
    # Upstream changes b.py again (not a.py): the ported edit no longer fits as recorded.
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.py", "b 1\n", "b 1 upstream again\n")
    repo.commit_all("upstream edits b.py")
    repo.git("branch", "-f", "up2")
    repo.git("checkout", "-q", "main")
    stopped = repo.ps("refresh", "--onto", "up2", code=1)
    assert "a recorded resolution of b.py is for other versions" in stopped.stderr
    repo.ps("refresh", "--abort")


def test_continue_refuses_a_new_untracked_file_naming_it(tmp_path) -> None:
    repo, up_a, ported = moved_function(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("a.py", up_a)
    repo.write("b.py", ported)
    repo.write("a.py.orig", "what a merge tool leaves behind\n")
    repo.write("helper.py", "def g():\n    return 1\n")
    before = repo.state()
    refused = repo.ps("refresh", "--continue", code=2)
    assert "a.py.orig" in refused.stderr and "helper.py" in refused.stderr
    assert "git add" in refused.stderr
    assert repo.state() == before
    # The one the patch should create is added, the other removed: both as the user meant.
    repo.git("add", "helper.py")
    (repo.path / "a.py.orig").unlink()
    repo.ps("refresh", "--continue")
    text = repo.read("patches/p1.patch")
    assert "+++ b/helper.py" in text and "a.py.orig" not in text
    assert outside_series(repo) == []


@built_once
def two_conflicts(tmp_path: Path) -> Repo:
    """p1 and p2 each change a line upstream changes too."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential")
    replace_line(repo, "b.py", "b 10\n", "b 10 mine\n")
    repo.ps("new", "p2", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    replace_line(repo, "b.py", "b 10\n", "b 10 upstream\n")
    repo.commit_all("upstream changes both")
    repo.git("checkout", "-q", "main")
    return repo


def test_abort_after_a_continue_says_it_keeps_the_resolution_recorded(tmp_path) -> None:
    repo = two_conflicts(tmp_path)
    before = repo.state()
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("a.py", numbered(20, "a").replace("a 10\n", "a 10 upstream and mine\n"))
    stopped = repo.ps("refresh", "--continue", code=1)
    assert "conflict in patch p2.patch" in stopped.stderr
    aborted = repo.ps("refresh", "--abort").stdout
    assert "everything as before\n" not in aborted
    assert "kept the resolution its --continue recorded: p1.patch  a.py" in aborted
    assert "'patchstack resolutions p1.patch --forget'" in aborted
    assert repo.state() == before
    assert "p1.patch  a.py" in repo.ps("resolutions").stdout
    # What it says is what happens: the next refresh settles p1 with it.
    again = repo.ps("refresh", "--onto", "up", code=1)
    assert "p1.patch  (recorded resolution reused for hunk a.py:10)" in again.stdout
    data = json.loads(repo.ps("refresh", "--abort", "--json").stdout)
    assert data["kept_resolutions"] == []  # this refresh recorded none


def test_a_renamed_patch_keeps_its_recorded_resolutions(tmp_path) -> None:
    repo = two_conflicts(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("a.py", numbered(20, "a").replace("a 10\n", "a 10 upstream and mine\n"))
    repo.ps("refresh", "--continue", code=1)
    repo.ps("refresh", "--abort")
    repo.ps("rename", "p1", "essential-fix")
    again = repo.ps("refresh", "--onto", "up", code=1)
    assert "essential-fix.patch  (recorded resolution reused for hunk a.py:10)" in again.stdout
    assert "conflict in patch p2.patch" in again.stderr
    repo.ps("refresh", "--abort")
    assert "essential-fix.patch  a.py" in repo.ps("resolutions").stdout
    repo.ps("resolutions", "essential-fix", "--forget")
    assert "no recorded resolutions" in repo.ps("resolutions").stdout
