"""``refresh --onto TARGET --steps``: the series carried across a big drift in steps, each its
own refresh (one ``undo`` each), stopping at the conflicts of one upstream change at a time."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line


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
        assert not (repo.path / ".git/patchstack/steps.json").exists()
        repo.ps("undo")
        if mode == "2":  # three steps, one undo each
            assert repo.state() != before
            repo.ps("undo")
            repo.ps("undo")
        assert repo.state() == before, mode


def test_culprit_steps_stop_at_one_upstream_change_each(tmp_path: Path) -> None:
    repo = drift(tmp_path)
    # The one-shot refresh, resolved as the patch's side, for the comparison.
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    repo.ps("undo")
    before = repo.state()
    r = repo.ps("refresh", "--onto", "up", "--steps", code=1)
    assert "step 1 of 3: 2 upstream commit(s), ending after" in r.stdout
    assert "u2 a.py 10 (culprit of 1 conflict hunk(s))" in r.stdout
    assert "conflict in patch p1.patch" in r.stderr
    assert "step 1 of 3: its conflicts meet upstream's change up to" in r.stderr
    assert len(r.stderr.splitlines()) <= 62
    st = repo.ps("status", code=1).stdout
    assert "stepped refresh onto up: 0 of 3 step(s) done" in st, st
    resolve_as_the_patch(repo, "a.py")
    r = repo.ps("refresh", "--continue", code=1)
    assert "step 2 of 3" in r.stdout and "u4 b.py 20" in r.stdout
    assert "conflict in patch p2.patch" in r.stderr
    resolve_as_the_patch(repo, "b.py")
    r = repo.ps("refresh", "--continue")
    assert "step 3 of 3" in r.stdout and "all 3 step(s) done: the series is on up" in r.stdout
    assert repo.read("a.py") == numbered(40, "a").replace("a 10\n", "a 10 mine\n").replace(
        "a 30\n", "a 30 up\n"
    )
    assert "b 20 mine\n" in repo.read("b.py") and "b 5 up\n" in repo.read("b.py")
    series = repo.read("patches/series")
    assert repo.git("rev-parse", "up").strip()[:12] in series
    assert not (repo.path / ".git/patchstack/steps.json").exists()
    # One undo per step: the last step, the --continue that finished step 2, ...
    repo.ps("undo")
    assert "1 of 3 step(s) done" not in repo.ps("status").stdout
    # --abort goes back to before the first step, from wherever the steps are.
    after = repo.state()
    repo.ps("redo")
    assert repo.state() != after
