"""The smaller items of issue 34 (item 8): read-only commands fire no hook, the upstream
status and reason fields refuse what a header must not hold, export's mbox goes through
``git am``, ``import branch`` names the commit, the fork's comment says whose verdict it is."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line


@pytest.fixture
@built_once
def fork(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.ps("init")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.ps("new", "fast", "--tag", "essential")
    replace_line(repo, "lib.txt", "lib 10\n", "lib ten\n")
    repo.ps("new", "ten", "--tag", "essential")
    return repo


def _hooks(repo: Repo, log: Path) -> None:
    hooks = repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("reference-transaction", "post-index-change", "post-checkout", "pre-commit"):
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\necho {name} >> "{log}"\ncat > /dev/null\nexit 0\n')
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def test_read_only_commands_fire_no_hook(fork: Repo, tmp_path: Path) -> None:
    repo = fork
    repo.git("branch", "upstream")
    shutil.copytree(repo.path / "patches", tmp_path / "old")
    log = tmp_path / "hooks.log"
    _hooks(repo, log)
    for args in (
        ("check",),
        ("check", "--onto", "upstream"),
        ("status",),
        ("series",),
        ("show", "fast"),
        ("review", str(tmp_path / "old"), "patches"),
        ("log",),
    ):
        repo.ps(*args)
        assert not log.exists(), (args, log.read_text())
    # A command that changes state still runs the repository's hooks, as before.
    repo.ps("pop")
    assert "reference-transaction" in log.read_text()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("submitted", "javascript:alert(document.cookie)"), "takes an http(s) URL"),
        (("submitted", "data:text/html,<script>x</script>"), "takes an http(s) URL"),
        (("applied", "javascript:alert(1)"), "takes a commit, an http(s) URL"),
        (("not-needed", "fork only\x1b]8;;https://evil\x07"), "control character"),
        (("not-needed", "fork\x00only"), "control character"),
        (("submitted", "https://example.org/pull/1\x1b[2J"), "control character"),
    ],
)
def test_upstream_refuses_what_a_header_must_not_hold(fork: Repo, args, said) -> None:
    repo = fork
    before = repo.state()
    result = repo.ps("upstream", "fast", *args, code=2)
    assert said in result.stderr
    assert repo.state() == before


def test_upstream_takes_urls_and_mail_addresses(fork: Repo) -> None:
    repo = fork
    repo.ps("upstream", "fast", "submitted", "https://example.org/org/repo/pull/12")
    assert "Forwarded: https://example.org/org/repo/pull/12" in repo.read("patches/fast.patch")
    repo.ps("upstream", "ten", "submitted", "<20260101.1234@lists.example.org>")
    repo.ps("upstream", "ten", "not-needed", "fork-only branding")
    assert "Forwarded: not-needed (fork-only branding)" in repo.read("patches/ten.patch")


MESSAGE = (
    "Take the fast path\n\nThe reviewer asked for the diff:\n---\n@@ -1 +1 @@\n-mode = slow\n"
    "+mode = fast\n\nIndex: not a file\ndiff -u is what they ran\n--- the end\n"
)


@pytest.mark.parametrize("how", ["commits", "branch"])
def test_a_message_with_a_patch_break_goes_through_git_am_whole(tmp_path: Path, how) -> None:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.git("branch", "upstream")
    repo.git("checkout", "-q", "-b", "work")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.git("commit", "-q", "-am", MESSAGE)
    if how == "commits":
        repo.git("checkout", "-q", "main")
    repo.ps("init")
    if how == "commits":
        repo.ps("import", "commits", "main..work", "--tag", "essential")
    else:
        repo.ps("import", "branch", "HEAD", "--upstream", "upstream", "--tag", "essential")
    mbox = tmp_path / "series.mbox"
    mbox.write_text(repo.ps("export", "mbox", "-").stdout)
    other = make_repo(tmp_path / "other", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    other.git("am", "-q", str(mbox))  # it applies: nothing after a '---' is taken for the diff
    assert "mode = fast\n" in other.read("lib.txt")
    kept = other.git("log", "-1", "--format=%B")
    # The whole message arrives; each line git's mailinfo would cut at is indented by one space.
    lines = [ln.strip() for ln in kept.split("\n")]
    assert all(ln.strip() in lines for ln in MESSAGE.split("\n"))
    assert "\n ---\n" in kept and "\n --- the end\n" in kept


@pytest.mark.parametrize("how", ["commits", "branch"])
def test_an_import_error_names_the_commit(tmp_path: Path, how) -> None:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.git("branch", "upstream")
    repo.git("checkout", "-q", "-b", "work")
    replace_line(repo, "lib.txt", "lib 5\n", "lib five\n")
    repo.git("commit", "-q", "-am", "A fine commit")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.git("commit", "-q", "-am", "Its author holds a control character")
    bad = repo.git("rev-parse", "HEAD").strip()
    # git writes what it is given; a rewritten author with a control character in its name.
    raw = repo.git("cat-file", "commit", "HEAD").replace("author Test Author", "author Te\x01st", 1)
    forged = repo.git("hash-object", "-t", "commit", "-w", "--stdin", input=raw).strip()
    repo.git("reset", "-q", "--hard", forged)
    assert forged != bad
    if how == "commits":
        repo.git("checkout", "-q", "main")
    repo.ps("init")
    before = repo.state()
    if how == "commits":
        result = repo.ps("import", "commits", "main..work", "--tag", "essential", code=2)
    else:
        args = ("import", "branch", "HEAD", "--upstream", "upstream", "--tag", "essential")
        result = repo.ps(*args, code=2)
    assert f"commit {forged[:12]}" in result.stderr
    assert repo.state() == before
