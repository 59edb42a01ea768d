"""The label oracle's own definitions (`label_oracle`, `label_days`), each checked on a case
where the old definition judged wrong: a pure deletion's evidence, a no-op that leans on a
missing patch, and the reference of a deferred patch brought back past a patch marked
upstream."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, replace_line
from .label_days import Day, bring_back, stack_of
from .label_oracle import Oracle, regions
from .test_verdicts import debug_line_drift


def test_a_deletion_of_a_line_no_upstream_version_had_is_not_upstreams_doing(
    tmp_path: Path,
) -> None:
    """p3 only deletes p1's DEBUG line: merged onto 'upstream takes p2' it changes nothing,
    onto its parent it conflicts (p2's context is missing), and the commit adds no line p3
    adds (it adds none): the old definition held. No upstream version had DEBUG: that commit
    did not bring p3's change."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base, up = o.git.run("merge-base", "main", "up").strip(), o.git.rev("up")
    commits = dict(stack_of(repo, base))
    o.upstream_evidence("check", "p3.patch", commits["p3.patch"], up, base, up)
    assert len(o.findings) == 1 and "DEBUG" in o.findings[0], o.findings
    assert o.judged == {"evidence": 1}


def test_a_follow_up_conflicting_without_the_patch_it_leans_on_is_a_no_op(
    tmp_path: Path,
) -> None:
    """Without p1 and p2, p3 conflicts on the old base (it deletes a line p1 made, next to
    p2's change): it leans on them, and no upstream commit brought its change, so git calls
    it a no-op (the old reference only took a patch empty there)."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base = o.git.run("merge-base", "main", "up").strip()
    day = Day(o, "day one", base, o.git.rev("up"), "up")
    assert "p3.patch" in day.ref.empty and "p3.patch" in day.self_noop


def test_a_patch_marked_upstream_is_picked_again_in_the_bring_back_reference(
    tmp_path: Path,
) -> None:
    """A series that marks p3 upstream (as an earlier patchstack wrote it, 'in' the commit
    that took p2): ``push p1`` places p3's change again after p1, which removes p1's DEBUG,
    as git rebase of the branch as written does (the old reference left p3 out)."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base, up = o.git.run("merge-base", "main", "up").strip(), o.git.rev("up")
    original = dict(stack_of(repo, base))
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    lines = repo.read("patches/series").splitlines(keepends=True)
    deferral = next(ln for ln in lines if ln.startswith("# deferred: p3.patch "))
    marked = f"# upstream: p3.patch {deferral.split()[3]} in {up}\n"
    repo.write("patches/series", "".join(marked if ln == deferral else ln for ln in lines))
    assert "(the base holds it" in repo.ps("status").stdout
    bring_back(o, "p1.patch", up, original)
    assert o.judged == {"push": 1} and o.brought == {"p1.patch"}
    assert not o.findings, o.findings
    assert "DEBUG" not in repo.read("b.txt")


def test_a_deletion_beside_the_pinned_line_that_the_hunks_base_holds_there_touches_it(
    tmp_path: Path,
) -> None:
    """Label seed 5031 made small: the hunk's base side is p1's block and ``v3``; up2 had
    wrapped ``v2`` in a block, and its revert takes out the ``}`` right above ``v3``, the
    ``}`` the hunk's base holds there. The span was pinned on ``v3`` alone (a ``}`` is no
    line of its own), so the revert's deletion one line above it was not seen."""
    wrapped = "int f(int x)\n{\n    if (up) {\n    int v2 = 2;\n    }\n    int v3 = 3;\n}\n"
    repo = make_repo(tmp_path / "fork", {"f.c": wrapped})
    repo.write("f.c", wrapped.replace("    if (up) {\n", "").replace("2;\n    }\n", "2;\n"))
    revert = repo.commit_all("revert the wrap")
    o = Oracle(repo)
    expected = ["    if (p1) {", "        p1_call(1);", "    }", "    int v3 = 3;"]
    assert o.touches(revert, "f.c", expected, 6)
    assert not o.touches(revert, "f.c", expected[1:2] + expected[3:], 6)


def test_a_commit_that_only_renames_the_file_touches_none_of_its_lines(tmp_path: Path) -> None:
    """A commit touches lines of a file iff its diff changes them, renames detected as ``git
    log -L`` follows them: renaming ``f.c`` changes no line of it (the old definition read
    ``git diff -- f.c``, a deletion of every line); a rename that also edits a line in the
    span touches it, one that edits a line outside does not."""
    body = "".join(f"int v{i} = {i};\n" for i in range(20))
    repo = make_repo(tmp_path / "fork", {"f.c": body})
    expected = [f"int v{i} = {i};" for i in range(8, 12)]
    repo.git("mv", "f.c", "g.c")
    moved = repo.commit_all("rename f.c to g.c")
    repo.git("checkout", "-q", moved + "^")
    repo.git("mv", "f.c", "h.c")
    repo.write("h.c", body.replace("v9 = 9", "v9 = 90"))
    inside = repo.commit_all("rename f.c to h.c, and edit line 10")
    repo.git("checkout", "-q", moved + "^")
    repo.git("mv", "f.c", "k.c")
    repo.write("k.c", body.replace("v18 = 18", "v18 = 180"))
    outside = repo.commit_all("rename f.c to k.c, and edit line 19")
    o = Oracle(repo)
    assert not o.touches(moved, "f.c", expected, 9)
    assert o.touches(inside, "f.c", expected, 9)
    assert not o.touches(outside, "f.c", expected, 9)


def test_a_conflict_is_placed_by_gits_merge_with_patchstacks_markers(
    tmp_path: Path,
) -> None:
    """Label seed 5170 made small: p2 deletes p1's call (p1 conflicts: it is missing) and
    inserts a line after ``v4``, which upstream wraps in a block: two conflict regions with
    diff3 markers, as patchstack merges, the second's upstream side upstream's ``}``, which
    ``git log -L`` names at its place. The oracle's merge had git's default markers, which
    join the two regions into one: it found no second region, and took the ``}`` nearest
    the hunk's line in patchstack's marked file, another block's, which no commit changed."""
    body = "int f(int x)\n{\n    int v0 = 0;\n    int v3 = 3;\n    int v4 = 4;\n"
    body += "    if (x) {\n        check(x);\n    }\n    return x;\n}\n"
    repo = make_repo(tmp_path / "fork", {"f.c": body})
    base = repo.head()
    repo.ps("init")
    block = "    int v3 = 3;\n    if (p1) {\n        p1_call(1);\n    }\n"
    repo.write("f.c", body.replace("    int v3 = 3;\n", block).replace("v0 = 0", "v0 = 1"))
    repo.ps("new", "p1", "-t", "essential", "f.c")
    replace_line(repo, "f.c", "        p1_call(1);\n", "")
    replace_line(repo, "f.c", "    int v4 = 4;\n", "    int v4 = 4;\n    p2_debug(2);\n")
    repo.ps("new", "p2", "-t", "essential", "f.c")
    repo.git("checkout", "-q", "-b", "up", base)
    wrap = "    if (up) {\n    int v4 = 4;\n    }\n"
    repo.write("f.c", body.replace("    int v4 = 4;\n", wrap).replace("v0 = 0", "v0 = 2"))
    up = repo.commit_all("up: wrap v4 in a block; edit v0")
    repo.git("checkout", "-q", "main")
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    report = next(r for r in checked["conflicts"] if r["patch"] == "p2.patch")
    assert [h["now"] for h in report["hunks"]] == [["    if (up) {"], ["    }"]], report
    assert any(c["commit"] == up for h in report["hunks"] for c in h["upstream_commits"])
    o = Oracle(repo)
    day = Day(o, "day one", base, up, "up")
    o.culprits("check", report, base, up, day.merged("p2.patch"))
    assert not o.findings, o.findings
    assert o.judged.get("culprit")


def test_a_held_patchs_hunk_is_placed_by_the_region_with_its_sides(tmp_path: Path) -> None:
    """Label seed 6531759 made small: p3 inserts a debug line after ``v4``; p2 deletes it and
    inserts a block after ``v1``; upstream wraps ``v4`` in a block, then ``v1``. p3
    conflicts, and p2 is held with it: its report is its conflict with p3 applied, one hunk
    (after ``v1``, whose ``}`` the second wrap added). git's merge of p2 without p3 has one
    region more, before it (the debug line's): the oracle took the first region's place,
    found the first wrap's ``}`` there and judged the second wrap a wrong culprit."""
    body = "int f(int x)\n{\n    int v4 = 4;\n    if (x) {\n        check(x);\n    }\n"
    body += "    int v1 = 1;\n    int v2 = 2;\n    return x;\n}\n"
    repo = make_repo(tmp_path / "fork", {"f.c": body})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "f.c", "    int v4 = 4;\n", "    int v4 = 4;\n    p3_debug(5);\n")
    repo.ps("new", "p1", "-t", "essential", "f.c")
    replace_line(repo, "f.c", "    p3_debug(5);\n", "")
    block = "    int v1 = 1;\n    if (p2) {\n        p2_call(7);\n    }\n"
    replace_line(repo, "f.c", "    int v1 = 1;\n", block)
    repo.ps("new", "p2", "-t", "essential", "f.c")
    repo.git("checkout", "-q", "-b", "up", base)
    one = body.replace("    int v4 = 4;\n", "    if (up1) {\n    int v4 = 4;\n    }\n")
    repo.write("f.c", one)
    repo.commit_all("up1: wrap v4 in a block")
    repo.write("f.c", one.replace("    int v1 = 1;\n", "    if (up2) {\n    int v1 = 1;\n    }\n"))
    up = repo.commit_all("up2: wrap v1 in a block")
    repo.git("checkout", "-q", "main")
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    report = next(r for r in checked["conflicts"] if r["patch"] == "p2.patch")
    assert report["held"] and report["root"] == "p1.patch", report
    assert [h["now"] for h in report["hunks"]] == [["    }"]], report
    assert [c["commit"] for c in report["hunks"][0]["upstream_commits"]] == [up], report
    o = Oracle(repo)
    day = Day(o, "day one", base, up, "up")
    day.against({"p2.patch"})
    assert len(regions(day.merged("p2.patch")["f.c"])[0]) == 2
    o.culprits("check", report, base, up, day.merged("p2.patch"))
    assert not o.findings, o.findings
    assert o.judged.get("culprit")


