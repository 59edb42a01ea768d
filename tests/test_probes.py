"""Probes (issue 28, item 1): does each patch still do its job?

A patch carries a probe in its header (``new/edit --probe CMD``); ``check --probes`` runs it in
scratch trees of the target plus the selection, with and without the patch: effective,
ineffective (upstream absorbed it: a clean merge that leaves the patch doing nothing) or broken.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, numbered, replace_line

FAST = "grep -qx 'mode = fast' lib.txt"
TOOL = "test -x tool.sh && grep -q 'hook = on' lib.txt"


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    """Three patches on a base: fast (probed), hook (probed, needs tool.sh), notes (none);
    and a branch 'upstream' whose one commit merges cleanly with all three, makes 'fast'
    needless (it says 'mode = fast' itself) and takes tool.sh away."""
    tmp = module_env.mktemp("probes")
    lib = "mode = slow\n" + numbered(30, "lib") + "hook = off\n"
    repo = make_repo(tmp / "fork", {"lib.txt": lib, "tool.sh": "#!/bin/sh\n", "doc.txt": "doc\n"})
    repo.git("update-index", "--chmod=+x", "tool.sh")
    repo.git("commit", "-q", "-m", "tool is executable")
    (repo.path / "tool.sh").chmod(0o755)
    repo.ps("init")
    base = repo.head()
    log = '"$PROBE_LOG"'  # each probe run appends the folder it ran in (see `fork`)
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.ps("new", "fast", "--tag", "essential", "--probe", f'echo "$PWD" >> {log}; {FAST}')
    replace_line(repo, "lib.txt", "hook = off\n", "hook = on\n")
    repo.ps("new", "hook", "--tag", "essential", "--probe", f'echo "$PWD" >> {log}; {TOOL}')
    repo.write("doc.txt", "doc, patched\n")
    repo.ps("new", "notes", "--tag", "diagnostic")
    repo.git("branch", "upstream", base)
    repo.git("worktree", "add", "-q", str(tmp / "up"), "upstream")
    up = Repo(tmp / "up")
    replace_line(up, "lib.txt", "lib 20\n", "lib 20\nmode = fast\n")
    up.git("rm", "-q", "tool.sh")
    up.git("commit", "-q", "-am", "upstream: fast by default, no tool")
    repo.git("worktree", "remove", str(tmp / "up"))
    return tmp


@pytest.fixture
def fork(built: Path, tmp_path: Path, monkeypatch) -> tuple[Repo, Path]:
    copy_repo(built, tmp_path / "w")
    log = tmp_path / "runs.log"
    log.write_text("")
    monkeypatch.setenv("PROBE_LOG", str(log))  # the probes inherit the environment
    return Repo(tmp_path / "w" / "fork"), log


def probes_json(repo: Repo, *args: str, code: int = 0) -> dict:
    return json.loads(repo.ps("check", "--probes", "--json", *args, code=code).stdout)["probes"]


def test_the_probe_travels_in_the_patch_header(fork) -> None:
    repo, _log = fork
    line = f'Patchstack-Probe: echo "$PWD" >> "$PROBE_LOG"; {FAST}'
    head = repo.read("patches/fast.patch").split("\n---\n")[0]
    assert head.endswith(f"\n\n{line}")
    # It is part of the commit message: the applied commit and an exported mail carry it.
    assert f"\n\n{line}\n\nPatchstack-Patch: fast.patch\n" in repo.git(
        "log", "-1", "--format=%B", "HEAD~2"
    )
    assert f"\n\n{line}\n" in repo.ps("export", "mbox", "-").stdout
    data = json.loads(repo.ps("status", "--json").stdout)
    assert data["without_probe"] == ["notes.patch"]
    assert "probes: 2 of 3 patch(es); none: notes.patch" in repo.ps("status").stdout


def test_check_probes_effective_then_ineffective_and_broken_upstream(fork) -> None:
    repo, log = fork
    # An edit of the user's that makes "fast" look needless must not reach the probes.
    replace_line(repo, "doc.txt", "doc, patched\n", "doc, patched\nmode = fast\n")
    before = repo.state()
    result = repo.ps("check", "--probes")
    assert "  effective  fast.patch" in result.stdout
    assert "  effective  hook.patch" in result.stdout
    assert "no probe (1): notes.patch" in result.stdout
    assert "2 probe(s): 2 effective" in result.stdout
    ran_in = set(log.read_text().split())
    assert str(repo.path) not in ran_in and len(ran_in) >= 1  # scratch trees, not the user's

    # Upstream takes 'mode = fast' under another place and drops tool.sh; every patch still
    # applies (a clean merge), so only the probes see it.
    result = repo.ps("check", "--probes", "--onto", "upstream", code=1)
    assert "all patches apply" in result.stdout
    assert "ineffective  fast.patch: passes without it too (upstream absorbed it" in result.stdout
    assert "broken       hook.patch: fails with it" in result.stdout
    report = probes_json(repo, "--onto", "upstream", code=1)
    fast, hook = report["results"]
    assert (fast["verdict"], hook["verdict"]) == ("ineffective", "broken")
    assert fast["with"]["passed"] and fast["without"]["passed"]
    assert not hook["with"]["passed"] and hook["with"]["why"] == "exit 1"
    # The trees to reproduce with: real objects, "without" lacking exactly the patch.
    assert repo.git("cat-file", "-t", fast["without"]["commit"]).strip() == "commit"
    assert repo.tree(fast["without"]["commit"]) == fast["without"]["tree"]
    changed = repo.git("diff", "--name-only", fast["without"]["tree"], fast["with"]["tree"])
    assert changed.split() == ["lib.txt"]
    # Nothing of the user's moved; no scratch worktree is left.
    assert repo.state() == before
    assert len(repo.git("worktree", "list", "--porcelain").split("\n\n")) == 2  # main + ""


def test_runs_are_cached_by_tree_and_probe_and_bounded_by_jobs(fork) -> None:
    repo, log = fork
    probes_json(repo, "--jobs", "1")
    first = log.read_text().split()
    assert len(first) == 4 and len(set(first)) == 1  # 2 probes x with/without, one tree
    report = probes_json(repo, "--jobs", "2")
    assert log.read_text().split() == first  # nothing ran again
    assert all(r["with"]["cached"] and r["without"]["cached"] for r in report["results"])
    log.write_text("")
    probes_json(repo, "--jobs", "2", "--onto", "upstream", code=1)
    again = log.read_text().split()
    assert len(again) == 4 and len(set(again)) == 2  # two scratch trees at once, no more


def test_a_probe_that_runs_too_long_is_broken_and_the_check_fails(fork) -> None:
    repo, _log = fork
    repo.ps("edit", "hook", "--probe", "sleep 30")
    result = repo.ps("check", "--probes", "--probe-timeout", "0.5", "--only", "essential", code=1)
    assert "hook.patch: fails with it" in result.stdout
    assert "with it:    timed out after 0.5 s" in result.stdout
    repo.ps("edit", "hook", "--probe", "")  # removes it
    assert "Patchstack-Probe" not in repo.read("patches/hook.patch")
    repo.ps("check", "--probes")


def test_refresh_probes_after_the_replay(fork) -> None:
    repo, _log = fork
    result = repo.ps("refresh", "--onto", "upstream", "--probes", code=1)
    assert "ineffective  fast.patch" in result.stdout
    assert repo.git("rev-parse", "upstream").strip() in repo.read("patches/series")
    # The refreshed patch files keep their probes byte for byte.
    assert f"; {FAST}\n---\n" in repo.read("patches/fast.patch")


def test_bad_probes_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    repo.ps("init")
    repo.write("a.txt", "b\n")
    before = repo.state()
    result = repo.ps("new", "p", "--tag", "essential", "--probe", "true\nfalse", code=2)
    assert "--probe: a probe is one line" in result.stderr
    assert repo.state() == before


def test_fold_keeps_the_target_probe(fork) -> None:
    repo, _log = fork
    repo.ps("fold", "hook", "--into", "fast")
    text = repo.read("patches/fast.patch")
    assert text.count("Patchstack-Probe:") == 1 and f"; {FAST}\n" in text
