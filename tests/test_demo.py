"""`patchstack demo`: the whole story end to end on the bundled example."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_tells_the_story_and_writes_only_into_its_folder(tmp_path) -> None:
    cwd = tmp_path / "here"
    cwd.mkdir()
    (cwd / "mine.txt").write_text("untouched\n")
    home = tmp_path / "home"
    env = dict(os.environ, HOME=str(home))
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", "demo", "sandbox"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert sorted(p.name for p in cwd.iterdir()) == ["mine.txt", "sandbox"]
    assert not home.exists() or not any(home.iterdir())
    # The series with its tags, the strip, the baseline.
    assert "$ patchstack series" in out
    assert "oea-routing.patch  [optimization, moe]" in out
    assert "$ patchstack pop --only diagnostic,optimization" in out
    assert "popped 4 patch(es): nccl-env-propagation.patch, nccl-diagnostic-logging.patch" in out
    assert "now applied: 3 patch(es)" in out
    # The upstream pull, seen by status and check.
    assert "9d6d1af69a scheduler: initialize the TP group through init_tp_group" in out
    assert "conflict  nccl-diagnostic-logging.patch" in out
    # The conflict report: patch, file, hunk, upstream commit.
    assert "conflict in patch nccl-diagnostic-logging.patch" in out
    assert "srt/managers/scheduler.py:36:" in out
    assert "upstream commits that changed these lines:" in out
    # The resolution and the continue.
    assert '+            "Init TP group %d/%d on gpu %d via %s, NCCL env: %s.",' in out
    assert "merged    nccl-diagnostic-logging.patch  (resolved)" in out
    # The review.
    assert "$ patchstack review ../patches-before patches" in out
    assert "nccl-diagnostic-logging.patch" in out and "changed" in out
    # The experiments: a worktree beside the fork, bisect with the essentials, doctor.
    assert "made ../essential-only: 3 patch(es) on the series base" in out
    assert "../essential-only  3 patch(es) on" in out
    assert "first failing commit: 9d6d1af69a" in out
    # The bisect carries every patch across the refresh: the version before it, then the
    # refreshed one, with no step skipped.
    bisect = out[out.index("$ patchstack bisect") : out.index("$ patchstack doctor")]
    assert "-> skip" not in bisect
    assert "patches as in the series before log #5 (refresh --continue), base 434057dae1" in bisect
    assert "v2: patches as in the series now, base 9d6d1af69a" in bisect
    assert "import srt: srt (this work tree" in out and "everything agrees" in out
    assert "differs uncommitted edits in no patch: srt/utils.py" in out
    assert "\x1b[" not in out  # no colour in a pipe
    fork = cwd / "sandbox" / "fork"
    log = subprocess.run(
        ["git", "log", "--format=%s", "-9"], cwd=fork, capture_output=True, text=True
    ).stdout
    assert "scheduler: initialize the TP group through init_tp_group" in log


def test_demo_refuses_a_non_empty_folder(tmp_path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", "demo", "full"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "not empty" in proc.stderr
