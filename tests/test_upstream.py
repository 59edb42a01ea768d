"""Where each patch stands upstream (issue 28, item 3): DEP-3 fields (and SUSE's
Patch-mainline, Yocto's Upstream-Status) read from patch headers, kept byte for byte through
import, refresh and export, set by 'patchstack upstream' (journalled, undoable), summed up by
status and series, Applied-Upstream checked against the base, and check --require-status."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, numbered, replace_line

MAIN = numbered(40, "main")
DEP3_FIELDS = (
    "Bug-Debian: https://bugs.debian.org/42\n"
    "Forwarded: https://example.org/upstream/pull/7\n"
    "Last-Update: 2025-12-01\n"
)


def udiff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def head_of(text: str) -> str:
    """A patch file up to its '---' line."""
    return text.split("\n---\n")[0]


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    """A Debian quilt series imported: one patch forwarded, one not needed, one with no
    status; all applied. And a branch 'upstream' that moved the base by one line."""
    tmp = module_env.mktemp("upstream")
    repo = make_repo(tmp / "fork", {"main.c": MAIN, "util.c": numbered(30, "util")})
    qp = tmp / "quilt"
    qp.mkdir()
    one = MAIN.replace("main 5\n", "main 5 one\n")
    (qp / "one.patch").write_text(
        "Description: Make main say one\n Longer explanation.\nAuthor: Ann <ann@example.org>\n"
        "Origin: vendor\n" + DEP3_FIELDS + "---\n" + udiff(MAIN, one, "main.c")
    )
    two = one.replace("main 30\n", "main 30 two\n")
    (qp / "two.patch").write_text(
        "From: Bob <bob@example.org>\nSubject: [PATCH] two\n\nDebian only.\n\n"
        "Forwarded: not-needed\n---\n" + udiff(one, two, "main.c")
    )
    util = numbered(30, "util")
    (qp / "three.patch").write_text(
        "Plain three.\n\n" + udiff(util, util.replace("util 9\n", "util 9 x\n"), "util.c")
    )
    (qp / "series").write_text("one.patch\ntwo.patch\nthree.patch\n")
    repo.ps("import", "quilt", str(qp), "--tag", "essential")
    repo.ps("push", "--all")
    base = repo.git("rev-parse", "HEAD~3").strip()
    repo.git("branch", "upstream", base)
    repo.git("worktree", "add", "-q", str(tmp / "up"), "upstream")
    up = Repo(tmp / "up")
    replace_line(up, "main.c", "main 1\n", "main 0\nmain 1\n")
    up.git("commit", "-q", "-am", "upstream: one more line")
    repo.git("worktree", "remove", str(tmp / "up"))
    return tmp


@pytest.fixture
def fork(built: Path, tmp_path: Path) -> Repo:
    copy_repo(built, tmp_path / "w")
    return Repo(tmp_path / "w" / "fork")


def upstream_of(repo: Repo, name: str) -> dict:
    data = json.loads(repo.ps("series", "--json").stdout)
    return next(p["upstream"] for p in data["patches"] if p["name"] == name)


def test_import_quilt_keeps_dep3_fields_and_reads_them(fork) -> None:
    one = fork.read("patches/one.patch")
    assert head_of(one).endswith("Longer explanation.\n\nOrigin: vendor\n" + DEP3_FIELDS[:-1])
    state = upstream_of(fork, "one.patch")
    assert state["state"] == "submitted"
    assert state["detail"] == "https://example.org/upstream/pull/7"
    assert (state["updated"], state["bug"]) == ("2025-12-01", "https://bugs.debian.org/42")
    assert upstream_of(fork, "two.patch")["state"] == "not-needed"
    assert upstream_of(fork, "three.patch")["state"] == "none"
    out = fork.ps("series").stdout
    # GIT_COMMITTER_DATE (conftest) is 2026-01-01: the submission is 31 days old.
    assert "upstream: 1 submitted (oldest 31 days), 1 not needed upstream, 1 with no status" in out
    assert "upstream: 1 submitted (oldest 31 days)" in fork.ps("status").stdout


def test_fields_keep_their_bytes_through_refresh_and_export(fork, tmp_path: Path) -> None:
    heads = {n: head_of(fork.read(f"patches/{n}")) for n in ("one.patch", "two.patch")}
    result = fork.ps("refresh", "--onto", "upstream")
    assert "offset    one.patch" in result.stdout and "rewrote 2 patch file(s)" in result.stdout
    for name, head in heads.items():
        assert head_of(fork.read(f"patches/{name}")) == head
    fork.ps("export", "quilt", str(tmp_path / "out"))
    assert head_of((tmp_path / "out" / "one.patch").read_text()) == heads["one.patch"]
    mbox = fork.ps("export", "mbox", "-").stdout
    assert "Origin: vendor\n" + DEP3_FIELDS + "\nPatchstack-Patch: one.patch" in mbox


def test_upstream_sets_fields_journalled_and_undoable(fork, monkeypatch) -> None:
    before = fork.state()
    result = fork.ps("upstream", "three", "submitted", "https://example.org/upstream/pull/9")
    assert "three.patch: submitted (applied: commits rewritten, same trees)" in result.stdout
    three = fork.read("patches/three.patch")
    assert head_of(three).endswith(
        "\n\nForwarded: https://example.org/upstream/pull/9\nLast-Update: 2026-01-01"
    )
    assert json.loads(fork.ps("status", "--json").stdout)["disagreements"] == []
    assert "Forwarded: https://example.org/upstream/pull/9" in fork.git("log", "-1", "--format=%B")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-02-11T12:00:00+00:00")
    assert "upstream: 2 submitted (oldest 72 days), 1 not needed" in fork.ps("status").stdout
    fork.ps("upstream", "three", "not-needed", "fork", "only")
    assert "\nForwarded: not-needed (fork only)\n" in fork.read("patches/three.patch")
    fork.ps("undo")
    fork.ps("undo")
    assert fork.state() == before
    # Bad input: exit 2, nothing changed.
    for args, says in (
        (("three", "applied", "0123456789abcdef"), "unknown commit '0123456789abcdef'"),
        (("three", "submitted"), "'submitted' needs a URL"),
        (("three", "sent", "x"), "invalid value for 'STATE'"),
        (("nope", "pending"), "nope"),
    ):
        assert says in fork.ps("upstream", *args, code=2).stderr
    assert fork.state() == before


def test_applied_upstream_is_checked_against_the_base(fork) -> None:
    commit = fork.git("rev-parse", "upstream").strip()
    result = fork.ps("upstream", "one", "applied", "upstream")
    assert "does not contain that commit yet" in result.stdout
    assert f"\nApplied-Upstream: commit:{commit}\n" in fork.read("patches/one.patch")
    assert upstream_of(fork, "one.patch")["applied_check"] == "not-in-base"
    fork.ps("refresh", "--onto", "upstream")
    out = fork.ps("status").stdout
    assert f"one.patch: applied upstream as {commit[:10]}, which the series base contains" in out


def test_check_require_status_fails_for_a_patch_with_none(fork) -> None:
    result = fork.ps("check", "--require-status", code=1)
    assert "all patches apply" in result.stdout
    assert "no upstream status (1):\n  three.patch\n" in result.stdout
    data = json.loads(fork.ps("check", "--require-status", "--json", code=1).stdout)
    assert (data["ok"], data["without_status"]) == (False, ["three.patch"])
    fork.ps("check", "--require-status", "--except", "essential")  # selects nothing: passes
    fork.ps("upstream", "three", "pending")
    assert "upstream status: every patch has one" in fork.ps("check", "--require-status").stdout


def test_suse_and_yocto_headers(tmp_path: Path) -> None:
    """SUSE's Patch-mainline/Git-commit among the mail headers survive a refresh (they used
    to be dropped with the header); Yocto's Upstream-Status is read, and kept in agreement."""
    repo = make_repo(tmp_path / "r", {"a.txt": numbered(20, "a"), "b.txt": numbered(20, "b")})
    upstream_fix = repo.head()
    repo.ps("init")
    replace_line(repo, "a.txt", "a 10\n", "a 10 suse\n")
    repo.ps("new", "suse", "--tag", "essential", "-m", "SUSE style")
    replace_line(repo, "b.txt", "b 10\n", "b 10 yocto\n")
    repo.ps("new", "yocto", "--tag", "essential", "-m", "Yocto\n\nUpstream-Status: Pending")
    text = repo.read("patches/suse.patch").replace(
        "Subject: [PATCH] SUSE style\n",
        f"Subject: [PATCH] SUSE style\nPatch-mainline: v6.2-rc1\nGit-commit: {upstream_fix}\n",
    )
    (repo.path / "patches" / "suse.patch").write_text(text)
    repo.ps("pop", "--all")
    replace_line(repo, "a.txt", "a 1\n", "a 0\na 1\n")
    repo.commit_all("upstream moved")
    repo.ps("refresh")
    suse = repo.read("patches/suse.patch")
    assert head_of(suse) == head_of(text)
    assert "@@ -8,7 +8,7 @@" in suse  # the diff did move
    # The base contains the commit the header names, but holds no change of the patch's (it is
    # applied): not "upstream already", which only a refresh's proof may say.
    assert upstream_of(repo, "suse.patch")["applied_check"] == "in-base-unproven"
    assert upstream_of(repo, "yocto.patch")["state"] == "pending"
    repo.ps("upstream", "yocto", "submitted", "https://lists.example.org/1")
    yocto = repo.read("patches/yocto.patch")
    assert "\nUpstream-Status: Submitted [https://lists.example.org/1]\n" in yocto
    assert "\nForwarded: https://lists.example.org/1\n" in yocto
    assert "1 submitted (oldest 0 days), 1 applied upstream" in repo.ps("series").stdout


