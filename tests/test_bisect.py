"""bisect: the first upstream commit that fails with the selected patches carried at every step.

One repository serves the module (bisect never changes it): an upstream history of eight
commits after GOOD, where commit 2 slows a "benchmark" down, commit 4 changes the lines the
essential patch edits (so the patch does not apply there; commit 5 reverts it), and commit 6
renames a function the essential patch still calls (so a test fails from there on, but only
with the patch applied).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from patchstack.commands.bisect import BAD, GOOD, SKIP, Judge, plan

from .conftest import SEALED, Repo, make_repo, replace_line

LIB = (
    '"""Upstream library."""\n\n\ndef old_api():\n    return 42\n\n\ndef helper():\n    return 1\n'
)
APP = "from lib import *  # noqa\n\nVALUE = old_api()\n\n# settings\n" + "".join(
    f"{k} = {v}\n" for v, k in enumerate("ABCDEFG", 1)
)
BENCH = """\
BATCH = 8
print("warming up: 3 runs")
print(f"latency: {10.6 if BATCH == 8 else 16.6} ms")
print(f"tokens/s: {94.2 if BATCH == 8 else 60.1}")
"""
IMPORTS = [sys.executable, "-c", "import app"]


@dataclass(frozen=True)
class History:
    repo: Repo
    good: str
    commits: list[str]  # 1..8 at indexes 1..8 (index 0: GOOD)

    def ps(self, *args: str, code: int | None = 0, cwd: Path | None = None):
        return self.repo.ps(*args, code=code, cwd=cwd)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in SEALED.items():
            mp.setenv(key, value)
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        root = tmp_path_factory.mktemp("bisect")
        files = {"lib.py": LIB, "app.py": APP, "bench.py": BENCH, "log.py": 'LEVEL = "info"\n'}
        repo = make_repo(root / "fork", {**files, "sub/README": "a subfolder\n"})
        good = repo.head()
        repo.ps("init")
        replace_line(repo, "app.py", "E = 5\n", "E = 5\nEXTRA = old_api()  # the fork's own use\n")
        repo.ps("new", "raw-value", "--tag", "essential", "app.py")
        replace_line(repo, "log.py", '"info"', '"debug"')
        repo.ps("new", "debug-log", "--tag", "diagnostic", "log.py")
        repo.ps("pop", "--all")
        commits = [good]

        def upstream(message: str, rel: str, old: str, new: str) -> None:
            replace_line(repo, rel, old, new)
            commits.append(repo.commit_all(message))

        upstream("helper returns 2", "lib.py", "return 1", "return 2")
        upstream("bench: batch 16", "bench.py", "BATCH = 8", "BATCH = 16")
        upstream("helper returns 3", "lib.py", "return 2", "return 3")
        upstream("settings: E is 50", "app.py", "E = 5\n", "E = 50\n")
        upstream("Revert: settings: E is 50", "app.py", "E = 50\n", "E = 5\n")
        replace_line(repo, "lib.py", "def old_api", "def new_api")
        upstream("lib: rename old_api to new_api", "app.py", "VALUE = old_api", "VALUE = new_api")
        upstream("helper returns 4", "lib.py", "return 3", "return 4")
        upstream("helper returns 5", "lib.py", "return 4", "return 5")
        repo.git("branch", "upstream")  # like origin/main after a fetch
        repo.ps("push", "--only", "essential")  # the user's checkout: BAD + the patch
        return History(repo, good, commits)


def user_state(repo: Repo) -> tuple[object, ...]:
    """Everything of the user's that bisect must leave alone, byte for byte."""
    git_dir = repo.path / ".git"
    return (
        repo.state(),
        (git_dir / "index").read_bytes(),
        (git_dir / "HEAD").read_bytes(),
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("worktree", "list", "--porcelain"),
    )


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR for one test, so that scratch worktrees left behind would show."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return folder


def steps_of(result_json: dict) -> list[tuple[int, str]]:
    return [(s["index"], s["verdict"]) for s in result_json["steps"]]


