"""The first stop traces only what it prints: the upstream commits of the hunks its short
report shows (`cli.conflicttext.printed_hunks`), in one walk of their files. Differential:
the stop prints exactly what tracing every hunk prints (``PATCHSTACK_TRACE_ALL=1``, the plain
algorithm), at the first stop and at the next one after ``--skip``, on generated drifts whose
culprit blocks differ in size (so the budget ends the report at varying hunks)."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from patchstack.checkout import open_checkout
from patchstack.cli.conflicttext import printed_hunks
from patchstack.engine.merging import blame, blame_first, unblamed
from patchstack.model.conflict import ConflictHunk, parse_markers

from .conftest import Repo, copy_repo, make_repo, numbered, slow_after

FILES, SPOTS = 6, (5, 25, 45)  # the patches rewrite three spots of each file


def _drift(tmp_path, seed: int) -> Repo:
    """Two patches ("Big": three spots in each of six files; "Later": one spot of two files),
    and an upstream where 1 to 5 commits, in random order, rewrote each spot."""
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "fork", {f"f{i}.py": numbered(60, f"f{i}") for i in range(FILES)})
    base = repo.head()

    def rewrite(path: str, at: int, word: str) -> None:
        lines = repo.read(path).splitlines(keepends=True)
        lines[at : at + 3] = [f"{word} {path} {at} {n}\n" for n in range(3)]
        repo.write(path, "".join(lines))

    for i in range(FILES):
        for at in SPOTS:
            rewrite(f"f{i}.py", at, "mine")
    repo.commit_all("Big\n\nPatchstack-Tag: essential")
    for i in (1, 4):
        rewrite(f"f{i}.py", 35, "later")
    repo.commit_all("Later\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    edits = [
        (f"f{i}.py", at, k)
        for i in range(FILES)
        for at in [*SPOTS, 35]
        for k in range(rng.randint(1, 5) if at != 35 or i in (1, 4) else 0)
    ]
    rng.shuffle(edits)
    for n, (path, at, k) in enumerate(edits):
        rewrite(path, at, f"up{k}")
        repo.commit_all(f"upstream {n}: {path} at {at}")
    repo.git("checkout", "-q", "main")
    return repo


@pytest.mark.parametrize("seed", slow_after([1, 2, 3], 1))  # seeds 2 and 3: -m slow
def test_a_stop_prints_what_tracing_every_hunk_prints(tmp_path, monkeypatch, seed: int) -> None:
    repo = _drift(tmp_path, seed)
    lazy = copy_repo(repo.path, tmp_path / "lazy")
    plain = copy_repo(repo.path, tmp_path / "plain")
    stops = []
    for verb in (("refresh", "--onto", "up"), ("refresh", "--skip")):
        monkeypatch.delenv("PATCHSTACK_TRACE_ALL", raising=False)
        got = lazy.ps(*verb, code=1).stderr
        monkeypatch.setenv("PATCHSTACK_TRACE_ALL", "1")
        want = plain.ps(*verb, code=1).stderr
        assert got == want
        stops.append(got)
    assert stops[0].startswith("conflict in patch Big.patch")
    assert "more conflicting hunk(s) in" in stops[0]  # the budget left hunks out
    assert "      ... and " in stops[0] or "    upstream commits that changed" in stops[0]
    assert stops[1].startswith("conflict in patch Later.patch")
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL")
    whole = copy_repo(repo.path, tmp_path / "json").ps("refresh", "--onto", "up", "--json", code=1)
    hunks = json.loads(whole.stdout)["stopped"]["hunks"]
    assert len(hunks) == FILES * len(SPOTS)  # --json: every hunk, traced
    assert all(h["upstream_commits"] for h in hunks)


def test_only_the_printed_hunks_files_are_traced(tmp_path) -> None:
    """`blame_first` traces the first hunks' files (every hunk of them) and nothing else; each
    hunk it traces gets what tracing every file gives."""
    repo = _drift(tmp_path, 4)
    base, up = repo.git("merge-base", "main", "up").strip(), repo.git("rev-parse", "up").strip()
    ws = open_checkout(None, str(repo.path))
    git = ws.git
    try:
        trees = git.trees_of([base, up, "main~1"])
        merged = git.merge_trees(trees[0], trees[1], trees[2], ("up", "Big"))
        bare = unblamed(git, "Big.patch", merged)
        assert len(bare.hunks) == FILES * len(SPOTS) and not any(h.traced for h in bare.hunks)
        every = blame(git, "Big.patch", merged, base, up)
        count = printed_hunks(bare)
        assert 0 < count < len(bare.hunks)
        some = blame_first(git, bare, base, up, count)
        printed = {h.path for h in bare.hunks[:count]}
        assert len(printed) < FILES
        for h, traced in zip(some.hunks, every.hunks, strict=True):
            assert h == (
                traced if h.path in printed else replace(traced, upstream=(), traced=False)
            )
    finally:
        git.close()


def _plain_markers(path: str, text: str) -> list[ConflictHunk]:
    """`parse_markers` as it read every line before it looked for the regions' openings."""
    hunks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("<<<<<<< ") or lines[i] == "<<<<<<<":
            start, sides, part = i + 1, ([], [], []), 0
            i += 1
            while i < len(lines) and not lines[i].startswith(">>>>>>>"):
                if lines[i].startswith("|||||||"):
                    part = 1
                elif lines[i] == "=======":
                    part = 2
                else:
                    sides[part].append(lines[i])
                i += 1
            now, expected, wanted = (tuple(s) for s in sides)
            hunks.append(ConflictHunk(path, start, expected, now, wanted))
        i += 1
    return hunks


