"""Merge markers are named as such (issue 34, item 7): two maintainers edit the same patch, a
``git pull`` of the series leaves ``<<<<<<<``/``=======``/``>>>>>>>`` in a patch header, in a
diff or in ``series``: every command refuses with "unresolved merge conflict in FILE:LINE",
exit 2, nothing changed. A patch whose own content has lines like markers (an added
``+<<<<<<< ours`` in a fixture of conflict handling, a context line, a heading's ``=======``
underline in the description) is no conflict."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line


@pytest.fixture
@built_once
def fork(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.ps("init")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.ps("new", "fast", "--tag", "essential", "-m", "Go fast\n\nThe fast mode, always.")
    repo.git("branch", "upstream")
    return repo


def _line_of(text: str, start: str) -> int:
    return next(i for i, ln in enumerate(text.split("\n"), 1) if ln.startswith(start))


def _refused_everywhere(repo: Repo, rel: str, line: int) -> None:
    before = repo.state()
    message = repo.git("log", "-1", "--format=%B")
    for args in (("status",), ("series",), ("check",), ("refresh", "--onto", "upstream"), ("pop",)):
        result = repo.ps(*args, code=2)
        assert f"unresolved merge conflict in {rel}:{line}" in result.stderr, (args, result.stderr)
        assert repo.state() == before, args
    assert repo.git("log", "-1", "--format=%B") == message


def test_markers_in_a_patch_header(fork: Repo) -> None:
    path = fork.path / "patches" / "fast.patch"
    text = path.read_text().replace(
        "The fast mode, always.\n",
        "<<<<<<< HEAD\nThe fast mode, always.\n=======\nThe fast mode, for the bench.\n"
        ">>>>>>> 1a2b3c4 (bench wording)\n",
    )
    path.write_text(text)
    _refused_everywhere(fork, "patches/fast.patch", _line_of(text, "<<<<<<<"))


def test_markers_in_a_diff(fork: Repo) -> None:
    path = fork.path / "patches" / "fast.patch"
    text = path.read_text().replace(
        "-mode = slow\n+mode = fast\n",
        "-mode = slow\n<<<<<<< HEAD\n+mode = fast\n=======\n+mode = faster\n>>>>>>> theirs\n",
    )
    path.write_text(text)
    _refused_everywhere(fork, "patches/fast.patch", _line_of(text, "<<<<<<<"))


def test_markers_between_hunks_and_a_lone_separator_in_a_diff(fork: Repo) -> None:
    path = fork.path / "patches" / "fast.patch"
    text = path.read_text()
    hunk = text.index("@@ ")
    path.write_text(text[:hunk] + "=======\n" + text[hunk:])
    _refused_everywhere(fork, "patches/fast.patch", _line_of(path.read_text(), "======="))


def test_markers_in_the_series(fork: Repo) -> None:
    series = fork.path / "patches" / "series"
    text = series.read_text()
    series.write_text(
        text.replace(
            "fast.patch # essential\n",
            "<<<<<<< HEAD\nfast.patch # essential\n=======\nfast.patch # diagnostic\n"
            ">>>>>>> origin/main\n",
        )
    )
    _refused_everywhere(fork, "patches/series", _line_of(series.read_text(), "<<<<<<<"))


def test_lines_like_markers_that_are_the_patch_s_own_content(tmp_path: Path) -> None:
    fixture = "case 1\n=======\ncase 2\n"
    repo = make_repo(tmp_path / "fork", {"t/conflict.txt": fixture, "lib.txt": numbered(9)})
    repo.ps("init")
    # A test fixture of conflict handling: the patch adds marker lines, keeps one as context.
    repo.write(
        "t/conflict.txt", "case 1\n=======\n<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> b\n"
    )
    description = "Conflict fixture\n=======\n\nA heading underlined, as reST does."
    repo.ps("new", "fixture", "--tag", "essential", "-m", f"Add a fixture\n\n{description}")
    text = repo.read("patches/fixture.patch")
    assert "\n=======\n" in text and "\n+<<<<<<< ours\n" in text and "\n =======\n" in text
    repo.ps("pop")
    repo.ps("push")
    repo.ps("status")
    assert "all patches apply" in repo.ps("check").stdout
    assert "Conflict fixture" in repo.ps("show", "fixture").stdout
    assert repo.read("t/conflict.txt").count("=======") == 2


def test_an_imported_message_with_markers_is_guarded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.git("checkout", "-q", "-b", "work")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    message = "Explain the markers\n\ngit writes:\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> b\n"
    repo.git("commit", "-q", "-am", message)
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.ps("import", "commits", "main..work", "--tag", "essential")
    text = repo.read(f"patches/{repo.read('patches/series').split()[-3]}")
    assert "\n <<<<<<< HEAD\nours\n =======\ntheirs\n >>>>>>> b\n" in text
    repo.ps("push", "--all")
    repo.ps("status")


def test_a_message_written_with_marker_like_lines_is_kept_indented(tmp_path) -> None:
    """A message given to 'new -m' or 'edit -m' whose lines look like a merge's markers or a
    message's end ('---') is written with those lines indented, as import writes them: the
    patch file reads back, and is not taken for an unresolved merge."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(10, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 patched\n")
    text = "Subject\n\n<<<<<<< mine\nwhy\n=======\n>>>>>>> theirs\n---\nthe end"
    repo.ps("new", "p", "--tag", "essential", "-m", text)
    assert repo.ps("status").exit_code == 0
    body = repo.read("patches/p.patch")
    assert "\n <<<<<<< mine\n" in body and "\n >>>>>>> theirs\n" in body and "\n ---\n" in body
    repo.ps("edit", "p", "-m", text.replace("why", "because"))
    assert "\n >>>>>>> theirs\n" in repo.read("patches/p.patch")
    assert repo.ps("status").exit_code == 0
