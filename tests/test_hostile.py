"""Hostile and malformed input, round two: end to end through the real CLI.

Every malformed class is exit 2 with the file, the line and the cause, before anything is
applied; the refusals name what they refuse; the bounds hold; and nothing on disk changes: the
work tree, the index (its bytes), every ref and the series directory are compared byte for
byte before and after, and nothing appears next to the work tree.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
import zlib
from pathlib import Path

import pytest

from .conftest import Repo, make_repo
from .test_corpus import CORPUS, add_to_series, base_repo


def disk(repo: Repo, tmp_path: Path) -> tuple:
    """A byte snapshot of what a refused command must not change."""
    git_dir = repo.path / ".git"
    return (
        repo.snapshot(),  # the work tree and the series directory
        (git_dir / "index").read_bytes() if (git_dir / "index").exists() else b"",
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("rev-parse", "HEAD"),
        sorted(p.name for p in tmp_path.iterdir()),
        sorted(
            str(p.relative_to(repo.path)) for p in repo.path.rglob("*") if ".git" not in p.parts
        ),
    )


def git_binary(literal: bytes, declared: int | None = None) -> str:
    """A ``GIT binary patch`` literal block as git writes it (declared size overridable)."""
    data = zlib.compress(literal, 9)
    lines = []
    for k in range(0, len(data), 52):
        chunk = data[k : k + 52]
        n = len(chunk)
        tag = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        pad = chunk + b"\0" * (-n % 4)
        lines.append(tag + base64.b85encode(pad).decode())
    size = len(literal) if declared is None else declared
    return f"literal {size}\n" + "\n".join(lines) + "\n\nliteral 0\nHcmV?d00001\n\n"


def binary_patch(literal: bytes, declared: int | None = None) -> bytes:
    oid = hashlib.sha1(b"blob %d\0" % len(literal) + literal).hexdigest()
    head = (
        "diff --git a/new.bin b/new.bin\nnew file mode 100644\n"
        f"index {'0' * 40}..{oid}\nGIT binary patch\n"
    )
    return (head + git_binary(literal, declared)).encode()


# patch file -> (line named in the error, words of the cause); each is pushed as the only patch
MALFORMED = {
    "empty-git-header.patch": (7, "'diff --git' line names no file"),
    "no-newline-mid-hunk.patch": (12, "in the middle of a hunk"),
    "mode-100777.patch": (9, "invalid mode '100777'"),
    "mode-040000.patch": (8, "invalid mode '040000' (a folder's mode)"),
    "hunk-count-2-64.patch": (10, "hunk line number 18446744073709551616 is out of range"),
    "hunk-start-overflow.patch": (10, "hunk line numbers overflow"),
    "names-disagree.patch": (8, "the '---' name 'a/a' disagrees with the 'diff --git' name"),
    "crlf-all.patch": (7, "line ends in CR LF (a CRLF patch file)"),
    "git-header-without-change.patch": (7, "file diff without a change"),
    "gitmodules-symlink.patch": (
        7,
        "refused path '.gitmodules': '.gitmodules' may not be a symbolic link",
    ),
    "gitmodules-symlink-folded.patch": (
        7,
        "refused path 'sub/.GITMODULES.': 'sub/.GITMODULES.' may not be a symbolic link",
    ),
    "name-too-long.patch": (
        7,
        "over the 255 bytes a file name may have (the file system's limit, ENAMETOOLONG)",
    ),
    "path-too-long.patch": (
        7,
        "over the 4095 bytes a path may have (the file system's limit, ENAMETOOLONG)",
    ),
}
GENERATED = {
    "binary-size-mismatch.patch": (
        lambda: binary_patch(b"five!", declared=100),
        5,
        "binary literal for 'new.bin' declares 100 bytes but its data inflates to 5 bytes",
    ),
    "binary-bomb.patch": (  # 20 KB of data that would inflate to 20 MB, declared 1 KB
        lambda: binary_patch(b"\0" * 20_000_000, declared=1000),
        5,
        "binary literal for 'new.bin' declares 1000 bytes but its data inflates to more than",
    ),
    "binary-declares-2-60.patch": (
        lambda: binary_patch(b"x", declared=2**60),
        5,
        f"binary literal of {2**60} bytes for 'new.bin' is over the limit",
    ),
    "binary-garbage-base85.patch": (
        lambda: binary_patch(b"hello").replace(
            b"literal 5\n", b"literal 5\nJ\x01\x02\x03\x04\x05\n"
        ),
        6,
        "malformed base85 line",
    ),
    "nul-in-the-date-header.patch": (
        lambda: (
            b"From: A <a@example.org>\nDate: Thu, 1 Jan 2026\x00 00:00:00 +0000\nSubject: x\n\n"
            b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a 1\n+a one\n"
        ),
        2,
        "the Date: header holds a control character",
    ),
    "hunk-10-mb-line-with-wrong-count.patch": (
        lambda: (
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n a 1\n-a 2\n+"
            + "x" * 10_000_000
            + "\n a 3\n"
        ).encode(),
        8,
        "truncated hunk: 0 old and 1 new lines missing",
    ),
}


def _push_refused(tmp_path: Path, name: str, data: bytes, line: int, words: str) -> float:
    repo = base_repo(tmp_path)
    add_to_series(repo, name, data)
    before = disk(repo, tmp_path)
    t0 = time.monotonic()
    # show only reads: it shows a patch that names a refused path (to inspect it), not a
    # malformed one
    refused = ("refused path", "symbolic link", "ENAMETOOLONG")
    readers = [] if any(w in words for w in refused) else [["show", name]]
    for args in (["push", "--all"], ["check"], *readers):
        result = repo.ps(*args, code=2)
        assert f"patches/{name}:{line}: " in result.stderr, (args, result.stderr)
        assert words in result.stderr, result.stderr
        assert "hint: " in result.stderr
        assert "Traceback" not in result.stdout + result.stderr
    elapsed = time.monotonic() - t0
    assert disk(repo, tmp_path) == before
    return elapsed


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_patch_is_exit_2_naming_file_line_and_cause(tmp_path, name) -> None:
    line, words = MALFORMED[name]
    _push_refused(tmp_path, name, (CORPUS / name).read_bytes(), line, words)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_hostile_patch_is_refused_within_bounds(tmp_path, name) -> None:
    make, line, words = GENERATED[name]
    elapsed = _push_refused(tmp_path, name, make(), line, words)
    assert elapsed < 10, f"{name}: three commands took {elapsed:.1f}s"


def test_a_valid_binary_patch_still_applies(tmp_path) -> None:
    repo = base_repo(tmp_path)
    add_to_series(repo, "bin.patch", binary_patch(b"\0binary\xff" * 50))
    repo.ps("push", "--all")
    assert (repo.path / "new.bin").read_bytes() == b"\0binary\xff" * 50


def test_crlf_hunk_against_an_lf_file_is_a_conflict_naming_the_cr_bytes(tmp_path) -> None:
    repo = base_repo(tmp_path)
    data = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\r\n-a 2\r\n+a two\r\n a 3\r\n"
    add_to_series(repo, "crlf-content.patch", data)
    before = disk(repo, tmp_path)
    result = repo.ps("push", "--all", code=1)
    assert "a.py: the patch's lines end in CR LF (bytes 0d 0a" in result.stderr
    assert "the file's lines end in LF (0a)" in result.stderr
    assert disk(repo, tmp_path) == before


def test_a_path_over_the_limits_is_refused_saying_why_in_a_line_that_ends(tmp_path) -> None:
    """The reason comes within a screen's width, not after a 5,000-character path."""
    repo = base_repo(tmp_path)
    long = "/".join(["d" * 200] * 25) + "/x.txt"
    add_to_series(repo, "deep.patch", f"--- /dev/null\n+++ b/{long}\n@@ -0,0 +1 @@\n+x\n".encode())
    first = repo.ps("push", "--all", code=2).stderr.splitlines()[0]
    assert len(first) < 300, first
    assert first.endswith(
        "is 5,030 bytes long, over the 4095 bytes a path may have (the file system's limit,"
        " ENAMETOOLONG)"
    ), first
    assert "hint: shorten the path in the patch" in repo.ps("check", code=2).stderr