def test_finds_the_culprit_with_the_essential_patch_and_skips_where_it_does_not_apply(
    history: History, scratch_root: Path
) -> None:
    repo = history.repo
    repo.write("app.py", repo.read("app.py") + "# my uncommitted note\n")
    repo.write("scratch-notes.txt", "untracked\n")
    before = user_state(repo)
    try:
        out = history.ps("bisect", history.good, "upstream", "--only", "essential", "--", *IMPORTS)
        assert user_state(repo) == before
        culprit = history.commits[6]
        assert f"first failing commit: {culprit} lib: rename old_api to new_api" in out.stdout
        assert "it changes files the carried patches touch:\n    app.py  (raw-value.patch)" in (
            out.stdout
        )
        assert "carried patches (1): raw-value.patch" in out.stdout
        rows = {
            words[0]: words[1:3]
            for words in map(str.split, out.stdout.splitlines())
            if words and len(words[0]) == 10 and not words[0].strip("0123456789abcdef")
        }
        assert rows[history.commits[4][:10]] == ["skip", "conflict"]
        assert rows[culprit[:10]] == ["bad", "1"]
        # The skipped commit says what did not apply; --verbose gives the conflict report.
        assert "-> skip: patch raw-value.patch does not apply" in out.stderr
        assert "does not apply: app.py, 1 hunk(s) (--verbose shows the conflict)" in out.stderr
        assert "conflict in patch raw-value.patch" not in out.stderr
        c4 = history.commits[4][:10]
        assert (
            "where the carried patches do not apply:\n"
            f"  at {c4} (settings: E is 50) only, raw-value.patch does not apply"
            f" (it applies again at {history.commits[5][:10]})"
        ) in out.stdout
        verbose = history.ps(
            "bisect", "-v", history.good, "upstream", "--only", "essential", "--", *IMPORTS
        )
        assert "conflict in patch raw-value.patch" in verbose.stderr
        assert "file app.py" in verbose.stderr
        data = json.loads(
            history.ps(
                "bisect", "--json", history.good, "upstream", "--only", "essential", "--", *IMPORTS
            ).stdout
        )
        assert user_state(repo) == before
    finally:
        repo.git("checkout", "app.py")
        os.unlink(repo.path / "scratch-notes.txt")
    assert data["outcome"] == "found" and data["culprit"]["commit"] == culprit
    assert data["culprit"]["shared"] == {"app.py": ["raw-value.patch"]}
    assert steps_of(data) == [(4, SKIP), (3, GOOD), (5, GOOD), (6, BAD)]
    skipped = data["steps"][0]
    assert skipped["applied"] == [] and skipped["status"] is None
    assert skipped["conflict"]["patch"] == "raw-value.patch"
    assert skipped["conflict"]["files"] == ["app.py"]
    assert data["steps"][3]["applied"] == ["raw-value.patch"]
    assert os.listdir(scratch_root) == []  # the scratch worktree is gone


def test_without_the_essential_patch_nothing_fails(history: History, scratch_root: Path) -> None:
    result = history.ps(
        "bisect", "--json", history.good, "upstream", "--only", "diagnostic", "--", *IMPORTS, code=1
    )
    data = json.loads(result.stdout)
    assert data["outcome"] == "no-failure" and data["culprit"] is None
    assert data["selected"] == ["debug-log.patch"]
    assert steps_of(data)[-1] == (8, GOOD)  # BAD itself was tested before saying so


