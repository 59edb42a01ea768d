"""``refresh --onto TARGET --steps``: the series carried across a big drift in steps, each its
own refresh (one ``undo`` each), stopping at the conflicts of one upstream change at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line


@built_once
def drift(tmp_path: Path, conflicts: bool = True) -> Repo:
    """p1 edits a.py line 10, p2 b.py line 20; upstream ``up`` has five commits, of which (with
    ``conflicts``) 'u2' changes a.py line 10 and 'u4' b.py line 20."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential")
    replace_line(repo, "b.py", "b 20\n", "b 20 mine\n")
    repo.ps("new", "p2", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    edits = [
        ("u1 a.py 30", "a.py", "a 30\n", "a 30 up\n"),
        (
            "u2 a.py 10",
            "a.py",
            "a 10\n" if conflicts else "a 20\n",
            "a 10 up\n" if conflicts else "a 20 up\n",
        ),
        ("u3 b.py 5", "b.py", "b 5\n", "b 5 up\n"),
        (
            "u4 b.py 20",
            "b.py",
            "b 20\n" if conflicts else "b 35\n",
            "b 20 up\n" if conflicts else "b 35 up\n",
        ),
    ]
    for subject, path, old, new in edits:
        replace_line(repo, path, old, new)
        repo.commit_all(subject)
    repo.write("c.py", "new\n")
    repo.commit_all("u5 c.py")
    repo.git("checkout", "-q", "main")
    return repo


def series_files(repo: Repo) -> dict[str, bytes]:
    return {k: v for k, v in repo.snapshot().items() if k.startswith("patches/")}


def resolve_as_the_patch(repo: Repo, path: str) -> None:
    """Each conflict region resolved to the patch's side (its lines win)."""
    out, side = [], None
    for line in repo.read(path).splitlines(keepends=True):
        if line.startswith("<<<<<<<"):
            side = "ours"
        elif line.startswith("|||||||"):
            side = "base"
        elif line.startswith("======="):
            side = "theirs"
        elif line.startswith(">>>>>>>"):
            side = None
        elif side in (None, "theirs"):
            out.append(line)
    repo.write(path, "".join(out))


def test_without_conflicts_steps_give_the_one_shot_result(tmp_path: Path) -> None:
    repo = drift(tmp_path, conflicts=False)
    repo.ps("refresh", "--onto", "up")
    one_shot = repo.state()
    repo.ps("undo")
    for mode in ("2", "tags", "culprits"):
        before = repo.state()
        out = repo.ps("refresh", "--onto", "up", "--steps", mode).stdout
        assert "all" in out and "step(s) done" in out, out
        assert repo.state() == one_shot, mode
        assert "stepped" not in repo.ps("status").stdout  # done
        repo.ps("undo")
        if mode == "2":  # three steps, one undo each
            assert repo.state() != before
            repo.ps("undo")
            repo.ps("undo")
        assert repo.state() == before, mode


def test_culprit_steps_stop_at_one_upstream_change_each(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    before = repo.state()
    r = repo.ps("refresh", "--onto", "up", "--steps", code=1)
    assert "step 1 of 3: 2 upstream commit(s), ending after" in r.stdout
    assert "u2 a.py 10 (culprit of 1 conflict hunk(s))" in r.stdout
    assert "conflict in patch p1.patch" in r.stderr
    assert "step 1 of 3: its conflicts meet upstream's change up to" in r.stderr
    # The step's report: upstream's one change beside the patch's, its commit named.
    report = r.stderr[r.stderr.index("a.py:10:") :]
    assert "- a 10\n      + a 10 up" in report and "- a 10\n      + a 10 mine" in report
    assert "u2 a.py 10" in report and "u4" not in report
    st = repo.ps("status", code=1).stdout
    assert "a stepped refresh onto up: 0 of 3 step(s) done" in st, st
    resolve_as_the_patch(repo, "a.py")
    r = repo.ps("refresh", "--continue", code=1)
    assert "step 1 of 3" in r.stdout and "step 2 of 3" in r.stdout and "u4 b.py 20" in r.stdout
    assert "conflict in patch p2.patch" in r.stderr and "u4 b.py 20" in r.stderr
    stopped_at_2 = repo.state()
    # --abort goes back to before the first step, in one operation that undo takes back.
    r = repo.ps("refresh", "--abort")
    assert "the stepped refresh onto up is over" in r.stdout
    assert repo.state() == before
    assert "stepped" not in repo.ps("status").stdout
    repo.ps("undo")
    assert repo.state() == stopped_at_2
    resolve_as_the_patch(repo, "b.py")
    r = repo.ps("refresh", "--continue")
    assert "step 3 of 3" in r.stdout and "all 3 step(s) done: the series is on up" in r.stdout
    done = repo.state()
    assert repo.read("a.py") == numbered(40, "a").replace("a 10\n", "a 10 mine\n").replace(
        "a 30\n", "a 30 up\n"
    )
    assert "b 20 mine\n" in repo.read("b.py") and "b 5 up\n" in repo.read("b.py")
    assert repo.git("rev-parse", "up").strip()[:12] in repo.read("patches/series")
    assert "stepped" not in repo.ps("status").stdout  # done
    # One undo per step: the last step's refresh is one operation.
    repo.ps("undo")
    st = repo.ps("status").stdout
    assert "a stepped refresh onto up: 2 of 3 step(s) done" in st, st
    assert "next: 'patchstack refresh --continue' goes on with the next step" in st
    repo.ps("refresh", "--continue")
    assert repo.state() == done


def test_a_resolution_made_at_a_step_is_reused_by_the_later_steps(tmp_path: Path) -> None:
    """Each --continue of a step records its resolution (`refresh/resolutions`, as any
    --continue does); the same steps again, from the start, are settled by them, to the same
    end, without a stop."""
    repo = drift(tmp_path)
    before = repo.state()
    repo.ps("refresh", "--onto", "up", "--steps", code=1)
    resolve_as_the_patch(repo, "a.py")
    repo.ps("refresh", "--continue", code=1)
    resolve_as_the_patch(repo, "b.py")
    repo.ps("refresh", "--continue")
    stepped = repo.state()
    listing = repo.ps("resolutions").stdout
    assert "p1.patch  a.py" in listing and "p2.patch  b.py" in listing
    repo.ps("refresh", "--abort", code=2)  # nothing under way any more
    while repo.state() != before:
        repo.ps("undo")
    # The same steps again: every stop settled by the resolutions recorded the first time.
    r = repo.ps("refresh", "--onto", "up", "--steps")
    assert r.stdout.count("(recorded resolution") == 2, r.stdout
    assert repo.state() == stepped


def spawn(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTACK_TEST_")}
    return subprocess.run(
        [sys.executable, "-m", "patchstack", *args],
        cwd=repo.path,
        env={**keep, **env},
        capture_output=True,
        text=True,
    )


def test_a_kill_between_steps_or_inside_one_loses_nothing(tmp_path: Path) -> None:
    repo = drift(tmp_path, conflicts=False)
    repo.write("notes.txt", "my untracked note\n")
    repo.ps("refresh", "--onto", "up")
    one_shot = repo.state()
    repo.ps("undo")
    # Killed after the first of three steps: status says where it is and what to run.
    proc = spawn(
        repo, "refresh", "--onto", "up", "--steps", "2", PATCHSTACK_TEST_KILL_AT="step-done"
    )
    assert proc.returncode == -9, proc.stderr
    st = repo.ps("status").stdout
    assert "a stepped refresh onto up: 1 of 3 step(s) done" in st, st
    assert "next: 'patchstack refresh --continue' goes on with the next step" in st
    repo.ps("refresh", "--continue")
    assert repo.state() == one_shot
    for _ in range(3):
        repo.ps("undo")
    # Killed inside the second step's publish: undo puts that step back, then --continue.
    proc = spawn(
        repo, "refresh", "--onto", "up", "--steps", "2", PATCHSTACK_TEST_KILL_AT="journal-running#2"
    )
    assert proc.returncode == -9, proc.stderr
    r = repo.ps("status", code=None)
    assert "undo" in r.stdout + r.stderr
    repo.ps("undo")
    st = repo.ps("status").stdout
    assert "a stepped refresh onto up: 1 of 3 step(s) done" in st, st
    repo.ps("refresh", "--continue")
    assert repo.state() == one_shot


def test_skip_inside_a_step_defers_the_patch_and_goes_on(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--steps", code=1)
    r = repo.ps("refresh", "--skip", code=1)  # p1 deferred; step 2 stops at p2
    assert "step 2 of 3" in r.stdout and "conflict in patch p2.patch" in r.stderr
    resolve_as_the_patch(repo, "b.py")
    r = repo.ps("refresh", "--continue", "--json")
    data = json.loads(r.stdout)
    assert [s["ran"] for s in data["steps"]] == [False, True, True]
    assert [s["why"] for s in data["steps"]] == ["culprit", "culprit", "target"]
    assert data["new_base"] == repo.git("rev-parse", "up").strip()
    assert "# deferred: p1.patch" in repo.read("patches/series")
    assert "a 10 mine" not in repo.read("a.py") and "b 20 mine" in repo.read("b.py")


def test_bad_steps_are_refused_and_nothing_changes(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    before = repo.state()
    for args, said in (
        (("--onto", "up", "--steps", "often"), "--steps: 'often' is not 'culprits', 'tags'"),
        (("--onto", "up", "--steps", "0"), "--steps: '0' is not"),
        (("--steps", "3"), "--steps needs --onto TARGET"),
        (("--onto", "up", "--steps", "--patch", "p1"), "--steps takes no --patch"),
    ):
        r = repo.ps("refresh", *args, code=2)
        assert said in r.stderr, r.stderr
        assert repo.state() == before
    assert "stepped" not in repo.ps("status").stdout


def test_a_plain_refresh_after_an_aborted_stepped_one_is_not_stepped(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    repo.ps("refresh", "--onto", "up", "--steps", code=1)
    repo.ps("refresh", "--abort")
    repo.ps("refresh", "--onto", "up~1", code=1)  # a plain refresh elsewhere, stopped
    assert "stepped" not in repo.ps("status", code=1).stdout
    resolve_as_the_patch(repo, "a.py")
    r = repo.ps("refresh", "--continue", code=1)
    assert "step" not in r.stdout
    resolve_as_the_patch(repo, "b.py")
    r = repo.ps("refresh", "--continue")
    assert "step" not in r.stdout
    assert repo.git("rev-parse", "up~1").strip()[:12] in repo.read("patches/series")


def test_a_step_stop_with_many_hunks_keeps_its_screen(tmp_path: Path) -> None:
    """Forty conflicting hunks in one step: the report with the step's line stays within the
    conflict report's budget (60 lines), plus the two hint lines."""
    text = "".join(f"x {i}\n\n\n\n" for i in range(40))
    repo = make_repo(tmp_path / "fork", {"x.py": text})
    base = repo.head()
    repo.ps("init")
    repo.write("x.py", text.replace("x ", "x mine "))
    repo.ps("new", "big", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("x.py", text.replace("x ", "x up "))
    repo.commit_all("upstream rewrites every x")
    repo.write("y.py", "y\n")
    repo.commit_all("upstream adds y")
    repo.git("checkout", "-q", "main")
    r = repo.ps("refresh", "--onto", "up", "--steps", code=1)
    assert "step 1 of 2" in r.stdout and "(culprit of 40 conflict hunk(s))" in r.stdout
    assert "its conflicts meet upstream's change up to" in r.stderr
    assert "upstream rewrites every x" in r.stderr
    assert len(r.stderr.splitlines()) <= 60 + 2, r.stderr


def test_a_step_stop_shows_the_hunks_of_its_end_commit_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 mine\n")
    replace_line(repo, "a.py", "a 30\n", "a 30 mine\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 5\n", "a 5 up\n")
    repo.commit_all("first: a 5")
    replace_line(repo, "a.py", "a 30\n", "a 30 up\n")
    repo.commit_all("second: a 30")
    repo.git("checkout", "-q", "main")
    r = repo.ps("refresh", "--onto", "up", "--steps", "2", code=1)
    assert "step 1 of 1" in r.stdout and "ending after" in r.stdout and "second: a 30" in r.stdout
    err = r.stderr
    assert err.index("+ a 30 up") < err.index("+ a 5 up"), err
    assert "(1 of 2 conflicting hunk(s) changed by it, shown first)" in err
    # Without --steps the report keeps the file's order.
    repo.ps("refresh", "--abort")
    err = repo.ps("refresh", "--onto", "up", code=1).stderr
    assert err.index("+ a 5 up") < err.index("+ a 30 up")


def test_defer_conflicts_goes_through_every_step(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    r = repo.ps("refresh", "--onto", "up", "--steps", "--defer-conflicts", "--json")
    data = json.loads(r.stdout)
    assert [s["ran"] for s in data["steps"]] == [True, True, True]
    assert data["new_base"] == repo.git("rev-parse", "up").strip()
    series = repo.read("patches/series")
    assert "# deferred: p1.patch" in series and "# deferred: p2.patch" in series
    assert repo.tree() == repo.tree("up")


# A resolver that keeps upstream's side of each conflict region and marks it as the patch's
# ("a 10 up" -> "a 10 up mine"): the two changes combined.
COMBINES = """
packet = json.load(sys.stdin)
for f in packet["files"]:
    path = os.path.join("result", f["path"])
    out, side = [], None
    for line in open(path).read().splitlines(keepends=True):
        if line.startswith("<<<<<<<"):
            side = "ours"
        elif line.startswith(("|||||||", "=======")):
            side = "other"
        elif line.startswith(">>>>>>>"):
            side = None
        elif side is None:
            out.append(line)
        elif side == "ours":
            out.append(line.rstrip("\\n") + " mine\\n")
    open(path, "w").write("".join(out))
"""


def test_each_step_hands_its_conflicts_to_the_resolver(tmp_path: Path) -> None:
    from .test_resolver import resolver

    cmd = resolver(tmp_path, "combines", COMBINES)
    for how, repo in (
        (("--resolver", cmd), drift(tmp_path / "flag")),
        ((), drift(tmp_path / "config")),
    ):
        if not how:
            repo.git("config", "patchstack.resolver", cmd)
        r = repo.ps("refresh", "--onto", "up", "--steps", "culprits", *how)
        assert r.stdout.count(f"(resolved by {cmd}: machine-made") == 2, r.stdout
        assert "a 10 up mine\n" in repo.read("a.py") and "b 20 up mine\n" in repo.read("b.py")
        assert repo.git("rev-parse", "up").strip() in repo.read("patches/series")
        records = list((repo.path / "patches" / "resolutions").iterdir())
        assert len(records) == 2 and all(f"by: {cmd}\n" in p.read_text() for p in records)
        assert "stepped" not in repo.ps("status").stdout