def chained_knock_ons(tmp_path: Path) -> tuple[Repo, str, str]:
    """kernel-timers' day one made small (feat-new-flags.patch, a knock-on of
    SGLANG_FIX_DSV4_BASE_MODEL_LOAD.patch, itself a knock-on of implementation.patch): p1
    adds a line in two places of f.c and edits gone.c, which upstream deletes (a
    modify/delete: no markers); p2 edits p1's first line, p3 both. (The fork, its base, up.)"""
    body = "int f(void)\n{\n" + "".join(f"    int v{i} = {i};\n" for i in range(1, 9))
    body += "    return 0;\n}\n"
    repo = make_repo(tmp_path / "fork", {"f.c": body, "gone.c": "int gone = 1;\n"})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "f.c", "    int v1 = 1;\n", "    int v1 = 1;\n    p1_one(1);\n")
    replace_line(repo, "f.c", "    int v8 = 8;\n", "    int v8 = 8;\n    p1_two(2);\n")
    repo.write("gone.c", "int gone = 2;\n")
    repo.ps("new", "p1", "-t", "essential", "f.c", "gone.c")
    replace_line(repo, "f.c", "p1_one(1)", "p1_one(11)")
    repo.ps("new", "p2", "-t", "essential", "f.c")
    replace_line(repo, "f.c", "p1_one(11)", "p1_one(111)")
    replace_line(repo, "f.c", "p1_two(2)", "p1_two(22)")
    repo.ps("new", "p3", "-t", "essential", "f.c")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.git("rm", "-q", "gone.c")
    up = repo.commit_all("up: delete gone.c")
    repo.git("checkout", "-q", "main")
    return repo, base, up