def test_threshold_finds_the_commit_that_made_the_benchmark_slower(
    history: History, scratch_root: Path
) -> None:
    # Run from a subfolder: COMMAND runs in the same subfolder of the scratch worktree.
    sub = history.repo.path / "sub"
    args = ["bisect", history.good, "upstream", "--only", "essential", "--threshold", "80"]
    bench = [sys.executable, "../bench.py"]
    result = history.ps(*args, "--metric", r"tokens/s: ([0-9.]+)", "--", *bench, cwd=sub)
    assert f"first failing commit: {history.commits[2]} bench: batch 16" in result.stdout
    assert "-> bad: 60.1 < 80" in result.stderr and "-> good: 94.2 >= 80" in result.stderr
    assert "tokens/s: 94.2" in result.stderr  # COMMAND's own output, passed through
    # The default figure is the last number printed; --lower-is-better for a latency.
    data = json.loads(history.ps(*args, "--json", "--", *bench, cwd=sub).stdout)
    assert steps_of(data) == [(4, SKIP), (3, BAD), (1, GOOD), (2, BAD)]
    assert [s["figure"] for s in data["steps"]] == [None, 60.1, 94.2, 60.1]
    latency = [*args[:-1], "12", "--lower-is-better", "--metric", "latency: ([0-9.]+)"]
    data = json.loads(history.ps(*latency, "--json", "--", *bench, cwd=sub).stdout)
    assert data["culprit"]["commit"] == history.commits[2]
    assert [s["figure"] for s in data["steps"]] == [None, 16.6, 10.6, 16.6]
    # A relative threshold is measured from GOOD's own figure: GOOD is tested first.
    relative = [*args[:-1], "10%", "--metric", r"tokens/s: ([0-9.]+)", "--json", "--", *bench]
    data = json.loads(history.ps(*relative, cwd=sub).stdout)
    assert data["culprit"]["commit"] == history.commits[2]
    assert data["steps"][0]["index"] == 0 and data["steps"][0]["figure"] == 94.2
    assert "60.1: 36.2 % worse than GOOD > 10 %" in [s["why"] for s in data["steps"]]
    assert os.listdir(scratch_root) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_bisect_removes_its_scratch_and_touches_nothing(
    history: History, scratch_root: Path, signum: int
) -> None:
    before = user_state(history.repo)
    marker = scratch_root.parent / "ended"
    # COMMAND interrupts patchstack (its parent), then waits to be ended with it.
    script = f"trap 'touch {marker}; exit 1' TERM; kill -{signum.name[3:]} $PPID; sleep 30 & wait"
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", "bisect", history.good, "upstream", "--", "sh", "-c"]
        + [script],
        cwd=history.repo.path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 128 + signum, proc.stderr
    assert "interrupted" in proc.stderr
    assert marker.exists()  # COMMAND was asked to stop (SIGTERM to its session)
    assert os.listdir(scratch_root) == []
    assert user_state(history.repo) == before


def test_a_killed_bisect_leaves_a_scratch_that_the_next_one_removes(
    history: History, scratch_root: Path
) -> None:
    before = user_state(history.repo)
    kill = [sys.executable, "-m", "patchstack", "bisect", history.good, "upstream", "--"]
    proc = subprocess.run(
        [*kill, "sh", "-c", "kill -KILL $PPID"], cwd=history.repo.path, capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL
    assert len(os.listdir(scratch_root)) == 1
    assert "patchstack bisect scratch (pid" in history.repo.git("worktree", "list", "--porcelain")
    first = history.commits[1]
    check = f'test "$PATCHSTACK_BISECT_COMMIT" != {first}'  # the upstream commit under test
    out = history.ps("bisect", history.good, first, "--", "sh", "-c", check).stdout
    assert f"first failing commit: {first}" in out
    assert os.listdir(scratch_root) == []
    assert user_state(history.repo) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["upstream", "{good}", "--", "true"], "no commits from upstream to"),
        (["{good}", "main", "--", "true"], "main has patch commits on top (raw-value.patch)"),
        (["{good}", "upstream"], "no COMMAND to run"),
        (["{good}", "nope", "--", "true"], "unknown revision 'nope'"),
        (["{good}", "upstream", "--only", "opt", "--", "true"], "unknown tag 'opt'"),
        (["{good}", "upstream", "--metric", "x", "--", "true"], "go with --threshold"),
        (["{good}", "upstream", "--threshold", "ten%", "--", "true"], "not a number"),
        (
            ["{good}", "upstream", "--threshold", "1", "--metric", "(", "--", "true"],
            "--metric: not",
        ),
        (["{good}", "upstream", "--", "./no-such-script"], "cannot run './no-such-script'"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(
    history: History, scratch_root: Path, args: list[str], message: str
) -> None:
    before = user_state(history.repo)
    argv = [a.format(good=history.good) for a in args]
    result = history.ps("bisect", *argv, code=2)
    assert message in result.stderr and "hint:" in result.stderr
    assert user_state(history.repo) == before
    assert os.listdir(scratch_root) == []


def test_an_exit_status_of_128_or_more_aborts(history: History, scratch_root: Path) -> None:
    result = history.ps("bisect", history.good, "upstream", "--", "sh", "-c", "exit 130", code=1)
    assert "COMMAND aborted the bisect" in result.stdout
    assert "-> abort: exit 130" in result.stderr
    assert os.listdir(scratch_root) == []


def test_good_off_the_first_parent_line_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.txt": "a\n"})
    repo.ps("init")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "side")
    repo.write("b.txt", "b\n")
    side = repo.commit_all("side work")
    repo.git("checkout", "-q", "main")
    repo.write("c.txt", "c\n")
    repo.commit_all("main work")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    result = repo.ps("bisect", side, "main", "--", "true", code=2)
    assert "is not on the first-parent history of main" in result.stderr
    assert base  # GOOD on the line works (covered above); here only the refusal


