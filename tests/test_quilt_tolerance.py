"""import quilt reads what GNU patch (quilt) accepts, with the same tree and a warning each time.

Each case is a quilt series with one quirk of real-world series; ``quilt push -a`` on the same
base is the reference tree, and ``import quilt`` + ``push --all`` must give exactly that tree
and say what it did, naming the file and line. The same patch in a patchstack series (where no
leniency applies) is refused with exit status 2.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchstack.model.quilt_tolerance import best_name, tolerate

from .conftest import Repo, built_once, make_repo, numbered
from .test_interop import needs_quilt, quilt_push, tree_of_folder

HEAD = "From: A <a@example.org>\nSubject: quirk\n\nWhy.\n---\n"
TEXT_CHANGE = "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n"
CASES = {
    "binary-without-data": (
        HEAD
        + "diff --git a/blob.bin b/blob.bin\nindex 1234567..89abcde 100644\n"
        + "Binary files a/blob.bin and b/blob.bin differ\n"
        + "diff --git a/a.py b/a.py\n"
        + TEXT_CHANGE,
        "8: binary change to 'blob.bin' without data",
    ),
    # glibc's git-updates.diff creates timezone/testdata/XT6 so: quilt makes it empty.
    "binary-created-without-data": (
        HEAD
        + "diff --git a/new.bin b/new.bin\nnew file mode 100644\nindex 0000000..89abcde\n"
        + "Binary files /dev/null and b/new.bin differ\n"
        + "diff --git a/a.py b/a.py\n"
        + TEXT_CHANGE,
        "9: binary file 'new.bin' created without its data: created empty, as GNU patch",
    ),
    "names-disagree": (
        HEAD
        + "diff --git a/a.py b/a.py\n--- a/a\n+++ b/a.py\n"
        + "@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n",
        "GNU patch (quilt) changes 'a.py'",
    ),
    "space-no-tab": (
        HEAD + "--- a/a.py 2020-01-01\n+++ b/a.py 2020-01-01\n"
        "@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n",
        "has a space and no tab: GNU patch (quilt) reads 'a/a.py'",
    ),
    # glibc's hurd-i386/tg-sysvshm.diff: context after a hunk its counts do not cover. GNU
    # patch skips to the next file diff, the '@@' hunk among the skipped lines included.
    "lines-after-a-hunk": (
        HEAD
        + TEXT_CHANGE
        + " a 4\n a 5\n@@ -10 +10 @@\n-a 10\n+a ten\n"
        + "--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n b 1\n-b 2\n+b two\n b 3\n",
        "13: 5 line(s) after the hunk at line 8 that its header '@@ -1,3 +1,3 @@' does not"
        " count: ignored, with the 1 hunk(s) among them, as GNU patch (quilt) ignores them",
    ),
    # ... and its tg-thread-cancel.diff: TopGit's footer after the last hunk.
    "topgit-footer": (
        HEAD + TEXT_CHANGE + "---\ntg: (9a079e2..) t/thread-cancel (depends on: baseline)\n",
        "13: 2 line(s) after the hunk at line 8 that its header '@@ -1,3 +1,3 @@' does not"
        " count: ignored as GNU patch (quilt) ignores them",
    ),
    "crlf-everywhere": (
        (HEAD + "diff --git a/a.py b/a.py\n" + TEXT_CHANGE).replace("\n", "\r\n"),
        "1: every line ends in CR LF; the CRs were stripped",
    ),
}


@built_once
def upstream(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    (repo.path / "blob.bin").write_bytes(bytes(range(256)))
    repo.commit_all("binary")
    return repo


@needs_quilt
@pytest.mark.parametrize("case", sorted(CASES))
def test_quirk_imports_to_quilts_tree_with_a_warning(tmp_path: Path, case: str) -> None:
    text, warning = CASES[case]
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    (qp / "sub").mkdir(parents=True)
    (qp / "sub" / f"{case}.patch").write_bytes(text.encode())
    (qp / "series").write_text(f"sub/{case}.patch\n")
    base = repo.head()
    code, log = quilt_push(repo, base, qp, tmp_path / "quilt")
    assert code == 0, log
    want = tree_of_folder(tmp_path / "quilt", tmp_path)
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential")
    assert f"qp/sub/{case}.patch:" in result.stderr and warning in result.stderr, result.stderr
    repo.ps("push", "--all")
    assert repo.tree() == want, "the pushed tree differs from quilt's"
    if case == "binary-without-data":
        message = repo.git("log", "-1", "--format=%B")
        assert "changed the binary file 'blob.bin' without its data" in message
    # the same patch in the series itself: refused, not guessed
    repo.ps("pop", "--all")
    name = "raw.patch"
    (repo.path / "patches" / name).write_bytes(text.encode())
    with open(repo.path / "patches" / "series", "a") as f:
        f.write(f"{name} # essential\n")
    if case != "space-no-tab":  # (a traditional name is read to the end of the line there)
        repo.ps("push", "--all", code=2)


@needs_quilt
def test_series_in_subfolders_without_base_and_with_non_ascii_names(tmp_path: Path) -> None:
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    (qp / "any").mkdir(parents=True)
    (qp / "any" / "local-fix.diff").write_text(TEXT_CHANGE)
    name = "\u00fcber-caf\u00e9.patch"
    (qp / name).write_text("--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n b 1\n-b 2\n+b zwei\n b 3\n")
    (qp / "series").write_text(f"any/local-fix.diff\n{name}\n", encoding="utf-8")
    code, log = quilt_push(repo, repo.head(), qp, tmp_path / "quilt")
    assert code == 0, log
    want = tree_of_folder(tmp_path / "quilt", tmp_path)
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential")
    assert "any--local-fix.diff" in result.stdout and name in result.stdout
    repo.ps("push", "--all")
    assert repo.tree() == want
    assert name in repo.ps("series").stdout


def test_quilt_patch_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    qp.mkdir()
    (tmp_path / "elsewhere.patch").write_text(TEXT_CHANGE)
    (qp / "x.patch").symlink_to(tmp_path / "elsewhere.patch")
    (qp / "series").write_text("x.patch\n")
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential", code=2)
    assert "qp/series:1: patch file 'x.patch' is a symbolic link out of the quilt" in (
        result.stderr
    )
    assert not (repo.path / "patches").exists()


@needs_quilt
def test_a_hunk_creating_a_file_that_exists_is_refused_and_named(tmp_path: Path) -> None:
    """zsh 5.9's completion-dscverify.diff: ``--- a/x`` with ``@@ -0,0 +1,N @@`` on a file
    upstream already has. quilt puts the lines on top of the file (the content twice); the
    import and a push refuse it, saying why and what to do, and change nothing."""
    repo = upstream(tmp_path)
    text = "--- a/b.py\n+++ b/b.py\n@@ -0,0 +1,2 @@\n+b 1\n+b 2\n"
    qp = tmp_path / "qp"
    qp.mkdir()
    (qp / "created.diff").write_text(text)
    (qp / "series").write_text("created.diff\n")
    code, log = quilt_push(repo, repo.head(), qp, tmp_path / "quilt")
    assert code == 0, log
    quilts = (tmp_path / "quilt" / "b.py").read_text()
    assert quilts == "b 1\nb 2\n" + numbered(20, "b")  # GNU patch's duplicate
    note = "b.py: the hunk on line 3 of the patch is written as creating the file (@@ -0,0 @@)"
    before = repo.state()
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential", code=1)
    assert note in result.stderr and "drop the patch" in result.stderr, result.stderr
    assert repo.state() == before and not (repo.path / "patches").exists()
    repo.ps("init")
    (repo.path / "patches" / "created.diff").write_text(text)
    with open(repo.path / "patches" / "series", "a") as f:
        f.write("created.diff # essential\n")
    before = repo.state()
    assert note in repo.ps("push", "--all", code=1).stderr
    assert repo.state() == before


def test_best_name_follows_gnu_patch() -> None:
    exists = {"src/f.c"}.__contains__
    assert best_name(["src/f", "src/f.c"], exists) == "src/f.c"  # the one that exists
    assert best_name(["a/b/f.c", "f.c"], lambda _p: False) == "f.c"  # fewest components
    assert best_name(["long.c", "s.c"], lambda _p: False) == "s.c"  # shortest base name
    assert best_name(["x.c", "y.c"], lambda _p: False) == "x.c"  # the first on a tie


def test_tolerate_leaves_a_clean_patch_alone() -> None:
    data = ("diff --git a/a.py b/a.py\n" + TEXT_CHANGE).encode()
    assert tolerate(data, "p", 1, lambda _p: True).data == data
    assert tolerate(data, "p", 1, lambda _p: True).warnings == ()


@pytest.fixture(autouse=True)
def _no_leftovers(tmp_path: Path):
    yield
    shutil.rmtree(tmp_path / "quilt", ignore_errors=True)


@needs_quilt
def test_a_p0_entry_reads_its_names_at_p0_as_quilt_does(tmp_path: Path) -> None:
    """'0001-p0.patch -p0' (quilt's syntax) whose 'diff --git' line keeps git's a/ b/ while
    '---'/'+++' do not: GNU patch changes the file that exists; so does the import."""
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    qp.mkdir()
    text = "diff --git a/a.py b/a.py\n--- a.py\n+++ a.py\n" + TEXT_CHANGE.split("\n", 2)[2]
    (qp / "0001-p0.patch").write_text(text)
    (qp / "series").write_text("0001-p0.patch -p0\n")
    code, log = quilt_push(repo, repo.head(), qp, tmp_path / "quilt")
    assert code == 0, log
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential")
    assert "qp/0001-p0.patch:2: the file diff names 'a.py', 'a.py' and 'a/a.py b/a.py'" in (
        result.stderr
    )
    repo.ps("push", "--all")
    assert repo.tree() == tree_of_folder(tmp_path / "quilt", tmp_path)


def test_a_quilt_patch_s_error_names_the_series_line(tmp_path: Path) -> None:
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    qp.mkdir()
    (qp / "fine.patch").write_text(TEXT_CHANGE)
    (qp / "0001-p0.patch").write_text("--- b.py\n+++ b.py\n@@ -1,3 +1,3 @@\n b 1\n-b 2\n")
    (qp / "series").write_text("fine.patch\n0001-p0.patch -p0\n")
    before = repo.state()
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential", code=2)
    assert "qp/0001-p0.patch:5: truncated hunk" in result.stderr, result.stderr
    assert "(series line " in result.stderr and "qp/series:2: '0001-p0.patch -p0')" in (
        result.stderr
    )
    assert repo.state() == before


def test_names_that_differ_only_by_case_are_named_and_numbered_on_import(tmp_path: Path) -> None:
    repo = upstream(tmp_path)
    qp = tmp_path / "qp"
    qp.mkdir()
    (qp / "Fix.patch").write_text(TEXT_CHANGE)
    (qp / "fix.patch").write_text(TEXT_CHANGE.replace("a", "b"))
    (qp / "series").write_text("Fix.patch\nfix.patch\n")
    result = repo.ps("import", "quilt", str(qp), "--tag", "essential")
    assert "qp/series:2: 'fix.patch' and 'Fix.patch' (line 1) differ only by case" in (
        result.stderr
    )
    assert "so it is imported as 'fix-2.patch'" in result.stderr
    assert "Fix.patch # essential\nfix-2.patch # essential\n" in repo.read("patches/series")
    assert "differ only by case" not in repo.ps("check").stderr