def test_a_knock_on_of_a_knock_on_whose_first_root_git_cannot_take_is_unknown(
    tmp_path: Path,
) -> None:
    """`chained_knock_ons`: patchstack calls p1 primary, p2 a knock-on of p1, p3 of p2, p1
    taken with its modify/delete as merge-ort leaves it (`engine.triage`). The oracle could
    not take p1 (`resolved`: no markers), so its chain left p1 out, took p2 alone, and p3
    still conflicted: it refuted the label. It cannot tell there (unknown), as for a root of
    its own; by hand, git agrees with patchstack."""
    repo, base, up = chained_knock_ons(tmp_path)
    checked = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    roots = {r["patch"]: (r["kind"], r["root"]) for r in checked["conflicts"]}
    assert roots == {
        "p1.patch": ("primary", None),
        "p2.patch": ("knock-on", "p1.patch"),
        "p3.patch": ("knock-on", "p2.patch"),
    }, roots
    o = Oracle(repo)
    day = Day(o, "day one", base, up, "up")
    day.check()
    assert not o.findings, o.findings
    assert o.judged["knock-on"] == 2
    # by hand: p1 with its modify/delete as merge-ort leaves it, then p2: p3 applies
    commits = dict(stack_of(repo, base))
    verdict, tree, paths = o.git.pick(up, commits["p1.patch"])
    assert verdict == "conflict" and paths == ["gone.c"]
    head = o.git.commit(tree, up)
    for name in ("p2.patch", "p3.patch"):
        verdict, tree, paths = o.git.pick(head, commits[name])
        assert verdict == "clean", (name, paths)
        head = o.git.commit(tree, head)
