"""Every triage label proven: a conflict is a knock-on of P only when it applies once P is
applied (merged again with P in place), and a hunk's culprit is the upstream commit that
changed its lines at its place, checked against git's own ``log -L``."""

from __future__ import annotations

import json
from pathlib import Path

from patchstack.engine.culprits import slides

from .conftest import Repo, make_repo, numbered, replace_line
from .refresh_fixtures import relanded_fork


def kinds(repo: Repo, *args: str) -> dict[str, tuple[str, str | None]]:
    data = json.loads(repo.ps("check", "--onto", "up", "--json", *args, code=1).stdout)
    return {c["patch"]: (c["kind"], c["root"]) for c in data["conflicts"]}


def brace_fork(tmp_path: Path) -> Repo:
    """p1 changes a.c's line 5, which upstream changes too (primary). p2 changes line 20,
    which upstream replaced by ``}``: a line the old file holds elsewhere (its first line),
    so a containment test took upstream's line for the old base's."""
    repo = make_repo(tmp_path / "fork", {"a.c": "}\n" + numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 5\n", "a 5 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    replace_line(repo, "a.c", "a 20\n", "a 20 mine\n")
    repo.ps("new", "p2", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 5\n", "a 5 upstream\n")
    repo.commit_all("upstream reworks line 5")
    replace_line(repo, "a.c", "a 20\n", "}\n")
    repo.commit_all("upstream closes the block at line 20")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_conflict_upstream_made_with_a_repeated_line_is_primary(tmp_path) -> None:
    repo = brace_fork(tmp_path)
    assert kinds(repo) == {"p1.patch": ("primary", None), "p2.patch": ("primary", None)}
    # the oracle: p2 on upstream with p1 in place (p1's conflict taken as p1 has it) conflicts
    repo.git("checkout", "-q", "-b", "oracle", "up")
    repo.git("cherry-pick", "-X", "theirs", "main~1")
    proc = repo.git("cherry-pick", "main", check=False)
    assert repo.git("diff", "--name-only", "--diff-filter=U").split() == ["a.c"], proc
    repo.git("cherry-pick", "--abort")


def test_a_real_knock_on_stays_a_knock_on(tmp_path) -> None:
    """p1 changes line 10 (and line 5, which upstream changes too); p2 changes the line p1
    made: without p1 it conflicts on lines the old base had, with p1 in place it applies."""
    repo = make_repo(tmp_path / "fork", {"a.c": "}\n" + numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 5\n", "a 5 mine\n")
    replace_line(repo, "a.c", "a 10\n", "a 10 p1\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    replace_line(repo, "a.c", "a 10 p1\n", "a 10 p2\n")
    repo.ps("new", "p2", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 5\n", "a 5 upstream\n")
    repo.commit_all("upstream reworks line 5")
    repo.git("checkout", "-q", "main")
    assert kinds(repo) == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}
    data = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    deferred = {c["patch"]: (c["kind"], c["root"]) for c in data["deferred"]}
    assert deferred == {"p1.patch": ("primary", None), "p2.patch": ("knock-on", "p1.patch")}


def one_patch_fork(
    tmp_path: Path, name: str = "a.c", lines: int = 40, line: int = 20
) -> tuple[Repo, str]:
    """p1 changes line ``line`` of ``name`` (``lines`` numbered lines); the repository is left
    on a new branch ``up`` at the base, returned with it, for the test's upstream commits."""
    repo = make_repo(tmp_path / "fork", {name: numbered(lines, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, name, f"a {line}\n", f"a {line} mine\n")
    repo.ps("new", "p1", "--tag", "essential", name)
    repo.git("checkout", "-q", "-b", "up", base)
    return repo, base


def culprits_of(repo: Repo) -> list[list[str]]:
    """Each hunk's upstream commits in ``check --json``, and the same from the whole report
    of ``check --patch`` (a stop's report), which must agree."""
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    found = [
        [u["commit"] for u in h["upstream_commits"]] for c in data["conflicts"] for h in c["hunks"]
    ]
    whole = json.loads(repo.ps("check", "--onto", "up", "--patch", "p1", "--json", code=1).stdout)
    again = [
        [u["commit"] for u in h["upstream_commits"]] for c in whole["conflicts"] for h in c["hunks"]
    ]
    assert again == found
    return found


def log_l(repo: Repo, base: str, start: int, end: int, path: str) -> list[str]:
    """The oracle: ``git log -L`` of lines start..end at up, oldest first."""
    out = repo.git(
        "log",
        "--reverse",
        "--first-parent",
        "-s",
        "--format=%H",
        f"-L{start},{end}:{path}",
        f"{base}..up",
    )
    return [ln for ln in out.split() if len(ln) == 40]


def test_the_culprit_of_moved_lines_is_the_move_not_the_newest_commit(tmp_path) -> None:
    """Upstream moves lines 20-22 below line 35, then makes a one-line change at line 1 (the
    newest commit touching the file); p1 edits line 21: the culprit is the move."""
    repo, base = one_patch_fork(tmp_path, name="a.py", line=21)
    replace_line(repo, "a.py", "a 20\na 21\na 22\n", "")
    replace_line(repo, "a.py", "a 35\n", "a 35\na 20\na 21\na 22\n")
    move = repo.commit_all("upstream moves lines 20-22 down")
    replace_line(repo, "a.py", "a 1\n", "a 1 tweaked\n")
    repo.commit_all("upstream tweaks line 1")
    repo.git("checkout", "-q", "main")
    # the lines around the point where 20-22 were: a 19 and a 23 (lines 19 and 20 at up)
    assert log_l(repo, base, 19, 20, "a.py") == [move]
    assert culprits_of(repo) == [[move]]


def test_the_culprit_of_duplicated_lines_is_the_commit_at_the_hunk_s_place(tmp_path) -> None:
    """f and g have the same body; upstream first changes f's ``x = 1`` to ``x = 2``, then
    g's; p1 edits g's: the culprit is the second commit, not the first textual match."""
    body = "    x = 1\n    return x\n"
    repo = make_repo(tmp_path / "fork", {"a.py": f"def f():\n{body}\n\ndef g():\n{body}"})
    base = repo.head()
    repo.ps("init")
    repo.write("a.py", f"def f():\n{body}\n\ndef g():\n    x = 3\n    return x\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", f"def f():\n    x = 2\n    return x\n\n\ndef g():\n{body}")
    repo.commit_all("upstream changes f")
    repo.write("a.py", "def f():\n    x = 2\n    return x\n\n\ndef g():\n    x = 2\n    return x\n")
    second = repo.commit_all("upstream changes g the same way")
    repo.git("checkout", "-q", "main")
    assert log_l(repo, base, 7, 7, "a.py") == [second]
    assert culprits_of(repo) == [[second]]


def test_the_culprit_of_code_moved_to_another_file_is_the_move(tmp_path) -> None:
    """Upstream moves ``helper`` from a.py to b.py, then changes a.py's first line; p1 edits
    ``helper`` in a.py: the culprit is the move (``git show`` of it has the lines in b.py)."""
    helper = "def helper():\n    return 1\n"
    text = "import os\n" + numbered(10, "pad") + "\n" + helper + "\nx = 1\n"
    repo = make_repo(tmp_path / "fork", {"a.py": text})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "    return 1\n", "    return 2\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", helper + "\n", "")
    repo.write("b.py", helper)
    move = repo.commit_all("upstream moves helper to b.py")
    replace_line(repo, "a.py", "import os\n", "import os, sys\n")
    repo.commit_all("upstream imports sys")
    repo.git("checkout", "-q", "main")
    assert "def helper():" in repo.git("show", move, "--", "b.py")
    assert log_l(repo, base, 12, 13, "a.py") == [move]
    assert culprits_of(repo) == [[move]]


def test_evidence_after_a_revert_and_re_land_names_the_re_land(tmp_path) -> None:
    """Upstream lands p1's change, two commits elsewhere, reverts it, lands it again: the
    base holds it for good from the re-land on."""
    files = {"a.py": numbered(40, "a"), "b.py": numbered(5, "b")}
    elsewhere = [("b.py", f"b {n}\n", f"b {n} elsewhere\n", f"elsewhere {n}") for n in (1, 2)]
    repo, base, _landed, reland = relanded_fork(tmp_path / "fork", files, between=elsewhere)
    # the oracle: the newest commit whose diff adds the line, and the base holds it since
    added = repo.git("log", "--first-parent", "--format=%H", "-S", "a 10 fixed", f"{base}..up")
    assert added.split()[0] == reland
    data = json.loads(repo.ps("check", "--onto", "up", "--json").stdout)
    (p1,) = data["patches"]
    assert p1["verdict"] == "upstream"
    assert p1["evidence"]["commit"] == reland


def test_superseded_names_the_commit_whose_version_holds_the_lines(tmp_path) -> None:
    """Upstream first reworks line 11 (next to where p1 adds ``guard()``), then adds the call
    its own way: both changed the hunk's lines, but only the second holds ``guard()``."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10\nguard()\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 11\n", "a 11 reworked\n")
    first = repo.commit_all("upstream reworks line 11")
    replace_line(repo, "a.py", "a 10\n", "a 10\nif ok:\n    guard()\n")
    guards = repo.commit_all("upstream guards a 10 its own way")
    repo.git("checkout", "-q", "main")
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    (conflict,) = data["conflicts"]
    assert [u["commit"] for u in conflict["hunks"][0]["upstream_commits"]] == [first, guards]
    assert "guard()" not in repo.git("show", f"{first}:a.py")
    assert "guard()" in repo.git("show", f"{guards}:a.py")
    assert conflict["superseded_by"]["commit"] == guards


def test_a_patch_commit_in_upstream_s_range_is_no_culprit(tmp_path) -> None:
    """A commit carrying a patch of the fork (its trailer) changed the lines first, then an
    upstream commit: only the upstream one is named."""
    repo, base = one_patch_fork(tmp_path, name="a.py")
    replace_line(repo, "a.py", "a 20\n", "a 20 carried\n")
    repo.git("commit", "-qam", "carried\n\nPatchstack-Patch: other.patch")
    replace_line(repo, "a.py", "a 20 carried\n", "a 20 upstream\n")
    upstream = repo.commit_all("upstream reworks line 20")
    repo.git("checkout", "-q", "main")
    assert len(log_l(repo, base, 20, 20, "a.py")) == 2
    assert culprits_of(repo) == [[upstream]]


def test_a_knock_on_names_the_missing_patch_whose_lines_it_needs(tmp_path) -> None:
    """p1 adds P1C to c.txt, p2 edits c3, p3 edits P1C; upstream edits a3 and c3, so p1 and
    p2 conflict. p3 is a knock-on of p1 (git: with p1 applied it merges), not of p2, the
    nearest missing patch in its file (with p2 applied and p1 still out it conflicts)."""
    a = "".join(f"a{i}\n" for i in range(1, 7))
    c = "".join(f"c{i}\n" for i in range(1, 13))
    repo = make_repo(tmp_path / "fork", {"a.txt": a, "c.txt": c})
    base = repo.head()
    repo.ps("init")
    repo.write("a.txt", a.replace("a2\n", "a2\nP1A\n"))
    repo.write("c.txt", c.replace("c10\n", "c10\nP1C\n"))
    repo.ps("new", "p1", "-t", "essential")
    repo.write("c.txt", repo.read("c.txt").replace("c3\n", "c3 p2\n"))
    repo.ps("new", "p2", "-t", "essential")
    repo.write("c.txt", repo.read("c.txt").replace("P1C\n", "P1C p3\n"))
    repo.ps("new", "p3", "-t", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.txt", a.replace("a3\n", "a3 up\n"))
    repo.write("c.txt", c.replace("c3\n", "c3 up\n"))
    repo.commit_all("upstream edits a3 and c3")
    repo.git("checkout", "-q", "main")
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    found = {c["patch"]: (c["kind"], c["root"]) for c in data["conflicts"]}
    assert found["p3.patch"] == ("knock-on", "p1.patch")


def test_a_wrap_and_its_revert_are_no_culprits(tmp_path) -> None:
    """Upstream wraps line 20 in a block, reverts the wrap, then edits line 20: the wrap and
    its revert together change nothing (``git log -L`` at up does not name them); the edit
    is the culprit."""
    repo, base = one_patch_fork(tmp_path)
    replace_line(repo, "a.c", "a 20\n", "if (x) {\na 20\n}\n")
    repo.commit_all("upstream wraps line 20")
    repo.git("revert", "--no-edit", "HEAD")
    replace_line(repo, "a.c", "a 20\n", "a 20 upstream\n")
    edit = repo.commit_all("upstream reworks line 20")
    repo.git("checkout", "-q", "main")
    assert log_l(repo, base, 20, 20, "a.c") == [edit]
    assert culprits_of(repo) == [[edit]]


def test_the_culprit_of_a_file_whose_name_git_quotes(tmp_path) -> None:
    """A path git writes quoted in a diff header (a double quote, a backslash) is traced as
    any other, not left "unknown"."""
    name = 'we"ird\\name.c'
    repo, base = one_patch_fork(tmp_path, name=name)
    replace_line(repo, name, "a 20\n", "a 20 upstream\n")
    edit = repo.commit_all("upstream reworks line 20")
    repo.git("checkout", "-q", "main")
    assert culprits_of(repo) == [[edit]]


def test_a_deletion_a_line_away_from_the_hunk_is_no_culprit(tmp_path) -> None:
    """Upstream deletes line 8, then changes line 10; p1 changes line 10 too. Line 9 stands
    between the deletion and the hunk (unique lines: no diff can place that deletion next to
    it): the culprit is the change of line 10 alone (label seed 1106: upstream took the patch
    that deleted the line two above)."""
    repo, base = one_patch_fork(tmp_path, lines=20, line=10)
    replace_line(repo, "a.c", "a 8\n", "")
    repo.commit_all("upstream deletes line 8")
    replace_line(repo, "a.c", "a 10\n", "a 10 upstream\n")
    edit = repo.commit_all("upstream changes line 10")
    repo.git("checkout", "-q", "main")
    # line 10 of the base is line 9 at up
    assert log_l(repo, base, 9, 9, "a.c") == [edit]
    assert culprits_of(repo) == [[edit]]


def test_a_deletion_a_line_away_from_lines_upstream_deleted_is_no_culprit(tmp_path) -> None:
    """Upstream deletes line 10, which p1 changes, then line 8: the hunk is the point where
    line 10 was, line 9 between it and the second deletion (no diff can place that deletion
    next to the point): the culprit is the first deletion, not the second."""
    repo, base = one_patch_fork(tmp_path, lines=20, line=10)
    replace_line(repo, "a.c", "a 10\n", "")
    deleted = repo.commit_all("upstream deletes line 10")
    replace_line(repo, "a.c", "a 8\n", "")
    repo.commit_all("upstream deletes line 8")
    repo.git("checkout", "-q", "main")
    # the lines around the point: a 9 and a 11 (lines 8 and 9 at up)
    assert log_l(repo, base, 8, 9, "a.c") == [deleted]
    assert culprits_of(repo) == [[deleted]]


def test_a_deletion_slides_only_over_the_lines_it_repeats() -> None:
    """Where else a diff may place a deletion: taking out ``g`` and the blank line after it
    is taking out the blank line before it and ``g`` (one line up); a unique line beside it
    does not move."""
    lines = ["f", "", "g", "", "h"]
    assert slides(lines, 3, 5) == (1, 0)  # "g", "" (lines 3-4)
    assert slides(lines, 2, 4) == (0, 1)  # "", "g" (lines 2-3)
    assert slides(lines, 3, 4) == (0, 0)  # "g"
    assert slides(["}", "}", "}"], 1, 2) == (0, 2)


def adjacent_fork(tmp_path: Path, taken: bool) -> tuple[Repo, str, str]:
    """p2 edits line 7; upstream deletes line 8. ``taken``: p1 deletes line 8 before p2, p2
    edits line 15 too, and upstream then edits lines 7 and 15 (p2's conflict at line 15 stays
    when p1 is applied: it is primary)."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    if taken:
        replace_line(repo, "a.c", "a 8\n", "")
        repo.ps("new", "p1", "--tag", "essential", "a.c")
        replace_line(repo, "a.c", "a 15\n", "a 15 mine\n")
    replace_line(repo, "a.c", "a 7\n", "a 7 mine\n")
    repo.ps("new", "p2", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 8\n", "")
    deleted = repo.commit_all("upstream deletes line 8")
    edit = deleted
    if taken:
        replace_line(repo, "a.c", "a 7\n", "a 7 upstream\n")
        replace_line(repo, "a.c", "a 15\n", "a 15 upstream\n")
        edit = repo.commit_all("upstream changes lines 7 and 15")
    repo.git("checkout", "-q", "main")
    return repo, deleted, edit


def test_a_deletion_next_to_a_hunk_the_patch_s_base_made_too_is_no_culprit(tmp_path) -> None:
    """Upstream deletes line 8 as p1 does, then changes line 7, which p2 changes: the
    deletion next to p2's hunk is no line of it (p2's base lacks line 8 as well): the culprit
    is the change of line 7 alone (label seed 7981786)."""
    repo, _deleted, edit = adjacent_fork(tmp_path, taken=True)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    (p2,) = [c for c in data["conflicts"] if c["patch"] == "p2.patch"]
    assert p2["kind"] == "primary"
    assert [h["expected"] for h in p2["hunks"]] == [["a 7"], ["a 15"]]
    assert [[u["commit"] for u in h["upstream_commits"]] for h in p2["hunks"]] == [[edit]] * 2


def test_a_deletion_next_to_a_hunk_that_makes_the_conflict_is_its_culprit(tmp_path) -> None:
    """Upstream deletes line 8 only; p2 changes line 7, next to it (git: changes to lines
    side by side conflict): the hunk's base holds line 8, and its deletion is the culprit."""
    repo, deleted, _edit = adjacent_fork(tmp_path, taken=False)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    (hunk,) = data["conflicts"][0]["hunks"]
    assert hunk["expected"] == ["a 7", "a 8"]
    assert [u["commit"] for u in hunk["upstream_commits"]] == [deleted]