def test_markers_read_from_their_openings_are_every_lines_reading() -> None:
    words = ["a", "", "\r", "<<<<<<< x", "<<<<<<<", "<<<<<<<\r", "<<<<<<<x", " <<<<<<< x"]
    words += ["=======", "======= ", "|||||||", "||||||| base", ">>>>>>>", ">>>>>>> y"]
    rng = random.Random(35)
    for _ in range(5000):
        text = "\n".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        assert parse_markers("p", text) == _plain_markers("p", text), repr(text)


def test_stop_by_stop_defers_what_defer_conflicts_defers(tmp_path) -> None:
    """Each conflict is triaged once (`KnockOns.known`, taken by `defer` and `stop`): moving
    the series stop by stop, skipping each primary conflict, leaves the same series (every
    deferral with its knock-ons' roots) as deferring every conflict in one run, which triages
    them all at once."""
    repo = make_repo(tmp_path / "fork", {f"m{i}.py": numbered(12, f"m{i}") for i in range(6)})
    base = repo.head()
    for i in range(18):
        if i < 6:  # primary: upstream rewrites the line; the first three create a file too
            repo.write(f"m{i}.py", repo.read(f"m{i}.py").replace(f"m{i} 6\n", f"mine {i}\n"))
            if i < 3:
                repo.write(f"new{i}.py", numbered(8, f"new{i}"))
        else:  # each edits a file a primary creates (a knock-on), or a line a primary made
            k = i % 3
            if i % 2:
                repo.write(f"new{k}.py", repo.read(f"new{k}.py") + f"tuned {i}\n")
            else:
                lines = repo.read(f"m{k}.py").splitlines(keepends=True)
                lines[5] = f"mine {k}, then {i}\n"  # the line the primary made
                repo.write(f"m{k}.py", "".join(lines))
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", f"Patch {i}\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for i in range(6):
        repo.write(f"m{i}.py", repo.read(f"m{i}.py").replace(f"m{i} 6\n", f"theirs {i}\n"))
    repo.commit_all("upstream rewrites line 6 everywhere")
    repo.git("checkout", "-q", "main")
    at_once = copy_repo(repo.path, tmp_path / "at-once")
    at_once.ps("refresh", "--onto", "up", "--defer-conflicts")
    stops = [repo.ps("refresh", "--onto", "up", code=1).stderr]
    while (step := repo.ps("refresh", "--skip", code=None)).exit_code == 1:
        stops.append(step.stderr)
    assert step.exit_code == 0, step.stderr
    # The six primaries stop; the six that change a line a primary made are knock-ons of it
    # (each merges once its root is in, resolved as the root has it: `engine.triage`).
    assert len(stops) == 6
    series = repo.read("patches/series")
    assert series == at_once.read("patches/series")
    assert series.count(" after Patch-") == 12  # the knock-ons, each with its root
    assert repo.tree() == at_once.tree()
