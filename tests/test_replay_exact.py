"""The replay is git's merge-ort, patch by patch: the fast ways refresh and check take (one
fast-import stream, merges of the last tree git can read carrying several proven patches at
once, throwaway commits written loose) give the very trees, patch by patch, and the very
conflicts that ``git rebase`` (merge-ort) gives on the benchmark's generated series (offsets,
three-way merges, conflicts and "trap" patches whose context also matches elsewhere) and on
the bundled example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.checkout import open_checkout
from patchstack.commands.state import make_engine, read_stack
from patchstack.demo import build_sandbox, upstream_pull
from patchstack.engine.contract import forget_clean
from patchstack.engine.placer import Placer
from patchstack.engine.replay import old_chain, replay, steps

from .conftest import Repo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools" / "bench"))
import gen  # noqa: E402

N = 80  # patches


@pytest.fixture(scope="module")
def fixture(module_env) -> dict:
    work = module_env.mktemp("bench-fixture")
    info = gen.generate(str(work / "fx"), n_files=240, sizes=[N], n_upstream=70, seed=16)
    info["dir"] = str(work / "fx")
    return info


def per_patch(repo: Repo, base: str) -> list[str]:
    """Paths and blob ids each commit of base..HEAD changed, oldest first."""
    out = repo.git("log", "--reverse", "--raw", "--no-abbrev", "--format=%x01", f"{base}..HEAD")
    return [chunk.strip() for chunk in out.split("\x01")[1:]]


def rebase(fx: dict, tmp: Path, onto: str) -> tuple[Repo, list[str]]:
    """git rebase (merge-ort) of the chain onto ``onto``, skipping each conflict."""
    repo = Repo(tmp)
    subprocess.run(
        ["git", "clone", "-q", os.path.join(fx["dir"], "repo.git"), str(tmp)], check=True
    )
    repo.git("checkout", "-q", "-B", "work", fx["chain"][N - 1])
    skipped = []
    proc = subprocess.run(
        ["git", "rebase", "-q", "--onto", onto, fx["base"], "work"], cwd=tmp, capture_output=True
    )
    while proc.returncode != 0:
        skipped.append(repo.git("rev-parse", last_done(tmp)).strip())
        proc = subprocess.run(["git", "rebase", "--skip"], cwd=tmp, capture_output=True)
    names = [p["name"] for p in fx["patches"]]
    return repo, [names[fx["chain"].index(c)] for c in skipped]


def last_done(tmp: Path) -> str:
    """The commit of the rebase step that stopped."""
    done = (tmp / ".git" / "rebase-merge" / "done").read_text().splitlines()
    return [ln for ln in done if ln.strip()][-1].split()[1]


def fork(fx: dict, tmp: Path) -> Repo:
    repo = Repo(tmp)
    subprocess.run(
        ["git", "clone", "-q", os.path.join(fx["dir"], "repo.git"), str(tmp)], check=True
    )
    repo.git("checkout", "-q", "-B", "work", fx["base"])
    shutil.copytree(os.path.join(fx["dir"], f"series-{N}"), tmp / "patches")
    (tmp / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    return repo


def git_commands(trace: Path) -> list[str]:
    names = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "start":
            args = [a for a in event["argv"][1:] if not a.startswith("-") and "=" not in a]
            names.append(args[0] if args else "")
    return names


Replayed = tuple[list, list, list[str]]  # trees patch by patch, conflicts, git commands run


def alone_and_in_runs(
    repo: Repo, target: str, tmp_path: Path, monkeypatch
) -> tuple[Replayed, Replayed]:
    """The series of ``repo`` replayed onto ``target`` (going on past conflicts, as `check`
    does), first with each patch merged alone (no Placer), then by the Placer (merge runs)."""
    ws = open_checkout(str(repo.path / "patches"), str(repo.path))
    git = ws.git
    series = ws.load_series()
    engine = make_engine(ws, series, read_stack(git))
    plan = steps(series, old_chain(git, engine, series), {})

    def run(placer: Placer | None, trace: Path) -> Replayed:
        monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
        done, conflicts = replay(
            git, plan, 0, git.tree_of(target), ("new", "old"), keep_going=True, placer=placer
        )
        monkeypatch.delenv("GIT_TRACE2_EVENT")
        trees = [(d.name, d.parent, d.tree) for d in done]
        return trees, [(n, t, m.tree, m.conflicted) for n, t, m in conflicts], git_commands(trace)

    try:
        alone = run(None, tmp_path / "alone.json")
        forget_clean(git)  # each replay as a command of its own: no merge of the other's taken
        in_runs = run(Placer(engine, target, [s.name for s in plan]), tmp_path / "runs.json")
    finally:
        engine.close()
        git.close()  # and its scratch store
    return alone, in_runs


def test_refresh_gives_merge_ort_trees_patch_by_patch(fixture, tmp_path, monkeypatch) -> None:
    reference, skipped = rebase(fixture, tmp_path / "rebase", fixture["moved_clean"])
    assert skipped == []
    repo = fork(fixture, tmp_path / "fork")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    result = repo.ps("refresh", "--onto", fixture["moved_clean"])
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert repo.tree() == reference.tree()
    assert per_patch(repo, fixture["moved_clean"]) == per_patch(reference, fixture["moved_clean"])
    # The fast ways were taken: one fast-import stream for the replay (and one for the chain),
    # no commit-tree for the merges' throwaway commits, one merge-tree a merge at most.
    commands = git_commands(trace)
    merges = commands.count("merge-tree")
    rewritten = int(result.stdout.split("rewrote ")[1].split()[0])
    assert commands.count("fast-import") <= 2
    assert commands.count("commit-tree") == 0  # (the operation log's entries: in process)
    assert 0 < merges <= rewritten


# A larger variation of tests/test_merge_runs.py's process-per-merge case (the README's
# command runs that one: each patch of a run gets merge-ort's tree and conflict, in fewer
# merge-tree processes).
@pytest.mark.slow
def test_merge_runs_give_each_patch_its_own_merge(fixture, tmp_path, monkeypatch) -> None:
    """Patches merged in runs (engine/placer.py) get, one by one, the trees and conflicts of
    merging each alone with merge-ort, past conflicts too (as `check` goes on), in fewer
    merge-tree processes."""
    repo = fork(fixture, tmp_path / "fork")
    monkeypatch.setenv("PATCHSTACK_NO_MERGE_BATCH", "1")  # a process per merge, on every git
    # each patch alone merged (a region ours left as the base had it is carried without one)
    monkeypatch.setenv("PATCHSTACK_NO_REGION_CARRY", "1")
    replayed = alone_and_in_runs(repo, fixture["moved"], tmp_path, monkeypatch)
    (alone, alone_conflicts, commands_alone), (runs, runs_conflicts, commands_runs) = replayed
    assert len(alone_conflicts) >= 2
    assert runs_conflicts == alone_conflicts
    assert runs == alone
    merged_alone = commands_alone.count("merge-tree")
    merged_in_runs = commands_runs.count("merge-tree")
    assert merged_in_runs * 2 < merged_alone, (merged_in_runs, merged_alone)


# A larger variation of tests/test_differential.py, whose default seed compares check's
# conflicts with git rebase's (and tests/test_merge_runs.py's check through runs).
@pytest.mark.slow
def test_check_lists_merge_ort_conflicts(fixture, tmp_path) -> None:
    _reference, skipped = rebase(fixture, tmp_path / "rebase", fixture["moved"])
    assert skipped  # the fixture's move conflicts
    repo = fork(fixture, tmp_path / "fork")
    data = json.loads(repo.ps("check", "--onto", fixture["moved"], "--json", code=1).stdout)
    assert sorted(c["patch"] for c in data["conflicts"]) == sorted(skipped)


def test_the_example_refresh_is_merge_ort_up_to_its_conflict(tmp_path) -> None:
    box = build_sandbox(str(tmp_path / "sandbox"))
    repo = Repo(box.fork)
    old_base = repo.head()
    repo.ps("push", "--all")
    top = repo.head()
    upstream_pull(box)
    repo.git("fetch", "-q", "origin")
    new_base = repo.git("rev-parse", "origin/main").strip()
    reference = Repo(tmp_path / "rebase")
    subprocess.run(["git", "clone", "-q", box.fork, str(reference.path)], check=True)
    reference.git("checkout", "-q", "-B", "work", top)
    proc = subprocess.run(
        ["git", "rebase", "-q", "--onto", new_base, old_base, "work"],
        cwd=reference.path,
        capture_output=True,
    )
    assert proc.returncode != 0  # the example's one real conflict
    stopped = reference.git("log", "-1", "--format=%B", last_done(reference.path))
    result = repo.ps("refresh", "--onto", "origin/main", code=1)
    assert per_patch(repo, new_base) == per_patch(reference, new_base)
    name = stopped.split("Patchstack-Patch: ")[1].split()[0]
    assert f"conflict in patch {name}" in result.stderr