def test_a_hunk_mixing_crlf_and_lf_names_the_line_endings_as_the_cause(tmp_path) -> None:
    repo = base_repo(tmp_path)
    data = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\r\n+a two\n a 3\n"
    add_to_series(repo, "mixed.patch", data)
    before = disk(repo, tmp_path)
    result = repo.ps("push", "--all", code=1)
    assert (
        "a.py: the hunk on line 3 of the patch matches the file at line 1 but for line endings:"
        " of its 3 lines there, 1 end in CR LF (0d 0a) where the file's end in LF (0a)"
    ) in result.stderr, result.stderr
    assert disk(repo, tmp_path) == before
    # The file mixes them, the patch does not.
    two = make_repo(tmp_path / "two", {"a.py": "x\n"})
    (two.path / "a.py").write_bytes(b"a 1\r\na 2\r\na 3\n")
    two.commit_all("mixed line endings")
    two.ps("init")
    lf = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n"
    add_to_series(two, "lf.patch", lf)
    result = two.ps("push", "--all", code=1)
    assert "of its 3 lines there, 2 end in LF (0a) where the file's end in CR LF" in result.stderr


# -- the series file and the series folder -----------------------------------------------------


def test_two_base_lines_are_an_error_naming_both(tmp_path) -> None:
    repo = base_repo(tmp_path)
    series = repo.path / "patches" / "series"
    text = series.read_text()
    series.write_text(text + "# base: " + "0" * 39 + "1\n")
    first = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("# base:"))
    second = text.count("\n") + 1
    before = disk(repo, tmp_path)
    for args in (["push", "--all"], ["series"], ["check"]):
        result = repo.ps(*args, code=2)
        assert f"patches/series:{second}: a second '# base:' line (the first is line {first})" in (
            result.stderr
        )
    assert disk(repo, tmp_path) == before


