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


PASTED = """Fix b 3

As the reviewer suggested:

diff --git a/zzz b/zzz
--- a/zzz
+++ b/zzz
@@ -1 +1 @@
-a
+b
"""


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
    replace_line(repo, "a.py", "a 35\n", "a 35 B\n")
    repo.commit_all("Patch B")
    at["tangle"] = _merge(repo, "up2", "Merge up2 into tangle", {"a.py": ("", "a 20 U AB\n")})
    # tossed: as tangle, but the merge takes upstream's a 20: nothing of patch A is left.
    repo.git("checkout", "-q", "-b", "tossed", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 20 A\n", "a 20 AB\n")
    replace_line(repo, "a.py", "a 35\n", "a 35 B\n")
    repo.commit_all("Patch B")
    _merge(repo, "up2", "Merge up2 into tossed", {"a.py": ("", "a 20 U\n")})
    # soaked: A (a 20), S (a 35), B (a 20 again); the merge keeps all. The import stops at A.
    repo.git("checkout", "-q", "-b", "soaked", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 35\n", "a 35 S\n")
    repo.commit_all("Patch S")
    replace_line(repo, "a.py", "a 20 A\n", "a 20 AB\n")
    repo.commit_all("Patch B")
    at["soaked"] = _merge(repo, "up2", "Merge up2 into soaked", {"a.py": ("", "a 20 U AB\n")})
    # tangle0: as tangle, after a patch of its own (b 3): the import stops with one placed.
    repo.git("checkout", "-q", "-b", "tangle0", at["snapshot"])
    replace_line(repo, "b.py", "b 3\n", "b 3 zero\n")
    repo.commit_all("Patch Zero")
    replace_line(repo, "a.py", "a 20\n", "a 20 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 20 A\n", "a 20 AB\n")
    repo.commit_all("Patch B")
    _merge(repo, "up2", "Merge up2 into tangle0", {"a.py": ("", "a 20 U AB\n")})
    # tangle2: as tangle, twice (a 20 and a 30): two patches the merge's tree cannot settle.
    repo.git("checkout", "-q", "-b", "up4", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 U\n")
    replace_line(repo, "a.py", "a 30\n", "a 30 U\n")
    repo.commit_all("Upstream: a 20 and a 30")
    repo.git("checkout", "-q", "-b", "tangle2", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 30\n", "a 30 C\n")
    repo.commit_all("Patch C")
    replace_line(repo, "a.py", "a 20 A\n", "a 20 AB\n")
    replace_line(repo, "a.py", "a 30 C\n", "a 30 CB\n")
    repo.commit_all("Patch B")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "up4", check=False)
    text = repo.read("a.py").split("<<<<<<<")
    assert len(text) == 3, "two conflict regions"
    repo.write(
        "a.py", numbered(40, "a").replace("a 20\n", "a 20 U AB\n").replace("a 30\n", "a 30 U CB\n")
    )
    repo.git("add", "a.py")
    repo.git("commit", "-q", "-m", "Merge up4 into tangle2")
    # gone: as tangle, but the merge resolves by deleting a.py (modify/delete).
    repo.git("checkout", "-q", "-b", "gone", at["snapshot"])
    replace_line(repo, "a.py", "a 20\n", "a 20 X\n")
    repo.commit_all("Patch X")
    replace_line(repo, "a.py", "a 30\n", "a 30 Y\n")
    repo.commit_all("Patch Y")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "up2", check=False)
    repo.git("rm", "-q", "-f", "a.py")
    repo.git("commit", "-q", "-m", "Merge up2 into gone, without a.py")
    # split: P1 (a 10) conflicts with upstream's a 11; P2 (a 30) changes a.py after it.
    repo.git("checkout", "-q", "-b", "up3", at["snapshot"])
    replace_line(repo, "a.py", "a 11\n", "a 11 U\n")
    at["up3"] = repo.commit_all("Upstream: a 11")
    repo.git("checkout", "-q", "-b", "split", at["snapshot"])
    replace_line(repo, "a.py", "a 10\n", "a 10 P1\n")
    repo.commit_all("P1 a 10")
    replace_line(repo, "a.py", "a 30\n", "a 30 P2\n")
    repo.commit_all("P2 a 30")
    _merge(repo, "up3", "Merge up3 into split", {"a.py": ("", "a 10 P1\na 11 U\n")})
    # cherry: a pick of upstream's b 20 that the merge of main then brings again.
    repo.git("checkout", "-q", "-b", "cherry", at["snapshot"])
    repo.git("cherry-pick", at["u2"])
    replace_line(repo, "c.py", "c 10\n", "c 10 mine\n")
    repo.commit_all("Own c 10")
    _merge(repo, "main", "Merge main into cherry", {})
    # side2: a side branch that merged main itself, merged into side2.
    repo.git("checkout", "-q", "-b", "topic", at["snapshot"])
    repo.write("e.py", "topic\n")
    repo.commit_all("Topic adds e.py")
    _merge(repo, "main", "Merge main into topic", {})
    repo.git("checkout", "-q", "-b", "side2", at["snapshot"])
    replace_line(repo, "b.py", "b 15\n", "b 15 mine\n")
    repo.commit_all("S own b 15")
    _merge(repo, "topic", "Merge branch 'topic' into side2", {})
    # pasted: a commit message that holds a diff.
    repo.git("checkout", "-q", "-b", "pasted", at["snapshot"])
    replace_line(repo, "b.py", "b 3\n", "b 3 fixed\n")
    repo.commit_all(PASTED)
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
    assert f"# base: {at['u2']} main\n" in base  # the last upstream commit the branch merged
    patches = repo.path / "patches"
    # The patch carried onto upstream, with the merge's resolution as its context.
    assert " a 6 upstream" in (patches / "Add-a-fork-line.patch").read_text()
    assert "+feature" in (patches / "Merge-branch-feature-into-fork.patch").read_text()
    fixup = (patches / "fixup-Merge-main-into-fork-again.patch").read_text()
    assert "+c 35 evil" in fixup and "Subject: [PATCH] fixup: Merge main into fork again" in fixup
    assert pushed_tree(repo) == repo.tree(at["l4"])


def test_an_earlier_patch_takes_the_merges_version_less_the_later_patches_changes(fork):
    repo, at = fork
    out = repo.ps("import", "branch", "split", "-u", "up3", "-t", "essential").stdout
    assert f"-> upstream {at['up3'][:12]}: 2 patches carried, 1 conflict settled" in out
    p1 = (repo.path / "patches" / "P1-a-10.patch").read_text()
    assert "+a 10 P1" in p1 and " a 11 U" in p1 and "a 30 P2" not in p1
    repo.git("switch", "-q", "--detach", "up3")
    assert pushed_tree(repo) == repo.tree("split")


def test_a_patch_upstream_brings_again_is_left_out_and_said(fork) -> None:
    repo, at = fork
    out = repo.ps("import", "branch", "cherry", "-u", "main", "-t", "essential").stdout
    assert "as 1 patch: 1 from commits" in out
    assert "1 patch upstream already held" in out
    assert (
        "left out 1 patch an upstream merge already held:\n  Upstream-b-20.patch (at merge" in out
    )
    assert [n for n, _t in series(repo)] == ["Own-c-10.patch"]
    repo.git("switch", "-q", "--detach", "main")
    assert pushed_tree(repo) == repo.tree("cherry")


def test_a_patch_a_merge_resolved_to_nothing_is_left_out_as_that_not_as_held(
    built: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Found on qwen_vl_eagle3_offload and jamesliu/kimi-v2-iceberg (round twelve): a patch
    whose conflict at an upstream merge was settled to nothing was reported as one "upstream
    already held", and listed to review among those that took the merge's version, though it
    is not in the series. Git decides: its pick onto upstream conflicts, so upstream does not
    hold it; the merge's resolution threw its change away."""
    at = built[1]
    args = ("import", "branch", "tossed", "-u", "up2", "-t", "essential")
    for how in ("take-merge", "by hand", "json"):
        repo = copy_repo(built[0], tmp_path / how.replace(" ", "-"))
        if how == "take-merge":
            patch_a = repo.git("rev-list", "--reverse", f"{at['snapshot']}..tossed^1").split()[0]
            repo.git("switch", "-q", "--detach", "up2")
            repo.git("cherry-pick", patch_a, check=False)
            assert repo.git("ls-files", "-u"), "git: Patch A's pick onto upstream conflicts"
            repo.git("cherry-pick", "--abort")
        on(repo, "tossed")
        if how == "by hand":  # the import stops at A; settled as the merge did: upstream's line
            assert "patch Patch-A.patch" in repo.ps(*args, code=1).stdout
            resolve(repo, "a.py", "a 20 U\n")
            out = repo.ps("import", "branch", "--continue").stdout
        elif how == "json":
            data = json.loads(repo.ps(*args, "--take-merge", "--json").stdout)
            (merge,) = data["merges"]
            assert merge["left_out"] == [] and merge["resolved_to_nothing"] == ["Patch-A.patch"]
            continue
        else:
            out = repo.ps(*args, "--take-merge").stdout
        assert "upstream already held" not in out and "review them" not in out
        assert "1 patch resolved to nothing" in out
        assert (
            "left out 1 patch whose conflict at a merge was resolved to nothing (upstream does"
            " not hold it):\n  Patch-A.patch (at merge" in out
        )
        assert [n for n, _t in series(repo)] == ["Patch-B.patch"]
        repo.git("switch", "-q", "--detach", "up2")
        assert pushed_tree(repo) == repo.tree("tossed")


def test_a_patch_the_ones_before_made_already_is_left_out_as_that_not_as_held(fork) -> None:
    """qwen_vl_eagle3_offload imported as its first stop says ('git checkout MERGE -- FILE':
    the later changes come with the patch): a later patch whose change came along, its
    placement then clean and empty, was called one "upstream already held". Git: its pick onto
    upstream is not empty, so upstream does not hold it."""
    repo, at = fork
    patch_s = repo.git("rev-list", "--reverse", f"{at['snapshot']}..soaked^1").split()[1]
    repo.git("switch", "-q", "--detach", "up2")
    repo.git("cherry-pick", patch_s)
    assert repo.git("diff", "--stat", "HEAD~1", "HEAD"), "git: Patch S's pick is not empty"
    on(repo, "soaked")
    out = repo.ps("import", "branch", "soaked", "-u", "up2", "-t", "essential", code=1).stdout
    assert "patch Patch-A.patch" in out
    repo.git("checkout", at["soaked"], "--", "a.py")  # the stop's own command
    out = repo.ps("import", "branch", "--continue").stdout
    assert "upstream already held" not in out
    assert "1 patch already made by the patches before" in out
    assert (
        "left out 1 patch the patches before it at a merge already made (one took the merge's"
        " version, this change with it; upstream does not hold it):\n  Patch-S.patch" in out
    )
    assert "resolved to nothing (upstream does not hold it):\n  Patch-B.patch" in out
    assert [n for n, _t in series(repo)] == ["Patch-A.patch"]
    repo.git("switch", "-q", "--detach", "up2")
    assert pushed_tree(repo) == repo.tree("soaked")


def test_status_at_a_first_imports_stop_lists_the_patches_placed_so_far(fork) -> None:
    """qwen_vl_eagle3_offload's first stop (round twelve): status said "applied: 0 of 0" and
    "! Merge-pull-request-1-...patch is applied but not in the series" of the patch the
    import had placed before the stop; no series is written until the import ends."""
    repo, _at = fork
    on(repo, "tangle0")
    args = ("import", "branch", "tangle0", "-u", "up2", "-t", "essential")
    assert "patch Patch-A.patch" in repo.ps(*args, code=1).stdout
    out = repo.ps("status", code=1).stdout
    assert "not in the series" not in out and "applied: 0 of 0" not in out
    assert "placed by the import so far: 1\n  + Patch-Zero.patch\n" in out
    assert json.loads(repo.ps("status", "--json", code=1).stdout)["unknown_applied"] == []


def test_a_side_branch_that_merged_upstream_moves_the_base_then_is_one_patch(fork) -> None:
    repo, at = fork
    out = repo.ps("import", "branch", "side2", "-u", "main", "-t", "essential").stdout
    assert "merges: 1 (0 of upstream, 1 of side branches); carried onto upstream 1 time" in out
    assert f"-> upstream {at['u2'][:12]}: side branch, 1 patch carried" in out
    assert [n for n, _t in series(repo)] == [
        "S-own-b-15.patch",
        "Merge-branch-topic-into-side2.patch",
    ]
    side = (repo.path / "patches" / "Merge-branch-topic-into-side2.patch").read_text()
    assert "+topic" in side and "upstream" not in side  # the side's own change, not main's
    assert f"# base: {at['u2']} main\n" in (repo.path / "patches" / "series").read_text()
    repo.git("switch", "-q", "--detach", "main")
    assert pushed_tree(repo) == repo.tree("side2")


def test_upstream_defaults_to_the_branchs_and_labels_the_base(fork) -> None:
    repo, at = fork
    on(repo, "fork")
    repo.git("branch", "-q", "--set-upstream-to", "main")
    out = repo.ps("import", "branch", "fork", "-t", "essential").stdout
    assert "first-parent commits since main)" in out and "note:" not in out
    status = repo.ps("status").stdout
    assert f"series base: {at['u2'][:12]} (tracks main)" in status


def test_a_diff_pasted_in_a_message_stays_in_the_description(fork) -> None:
    repo, at = fork
    repo.ps("import", "branch", "pasted", "-u", "main", "-t", "essential")
    text = (repo.path / "patches" / "Fix-b-3.patch").read_text()
    assert "\n diff --git a/zzz b/zzz\n --- a/zzz\n+++ b/zzz\n" in text
    assert pushed_tree(repo) == repo.tree("pasted")
    repo.ps("pop", "--all")
    (repo.path / "patches").rename(repo.path / "imported")
    repo.ps("import", "commits", "main..pasted", "-t", "essential")  # the same for commits
    assert (repo.path / "patches" / "Fix-b-3.patch").read_text() == text


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


def test_the_stops_command_takes_the_merges_version_a_deleted_file_too(fork) -> None:
    import re
    import subprocess

    repo, _at = fork
    err = repo.ps("import", "branch", "gone", "-u", "up2", "-t", "essential", code=1).stderr
    command = re.search(r"as it is \(.*?\): '(.*?)'\. 'import", " ".join(err.split()))
    assert command and command.group(1) == "rm -f -- a.py"
    subprocess.run(command.group(1), shell=True, cwd=repo.path, check=True)
    repo.ps("import", "branch", "--continue")
    repo.git("switch", "-q", "--detach", "up2")
    assert pushed_tree(repo) == repo.tree("gone")


def test_take_merge_settles_every_conflict_and_names_the_patch(fork) -> None:
    repo, _at = fork
    args = ("import", "branch", "tangle", "-u", "up2", "--tag", "essential", "--take-merge")
    out = repo.ps(*args).stdout
    assert "1 patch took the merge's version where the later patches' changes did not" in out
    assert "  Patch-A.patch (at merge" in out
    # The merge's lines where B's change and upstream's do not come apart; not B's a 35.
    patch_a = (repo.path / "patches" / "Patch-A.patch").read_text()
    assert "+a 20 U AB" in patch_a and "a 35 B" not in patch_a
    repo.git("switch", "-q", "--detach", "up2")
    assert pushed_tree(repo) == repo.tree("tangle")


def test_continue_take_merge_takes_the_merges_version_at_every_later_conflict(fork) -> None:
    repo, _at = fork
    args = ("import", "branch", "tangle2", "-u", "up4", "--tag", "essential")
    for take_merge in (False, True):
        assert "patch Patch-A.patch" in repo.ps(*args, code=1).stdout
        resolve(repo, "a.py", "a 20 U A\n")
        if not take_merge:  # Patch C stops too, and the report says how not to stop again
            result = repo.ps("import", "branch", "--continue", code=1)
            assert "patch Patch-C.patch" in result.stdout
            assert "'import branch --continue --take-merge' then takes" in result.stderr
            repo.ps("import", "branch", "--abort")
    out = repo.ps("import", "branch", "--continue", "--take-merge").stdout
    assert "1 resolved by hand" in out and "  Patch-C.patch (at merge" in out
    assert "+a 20 U A\n" in (repo.path / "patches" / "Patch-A.patch").read_text()
    repo.git("switch", "-q", "--detach", "up4")
    assert pushed_tree(repo) == repo.tree("tangle2")


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


def test_the_proof_names_the_first_patch_whose_file_does_not_give_the_branchs_tree(fork):
    """`ending.verify` applies the written patch files as 'push --all' does and compares each
    with the import's chain: a patch file whose tree differs (here: a chain tree changed on
    purpose) refuses the import, naming the patch, its commit and the files."""
    from patchstack.checkout import open_checkout
    from patchstack.errors import PatchstackError
    from patchstack.interop.building import build_chain
    from patchstack.interop.ending import verify
    from patchstack.interop.sources import commit_source
    from patchstack.model.ids import Oid
    from patchstack.model.series import Entry, new_series

    repo, at = fork
    ws = open_checkout(None, str(repo.path))
    try:
        git = ws.git
        commits = git.commit_range(f"{at['snapshot']}..{at['l2']}")
        taken: set[str] = set()
        sources = [commit_source(c, git.tree_of(c.parents[0]), c.tree, taken) for c in commits]
        built, _skipped, _tree = build_chain(
            git, Oid(at["snapshot"]), git.tree_of(at["snapshot"]), sources
        )
        series = new_series(at["snapshot"])
        last = None
        for b in built:
            series = series.insert(Entry(b.source.name, "essential"), last)
            last = b.source.name
        by_name = {b.source.name: b for b in built}
        verify(ws, series, by_name, Oid(repo.tree(at["l2"])), "fork")  # the files give it
        wrong = {**by_name, "Add-a-fork-line.patch": built[0]._replace(tree=built[1].tree)}
        with pytest.raises(PatchstackError) as caught:
            verify(ws, series, wrong, Oid(repo.tree(at["l2"])), "fork")
        assert caught.value.message == (
            "'push --all' would not give fork's tree: Add-a-fork-line.patch (from commit"
            f" {at['l1'][:12]}) differs in b.py"
        )
        with pytest.raises(PatchstackError) as caught:
            verify(ws, series, by_name, Oid(repo.tree(at["l4"])), "fork")
        assert caught.value.message.startswith("'push --all' would not give fork's tree: ")
        assert "c.py" in caught.value.message
    finally:
        ws.git.close()
    assert not (repo.path / "patches").exists()


def test_the_summary_does_not_grow_with_the_branch() -> None:
    from patchstack.cli.branchtext import branch_lines
    from patchstack.interop.branch import BranchResult

    pieces = tuple(
        Piece(f"p{i}.patch", None, "S\n", "A <a@b>", "1 +0000", f"commit {i}", COMMIT)
        for i in range(200)
    )
    taken = tuple(
        Taken(f"{i:040x}", f"{i + 1:040x}", False, 10, 1, whole=("p1.patch",)) for i in range(40)
    )
    walk = Walk("r", "rev", "f", "ref", "essential", False, "b", (), 200, pieces, taken)
    lines = branch_lines(BranchResult(walk, None, 240), verbose=False)
    assert len(lines) <= 15 and "  ... and 35 more merge(s) (--verbose lists them)" in lines
    assert any(ln.startswith("1 patch took the merge's version (40 times) where") for ln in lines)
    assert len(branch_lines(BranchResult(walk, None, 240), verbose=True)) > 240


def test_ours_side_keeps_the_first_side_of_each_region_and_refuses_what_git_does_not_write():
    from patchstack.model.conflict import ours_side

    merged = (
        b"a\n<<<<<<< merge\nM1\r\nM2\n||||||| base\nB\n=======\nT\n>>>>>>> without\nz\n"
        b"<<<<<<< merge\nM3\n=======\nT3\n>>>>>>> without\n"
    )
    assert ours_side(merged) == b"a\nM1\r\nM2\nz\nM3\n"
    assert ours_side(b"a\n<<<<<<< x\nb\n") is None  # never closed
    assert ours_side(b">>>>>>> x\n") is None and ours_side(b"a\n=======\nb\n") == b"a\n=======\nb\n"


def test_json_says_the_walk_and_the_import_or_where_it_stopped(fork) -> None:
    """Each document is checked against schemas/import-branch.json by `Repo.ps`."""
    repo, at = fork
    done = json.loads(
        repo.ps("import", "branch", "split", "-u", "up3", "-t", "essential", "--json").stdout
    )
    assert done["state"] == "done" and done["base"] == at["up3"] and done["stopped"] is None
    assert [p["name"] for p in done["pieces"]] == ["P1-a-10.patch", "P2-a-30.patch"]
    assert done["merges"][0]["settled"] == 1 and done["import"]["created"] is True
    assert [p["name"] for p in done["import"]["patches"]] == ["P1-a-10.patch", "P2-a-30.patch"]
    repo.ps("undo")
    result = repo.ps("import", "branch", "tangle", "-u", "up2", "-t", "essential", "--json", code=1)
    stopped = json.loads(result.stdout)
    assert stopped["state"] == "stopped" and stopped["import"] is None
    assert stopped["stopped"]["conflict"]["patch"] == "Patch-A.patch"
    assert stopped["stopped"]["merge"] == at["tangle"] and stopped["stopped"]["commit"] == 3
    aborted = json.loads(repo.ps("import", "branch", "--abort", "--json").stdout)
    assert aborted["state"] == "aborted"


def test_a_stop_on_code_upstream_moved_proposes_where_it_went(tmp_path: Path) -> None:
    """Upstream moved a.py's lines 21-40 into lib/moved.py (with much new code); the branch's
    Patch A edits a 30, Patch B edits it again and a 5, then the branch merged upstream. The
    merge's tree cannot settle Patch A's conflict (Patch B changes the same line after it): the
    import stops with Patch A's hunk carried where its lines went, as a refresh's stop does."""
    filler = "".join(f"new {i}\n" for i in range(120))
    old = numbered(40, "a")
    kept, gone = old.split("a 21\n")[0], "a 21\n" + old.split("a 21\n")[1]
    repo = make_repo(tmp_path / "fork", {"a.py": old, "b.py": "b\n"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.write("a.py", kept)
    repo.write("lib/moved.py", filler + gone)
    repo.commit_all("Move the second half of a.py into lib/moved.py")
    repo.git("checkout", "-q", "-b", "feat", base)
    replace_line(repo, "a.py", "a 30\n", "a 30 A\n")
    repo.commit_all("Patch A")
    replace_line(repo, "a.py", "a 30 A\n", "a 30 AB\n")
    replace_line(repo, "a.py", "a 5\n", "a 5 B\n")
    repo.commit_all("Patch B")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "up", check=False)
    repo.write("a.py", kept.replace("a 5\n", "a 5 B\n"))
    repo.write("lib/moved.py", filler + gone.replace("a 30\n", "a 30 AB\n"))
    repo.git("add", "a.py", "lib/moved.py")
    repo.git("commit", "-q", "-m", "Merge up into feat")
    repo.git("checkout", "-q", "main")
    before = repo.state()
    args = ("import", "branch", "feat", "-u", "up", "-t", "essential", "--json")
    data = json.loads(repo.ps(*args, code=1).stdout)
    stopped = data["stopped"]["conflict"]
    assert stopped["patch"] == "Patch-A.patch"
    [relocation] = stopped["relocations"]
    assert relocation["path"] == "a.py"
    assert relocation["commit"] == repo.git("rev-parse", "up").strip()
    assert [(h["dest"], h["line"]) for h in relocation["hunks"]] == [("lib/moved.py", 127)]
    assert repo.read("lib/moved.py") == filler + gone.replace("a 30\n", "a 30 A\n")
    assert repo.read("a.py") == kept  # the hunk went: the file as upstream kept it
    repo.ps("import", "branch", "--abort")
    assert repo.state() == before
