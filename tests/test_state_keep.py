"""The parsed series file and the applied stack kept in the cache (issue 35: ``pop NAME`` in
time proportional to what it pops, not to the series): the same stacks and the same output
with the cache and on the plain path (``PATCHSTACK_NO_STATE_CACHE=1``), command after
command; a series file edited or a HEAD moved by hand is read afresh, never taken from the
cache. What is saved is read from git's trace and from the parses counted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchstack import checkout

from .conftest import Repo, replace_line, slow_after

SCRIPT = [
    ["pop", "p4.patch"],
    ["push", "--all"],
    ["pop", "p2.patch", "--alone"],
    ["series", "--json"],
    ["pop", "--all"],
    ["push", "p3.patch"],
    ["status", "--json"],
    ["push", "--all"],
    ["series"],
]


def _five(repo: Repo) -> None:
    repo.ps("init")
    for i in range(1, 6):
        f, n = ("a.py", 4 * i) if i % 2 else ("b.py", 4 * i)
        replace_line(repo, f, f"{f[0]} {n}\n", f"{f[0]} {n} p{i}\n")
        repo.ps("new", f"p{i}", "--tag", "essential")


def _played(repo: Repo, by_hand: bool) -> list[tuple[str, str, str]]:
    """Each command's output, exit status and HEAD after it; ``by_hand``: between them the
    series file is edited (a tag, a comment) and HEAD moved by git (a commit taken off)."""
    seen = []
    for i, args in enumerate(SCRIPT):
        result = repo.ps(*args, code=None)
        seen.append((" ".join(args) + "\n" + result.stdout, str(result.exit_code), repo.head()))
        if by_hand and i == 1:
            text = repo.read("patches/series").replace("p3.patch # essential", "p3.patch # x")
            repo.write("patches/series", text.replace("# x", "# diagnostic"))
        if by_hand and i == 3:
            repo.git("reset", "-q", "--keep", "HEAD~1")  # the top patch's commit taken off
        if by_hand and i == 5:
            repo.write("patches/series", "# a comment of my own\n" + repo.read("patches/series"))
    return seen


# edits-by-hand plays the same commands (kept state used between the edits, and made again
# after each): the README's command runs it; commands alone run under -m slow.
@pytest.mark.parametrize(
    "by_hand",
    slow_after([pytest.param(True, id="edits-by-hand"), pytest.param(False, id="commands")], 1),
)
def test_kept_series_and_stacks_give_what_the_plain_path_gives(
    repo: Repo, tmp_path: Path, monkeypatch, by_hand: bool
) -> None:
    _five(repo)
    plain_copy = Repo(tmp_path / "plain")
    shutil.copytree(repo.path, plain_copy.path, symlinks=True)
    kept = _played(repo, by_hand)
    monkeypatch.setenv(checkout.NO_STATE_CACHE, "1")
    plain = _played(plain_copy, by_hand)
    assert kept == plain
    if by_hand:
        assert "diagnostic" in kept[3][0] and kept[4][1] == "0"  # the edit read; the reset taken


def test_a_pop_of_one_patch_walks_no_history_and_parses_no_series(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """After a push the stack it left and the series it read are kept: popping one patch
    reads neither from git's history nor from a parse of the series file; the plain path
    does both."""
    _five(repo)
    repo.ps("push", "--all")
    parsed: list[str] = []
    real = checkout.parse_series

    def counted(text: str, path: str = "series"):  # type: ignore[no-untyped-def]
        parsed.append(path)
        return real(text, path)

    monkeypatch.setattr(checkout, "parse_series", counted)
    trace = tmp_path / "trace"

    def walks(*args: str) -> list[str]:
        if trace.exists():
            trace.unlink()
        monkeypatch.setenv("GIT_TRACE", str(trace))
        try:
            repo.ps(*args)
        finally:
            monkeypatch.delenv("GIT_TRACE")
        return [ln for ln in trace.read_text().splitlines() if "log --first-parent" in ln]

    assert walks("pop", "p5.patch") == [] and parsed == []
    assert walks("pop", "p4.patch") == [] and parsed == []
    monkeypatch.setenv(checkout.NO_STATE_CACHE, "1")
    assert walks("pop", "p3.patch") != [] and parsed != []


def test_a_pop_of_every_patch_walks_no_history_once_the_base_is_known(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """The stack at the base (no patch applied) is kept as any other: a pop of every patch
    reads neither the stack it pops nor the base's history for the operation log."""
    _five(repo)
    repo.ps("push", "--all")
    repo.ps("pop", "--all")  # the base's stack: walked once, kept
    repo.ps("push", "--all")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    repo.ps("pop", "--all")
    monkeypatch.delenv("GIT_TRACE")
    assert "log --first-parent" not in trace.read_text()


@pytest.mark.parametrize("rewrite", ["replace", "grafts"])
def test_a_history_rewritten_by_replace_refs_or_grafts_is_walked_again(
    repo: Repo, tmp_path: Path, monkeypatch, rewrite: str
) -> None:
    """A commit id fixes its history only without replace refs and grafts: with either, the
    stack kept at HEAD is not used; status says what the plain path says."""
    _five(repo)
    repo.ps("push", "--all")
    repo.ps("series")  # the stack at HEAD kept
    below = repo.git("rev-parse", "HEAD~3").strip()  # HEAD~2 taken out of the history
    if rewrite == "replace":
        repo.git("replace", "--graft", "HEAD~1", below)
    else:
        head1 = repo.git("rev-parse", "HEAD~1").strip()
        Path(repo.path, ".git", "info").mkdir(exist_ok=True)
        Path(repo.path, ".git", "info", "grafts").write_text(f"{head1} {below}\n")
    kept = repo.ps("series", "--json", code=None)
    monkeypatch.setenv(checkout.NO_STATE_CACHE, "1")
    plain = repo.ps("series", "--json", code=None)
    assert (kept.exit_code, kept.stdout) == (plain.exit_code, plain.stdout)