def test_patch_file_linked_out_of_the_series_folder_is_refused(tmp_path) -> None:
    repo = base_repo(tmp_path)
    outside = tmp_path / "outside.patch"
    outside.write_bytes(b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n")
    os.symlink(outside, repo.path / "patches" / "linked.patch")
    with open(repo.path / "patches" / "series", "a") as f:
        f.write("linked.patch # essential\n")
    before = disk(repo, tmp_path)
    result = repo.ps("push", "--all", code=2)
    assert "linked.patch' is a symbolic link out of the series directory" in result.stderr
    assert disk(repo, tmp_path) == before
    # a link inside the folder is fine
    os.unlink(repo.path / "patches" / "linked.patch")
    (repo.path / "patches" / "real.patch").write_bytes(outside.read_bytes())
    os.symlink("real.patch", repo.path / "patches" / "linked.patch")
    repo.ps("push", "--all")
    assert "a two" in repo.read("a.py")


def test_subfolder_entries_and_non_ascii_names_work_and_print(tmp_path) -> None:
    repo = base_repo(tmp_path)
    (repo.path / "patches" / "any").mkdir()
    fix = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n"
    (repo.path / "patches" / "any" / "local-fix.diff").write_bytes(fix)
    name = "caf\u00e9-\u00fcber.patch"
    (repo.path / "patches" / name).write_bytes(fix.replace(b"a 1\n-a 2\n+a two", b"a 2\n-a 3"))
    (repo.path / "patches" / name).write_bytes(
        b"--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n b 1\n-b 2\n+b zwei\n b 3\n"
    )
    with open(repo.path / "patches" / "series", "a", encoding="utf-8") as f:
        f.write(f"any/local-fix.diff # essential\n{name} # diagnostic\n")
    repo.ps("push", "--all")
    assert "b zwei" in repo.read("b.py") and "a two" in repo.read("a.py")
    listing = repo.ps("series").stdout
    assert "any/local-fix.diff" in listing and name in listing
    assert name in repo.ps("show", name).stdout
    repo.ps("pop", "--all")
    repo.ps("push", name)


def test_check_reports_names_that_differ_only_by_case(tmp_path) -> None:
    repo = base_repo(tmp_path)
    for name, path in (("Fix.patch", "a.py"), ("fix.patch", "b.py")):
        p = path[0]
        data = f"--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n {p} 1\n-{p} 2\n+{p} x\n {p} 3\n"
        add_to_series(repo, name, data.encode())
    result = repo.ps("check")
    assert "'fix.patch' and 'Fix.patch' (line" in result.stderr
    assert "differ only by case" in result.stderr
    assert '"warnings": [' in repo.ps("check", "--json").stdout


def test_series_without_a_base_pushes_onto_head_and_says_how_to_record_one(tmp_path) -> None:
    repo = base_repo(tmp_path)
    (repo.path / "patches" / "series").write_text("fix.patch # essential\n")
    (repo.path / "patches" / "fix.patch").write_bytes(
        b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n+a two\n a 3\n"
    )
    head = repo.head()
    result = repo.ps("push", "--all")
    assert "has no '# base:' line" in result.stderr and "patchstack refresh" in result.stderr
    assert repo.git("rev-parse", "HEAD~1").strip() == head
    assert "has no '# base:' line" in repo.ps("status").stderr
    repo.ps("refresh")
    assert f"# base: {head}" in (repo.path / "patches" / "series").read_text()
    assert "has no '# base:' line" not in repo.ps("status").stderr


# -- output that cannot lie or attack ------------------------------------------------------------

EVIL_SUBJECT = "fix \x1b]0;pwned\x07 the \x9b31m build \u202eevil\u202c \u200b"


def test_control_and_bidi_characters_never_reach_the_terminal(tmp_path) -> None:
    repo = base_repo(tmp_path)
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a 1\n-a 2\n"
        "+a \u2066two\u2069 \x1b[2J\n a 3\n"
    )
    mail = (
        f"From: Mallory <m@example.org>\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n"
        f"Subject: {EVIL_SUBJECT}\n\ndescription \x1b[8mhidden\x1b[0m\n---\n{diff}"
    )
    add_to_series(repo, "evil.patch", mail.encode())
    repo.ps("push", "--all")
    outputs = {
        "show": repo.ps("show", "evil.patch"),
        "show-md": repo.ps("show", "evil.patch", "--format", "markdown"),
        "show-html": repo.ps("show", "evil.patch", "--format", "html"),
        "series": repo.ps("series"),
        "status": repo.ps("status", code=None),
        "log": repo.ps("log"),
    }
    for args in (["--format", "text"], ["--format", "markdown"], ["--format", "html"]):
        outputs["review " + args[1]] = repo.ps("review", str(tmp_path / "empty"), "patches", *args)
    for what, result in outputs.items():
        text = result.stdout + result.stderr
        for bad in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u200b", "\u2066", "\u2069"):
            assert bad not in text, (what, repr(bad))
    shown = outputs["show"].stdout
    assert "<U+001B>]0;pwned<U+0007>" in shown and "<U+202E>evil<U+202C>" in shown
    assert "a <U+2066>two<U+2069> <U+001B>[2J" in shown
    for what in ("show", "show-md", "show-html", "review text", "review markdown", "review html"):
        text = outputs[what].stdout + outputs[what].stderr
        assert "bidirectional or invisible Unicode characters" in text, what
    assert "&lt;U+202E&gt;" in outputs["show-html"].stdout
    assert "&lt;U+202E&gt;" in outputs["review markdown"].stdout  # shown as text on GitHub


@pytest.fixture(autouse=True)
def _empty_dir(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "series").write_text("")