def test_the_hook_refresh_can_record_upstream_evidence_with() -> None:
    """`applied_upstream` is the message change for a patch found upstream (for refresh,
    once it has the evidence); a Yocto status is kept in agreement."""
    from datetime import date

    from patchstack.commands.upstream import applied_upstream

    text = "Subject\n\nWhy.\n\nUpstream-Status: Submitted [https://lists/1]\n"
    assert applied_upstream(text, "0be30d4aa1", date(2026, 2, 12)) == (
        "Subject\n\nWhy.\n\nUpstream-Status: Backport [commit:0be30d4aa1]\n"
        "Applied-Upstream: commit:0be30d4aa1\nLast-Update: 2026-02-12\n"
    )


def test_a_patch_upstream_took_and_then_reverted_is_never_advised_away(tmp_path) -> None:
    """Upstream takes p4 (a refresh marks it upstream and writes Applied-Upstream into its
    header), then reverts it: the next refresh drops the mark, and status no longer calls it
    upstream already or advises deleting it, though the base contains the commit named."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "a"), "c.c": numbered(20, "c")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 3\n", "a 3 p1\n")
    repo.ps("new", "p1", "-t", "essential", "a.c")
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.ps("new", "p4", "-t", "essential", "c.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.commit_all("upstream takes p4")
    repo.git("branch", "up1")
    replace_line(repo, "c.c", "c 5\np4\n", "c 5\n")
    repo.commit_all("upstream reverts p4")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up1")
    assert "# upstream: p4.patch " in repo.read("patches/series")
    assert upstream_of(repo, "p4.patch")["applied_check"] == "in-base"
    repo.ps("refresh", "--onto", "up")
    assert "# upstream:" not in repo.read("patches/series")
    status = repo.ps("status").stdout
    assert "upstream already" not in status and "delete it" not in status
    assert upstream_of(repo, "p4.patch")["applied_check"] == "in-base-unproven"
    repo.ps("push", "--all")
    assert "p4\n" in repo.read("c.c")  # nothing of it was lost


def test_a_patch_upstream_took_and_reverted_comes_back_applied(tmp_path) -> None:
    """Upstream takes p4 (the refresh keeps it unapplied with its ``# upstream:`` mark), then
    reverts it: the next refresh applies it again, as git rebase would carry it; it is not
    left out, with the base no longer holding it."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "a"), "c.c": numbered(20, "c")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 3\n", "a 3 p1\n")
    repo.ps("new", "p1", "-t", "essential", "a.c")
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.ps("new", "p4", "-t", "essential", "c.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "c.c", "c 5\n", "c 5\np4\n")
    repo.commit_all("upstream takes p4")
    repo.git("branch", "up1")
    repo.git("revert", "--no-edit", "HEAD")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up1")
    assert "p4\n" in repo.read("c.c")  # the base's
    data = json.loads(repo.ps("refresh", "--onto", "up", "--json").stdout)
    assert data["applied"] == ["p1.patch", "p4.patch"]
    assert "p4\n" in repo.read("c.c")
    assert repo.git("diff", "up", "HEAD", "--", "c.c").count("+p4") == 1
