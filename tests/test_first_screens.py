"""What a new user meets first on real material (round 10's reading of Debian's openssh
series and a skip): each screen says what is true and stays a screen."""

from __future__ import annotations

from pathlib import Path

from .conftest import make_repo, numbered, replace_line
from .test_defer import drift


def test_importing_a_series_the_tree_holds_already_names_why_within_a_screen(
    tmp_path: Path,
) -> None:
    """A Debian source tree kept with its patches applied (openssh's): importing its quilt
    series onto HEAD fails on the first patch. git apply's words (two lines a file: 80 for
    openssh's gssapi.patch) are capped, and the note says the files the patch creates
    exist already; --verbose shows every line; nothing changes."""
    files = {f"f{i}.c": numbered(20, f"f{i}") for i in range(20)}
    repo = make_repo(tmp_path / "fork", files)
    patch = "".join(
        f"--- a/f{i}.c\n+++ b/f{i}.c\n@@ -4,3 +4,3 @@\n f{i} 4\n-f{i} 5\n+f{i} 5 debian\n f{i} 6\n"
        for i in range(20)
    )
    patch += "--- /dev/null\n+++ b/new.c\n@@ -0,0 +1 @@\n+new\n"
    repo.write("debian/patches/series", "one.patch\n")
    repo.write("debian/patches/one.patch", patch)
    for i in range(20):  # the tree holds the patch already
        replace_line(repo, f"f{i}.c", f"f{i} 5\n", f"f{i} 5 debian\n")
    repo.write("new.c", "new\n")
    repo.commit_all("patches applied")
    before = repo.state()
    err = repo.ps("import", "quilt", "debian/patches", "-t", "essential", code=1).stderr
    assert repo.state() == before
    assert "every file the patch creates exists already (new.c): the base may hold" in err
    assert "  ... and 30 more line(s) (--verbose shows them)" in err, err
    assert err.count("patch does not apply") + err.count("already exists") <= 12
    full = repo.ps(
        "import", "quilt", "debian/patches", "-t", "essential", "--verbose", code=1
    ).stderr
    assert full.count(": patch does not apply") == 20 and "more line(s)" not in full


def test_a_skip_that_defers_knock_ons_only_counts_no_primary(tmp_path: Path) -> None:
    """p1 conflicts; the skip defers it and p2, its knock-on: the line counting what the skip's
    replay deferred said "0 primary (upstream changed the lines), 1 knock-on"."""
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    out = repo.ps("refresh", "--skip").stdout
    assert "deferred: 1 knock-on (an earlier patch is missing)\n" in out, out
    assert "0 primary" not in out
    assert "      + 1 knock-on(s) waiting for it: p2.patch" in out


def test_created_but_there_names_the_files_and_says_the_base_may_hold_the_patch() -> None:
    from patchstack.model.misfits import created_but_there

    assert created_but_there(["a.c"], []) == ""
    assert created_but_there(["a.c", "b.c"], ["b.c"]) == (
        "1 of the 2 files the patch creates exist already: b.c"
    )
    every = created_but_there(list("abcde"), list("abcde"))
    assert every.startswith("every file the patch creates exists already (a, b, c and 2 more)")


def test_a_stop_at_a_file_upstream_deleted_says_continue_keeps_the_patchs_version(
    tmp_path: Path,
) -> None:
    """Megatron-LM's dev branch edits CODEOWNERS, which main deleted: the stop has no conflict
    markers (modify/delete), and the hint said only "resolve the conflict markers"; it says
    the work tree holds the patch's version, which --continue keeps."""
    repo = make_repo(tmp_path / "fork", {"OWNERS": numbered(10, "o"), "a.py": numbered(5, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "OWNERS", "o 3\n", "o 3 mine\n")
    repo.ps("new", "owners", "--tag", "essential", "OWNERS")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.git("rm", "-q", "OWNERS")
    repo.commit_all("upstream drops OWNERS")
    repo.git("checkout", "-q", "main")
    err = repo.ps("refresh", "--onto", "up", code=1).stderr
    assert (
        "hint: upstream deleted OWNERS; the work tree holds the patch's version (no conflict"
        " markers there): 'patchstack refresh --continue' keeps it in the patch; to take the"
        " deletion instead, 'rm' it first (not 'git rm': the index does not have it)"
    ) in err, err
    repo.ps("refresh", "--continue")
    assert "o 3 mine\n" in repo.git("show", "HEAD:OWNERS")


def test_status_at_a_stop_says_it_stopped_once(tmp_path: Path) -> None:
    """kernel-timers' first stop: status's first line says where the refresh stopped, and a
    line "! a refresh is stopped at a conflict" said it again under the patches, and a
    warning with its hint on stderr a third time (other readers keep the warning)."""
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    said = repo.ps("status", code=None)
    out = said.stdout
    assert out.startswith("refresh stopped at a conflict in p1.patch"), out
    assert out.count("stopped at a conflict") == 1, out
    assert "stopped" not in said.stderr, said.stderr
    assert "warning: a refresh is stopped" in repo.ps("series", code=None).stderr