# -- the search and the judge, without a repository ------------------------------------------


def simulate(n: int, culprit: int, skipped: set[int]) -> tuple[str, tuple[int, ...], int]:
    verdicts: dict[int, str] = {}
    while True:
        kind, which = plan(n, verdicts)
        if kind != "test":
            return kind, which, len(verdicts)
        i = which[0]
        assert i not in verdicts
        verdicts[i] = SKIP if i in skipped else (BAD if i >= culprit else GOOD)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 16])
def test_plan_finds_every_culprit_and_only_blames_skips_next_to_it(n: int) -> None:
    for culprit in range(1, n + 1):
        inner = [i for i in range(1, n) if i != culprit]
        for k in (0, 1, 2):
            for skipped in map(set, itertools.combinations(inner, k)):
                kind, which, tests = simulate(n, culprit, skipped)
                if kind == "found":
                    assert which == (culprit,)
                else:
                    assert kind == "ambiguous", (culprit, skipped, kind)
                    assert which[-1] == culprit and set(which[:-1]) <= skipped
                    assert all(i in skipped for i in range(which[0], culprit))
                assert tests <= n.bit_length() + 2 + len(skipped)


def test_plan_names_the_ends_that_contradict() -> None:
    assert plan(4, {2: GOOD, 3: GOOD, 4: GOOD}) == ("no-failure", (4,))
    assert plan(4, {0: BAD}) == ("good-fails", (0,))
    assert plan(4, {2: BAD, 1: BAD}) == ("test", (0,))  # the answer would be GOOD's child
    assert plan(4, {2: GOOD, 3: GOOD, 4: SKIP}) == ("ambiguous", (4,))


def test_judge_reads_exit_statuses_like_git_bisect_run() -> None:
    judge = Judge()
    assert judge.verdict(0, None)[0] == GOOD
    assert judge.verdict(1, None)[0] == BAD
    assert judge.verdict(127, None)[0] == BAD
    assert judge.verdict(125, None)[0] == SKIP
    assert judge.verdict(128, None)[0] == "abort"
    assert judge.verdict(-9, None) == ("abort", "killed by SIGKILL")
    slow = Judge(80.0)
    assert slow.figure("tokens/s: 94.2 (3 runs)") == 3.0  # the last number on the line
    assert slow.verdict(0, 79.9) == (BAD, "79.9 < 80")
    assert slow.verdict(1, 99.0)[0] == BAD  # a crash is bad whatever it printed
    assert slow.verdict(0, None)[0] == "abort"
    fast = Judge(50.0, lower_is_better=True)
    assert fast.verdict(0, 49.0) == (GOOD, "49 <= 50")
    import re

    picked = Judge(80.0, metric=re.compile(r"tokens/s: ([0-9.]+)"))
    assert picked.figure("tokens/s: 94.2 (3 runs)") == 94.2
    assert picked.figure("3 runs") is None


def test_stops_are_runs_of_one_patch_between_builds() -> None:
    from patchstack.commands.bisect_run import Stop, locate, stops

    built = {1: None, 3: "a.patch", 4: "a.patch", 6: None, 7: "b.patch", 9: "b.patch"}
    assert stops(built) == (Stop("a.patch", 3, 4, 1, 6, 2), Stop("b.patch", 7, 9, 6, None, 2))
    # Pinned by builds alone: a.patch stops applying at 2 and applies again at 5; b.patch
    # does not apply from 7 on, up to BAD (10).
    truth = {i: "a.patch" if 2 <= i <= 4 else ("b.patch" if i >= 7 else None) for i in range(11)}
    asked: list[int] = []

    def build(i: int) -> str | None:
        asked.append(i)
        return truth[i]

    locate(build, built, 10, lambda patch: None)
    assert stops(built) == (Stop("a.patch", 2, 4, 1, 5, 3), Stop("b.patch", 7, 10, 6, None, 3))
    assert sorted(asked) == [2, 5, 10]
