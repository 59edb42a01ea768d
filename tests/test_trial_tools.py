"""tools/trial keeps working: `day_after.py` drives a generated two-day repository (the label
oracle's case, seed 5: deferred conflicts, knock-ons, patches taken upstream, one brought
back), and `check_labels.py` confirms every label it recorded against git, and refutes a
label made wrong in the record (a culprit, an upstream commit), so that it can fail."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from patchstack.cli import cli

from . import labels
from .conftest import Repo

TOOLS = Path(__file__).resolve().parent.parent / "tools" / "trial"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _in_process(session, args: tuple[str, ...]) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    """The real CLI in this process (CliRunner, in the session's folder): the same commands
    and outputs as the tool's own processes, ~3x sooner."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in session.env.items():
            mp.setenv(key, value)
        mp.chdir(session.work)
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def recorded(module_env) -> tuple[Path, dict, ModuleType]:  # type: ignore[no-untyped-def]
    """A fork of the generated case, its two days recorded by day_after."""
    tmp = module_env.mktemp("trial")
    repo = labels.write_case(labels.make_case(5), tmp / "fork")
    repo.ps("import", "commits", "base..work", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    day_after = _load("day_after")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(day_after.Session, "call", _in_process)
        assert day_after.main([str(repo.path), str(tmp / "work"), "up1", "up"]) == 0
    record = json.loads((tmp / "work.labels.json").read_text())
    return tmp / "work", record, _load("check_labels")


def test_the_day_after_is_recorded_in_the_oracles_order(recorded) -> None:  # type: ignore[no-untyped-def]
    work, record, _check = recorded
    commands = [" ".join(s["args"]) for s in record["steps"]]
    assert commands[:4] == [
        "status --json",
        "check --onto refs/trial/day1 --json",
        "refresh --onto refs/trial/day1 --defer-conflicts --json",
        "status --json",
    ]
    assert record["brought_back"] == {"p6.patch": "applied"}
    assert "push p6.patch" in commands and "refresh --continue" in commands
    assert "refresh --onto refs/trial/day2 --defer-conflicts --json" in commands
    # each deferred patch's conflict shown again the day after (its culprits judged too)
    assert "check --onto refs/trial/day2 --verbose --json" in commands
    assert commands[-2:] == ["check --json", "status"]
    # every step's HEAD and series folder are kept by a ref of the kept repository
    kept = Repo(work).git("for-each-ref", "--format=%(refname)", "refs/trial/").split()
    assert len([r for r in kept if r.startswith("refs/trial/step-")]) == len(commands)


def test_every_recorded_label_is_confirmed_by_git(recorded, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    work, record, check = recorded
    code = check.main([str(work), str(_write(tmp_path, record)), "--json", str(tmp_path / "v")])
    assert code == 0, capsys.readouterr().out
    table = json.loads((tmp_path / "v").read_text())["table"]
    assert not any(row["refuted"] for row in table.values()), capsys.readouterr().out
    for kind in ("conflict", "knock-on", "primary", "culprit", "upstream", "deferred", "push"):
        assert table[kind]["confirmed"] > 0, (kind, table)
    assert "replay" not in table, table  # every command the oracle asked for is recorded
    assert "refuted:" not in capsys.readouterr().out


def test_a_wrong_culprit_and_a_wrong_upstream_commit_are_refuted(recorded, tmp_path, capsys):  # type: ignore[no-untyped-def]
    work, record, check = recorded
    git = Repo(work)
    one = record["days"][0]
    step = next(s for s in record["steps"] if s["args"][:2] == ["refresh", "--onto"])
    data = json.loads(step["stdout"])
    hunk = data["deferred"][0]["hunks"][0]
    named = {c["commit"] for c in hunk["upstream_commits"]}
    # an upstream commit of day one that does not touch the hunk's file
    others = set(git.git("rev-list", f"{one['old']}..{one['new']}").split())
    others -= set(git.git("rev-list", f"{one['old']}..{one['new']}", "--", hunk["path"]).split())
    wrong = sorted(others - named)[0]
    hunk["upstream_commits"][0]["commit"] = wrong
    taken = next(p for p in data["patches"] if p["verdict"] == "upstream" and p["evidence"])
    taken["evidence"]["commit"] = one["old"]  # the old base brought nothing
    step["stdout"] = json.dumps(data)
    assert check.main([str(work), str(_write(tmp_path, record))]) == 1
    out = capsys.readouterr().out
    assert f"culprit {wrong[:12]} of {hunk['path']}" in out, out
    assert f"{taken['name']}: upstream in {one['old'][:12]}, but git" in out, out
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln[:1].isalpha()}
    assert rows["culprit"][1] == "1" and rows["evidence"][1] == "1", out


def test_the_tools_run_as_scripts() -> None:
    for name in ("day_after", "check_labels"):
        proc = subprocess.run(
            [sys.executable, str(TOOLS / f"{name}.py"), "--help"],
            capture_output=True,
            text=True,
            env={**os.environ},
        )
        assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr


def _write(tmp: Path, record: dict) -> Path:
    out = tmp / "labels.json"
    out.write_text(json.dumps(record))
    return out


def test_the_fast_git_answers_as_the_oracles_git(recorded, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """check_labels asks git differently on a large repository (lines by ``git grep``, the
    versions of a range by ``log -G``, ``log -S`` of the named commits only): each patch
    against each upstream commit, `not_brought` says what the oracle's own git says."""
    from .label_oracle import Oracle

    work, record, check = recorded
    replay = check.Replay(work, record, tmp_path)
    fast, plain = check.Counting(replay, set(), 10**6), Oracle(Repo(work))
    asked, ranged = 0, []
    anywhere = fast.git.anywhere
    fast.git.anywhere = lambda *a: ranged.append(a) or anywhere(*a)
    for day in record["days"]:
        span = Repo(work).git("rev-list", f"{day['old']}..{day['new']}").split()
        for commit in record["original"].values():
            for c in span:
                said = plain.not_brought(commit, c, day["old"], day["new"])
                assert fast.not_brought(commit, c, day["old"], day["new"]) == said, (commit, c)
                asked += 1
            for line in plain.git.added_lines(commit) + plain.git.removed_lines(commit):
                args = ("log", "--format=%H", "-S" + line, f"{day['old']}..{day['new']}")
                fast.git.focus = set(span)
                assert set(fast.git.run(*args).split()) == set(plain.git.run(*args).split())
    assert asked > 20 and ranged, (asked, ranged)


def test_the_pickaxe_answers_as_git_log_S(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """check_labels answers ``log -S`` from each commit's diff, read once: a moved line, a
    line edited into one that still holds the needle, a renamed file, a binary file and a
    merge each answer as git's own ``log -S``."""
    from types import SimpleNamespace

    check = _load("check_labels")
    repo = Repo(tmp_path)
    repo.git("init", "-q", "-b", "main")

    def commit(files: dict[str, bytes | None], message: str) -> None:
        for rel, data in files.items():
            if data is None:
                repo.git("rm", "-q", rel)
            else:
                (tmp_path / rel).write_bytes(data)
                repo.git("add", rel)
        repo.git("commit", "-q", "-m", message)

    body = b"".join(b"    line_%d();\n" % i for i in range(12))
    commit({"a.c": b"x();\ny();\nz();\n" + body, "bin.dat": b"\0x();\0"}, "base")
    commit({"a.c": b"y();\nz();\n" + body + b"x();\n"}, "move x")
    commit({"a.c": b"y();\ny();\nzz();\n" + body + b"x();\n"}, "y twice, z into zz")
    repo.git("mv", "a.c", "b.c")
    commit({"b.c": b"y();\ny();\nzz();\n" + body + b"x(); w();\n"}, "rename, x edited")
    commit({"bin.dat": b"\0x();\0x();\0"}, "binary")
    repo.git("checkout", "-q", "-b", "side", "HEAD~1")
    commit({"c.c": b"z();\n"}, "side: z")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    commit({"c.c": None}, "remove c.c")
    commits = repo.git("rev-list", "--all").split()
    fast = check.FastGit(SimpleNamespace(path=tmp_path, work=tmp_path))
    for needle in ("x();", "y();", "z();", "zz();", "line_3();", "w();", "nothing"):
        said = fast.pickaxe(needle, commits)
        git = set(repo.git("log", "--all", "--format=%H", "-S" + needle).split())
        assert {c for c, hit in said.items() if hit} == git, needle
    asked = [c for c in commits if fast.diffs[c] is None]  # asked of git
    assert len(asked) == 3, asked  # the merge and the two commits of bin.dat


def test_a_knock_on_whose_chain_git_cannot_take_is_unknown_not_refuted(tmp_path, capsys):  # type: ignore[no-untyped-def]
    """kernel-timers' day one (feat-new-flags.patch and swa-split-leaf-on-insert.patch,
    refuted): `chained_knock_ons` recorded and checked. p3 is a knock-on of p2, which waits
    for p1, whose modify/delete git's pick cannot take as p1 has it: unknown, as p2 (a
    knock-on of p1 itself) is, where the oracle's chain left p1 out and refuted p3."""
    from .test_label_oracle import chained_knock_ons

    repo, _base, _up = chained_knock_ons(tmp_path)
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    day_after = _load("day_after")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(day_after.Session, "call", _in_process)
        assert day_after.main([str(repo.path), str(tmp_path / "work"), "up", "up"]) == 0
    check = _load("check_labels")
    labels = tmp_path / "work.labels.json"
    code = check.main([str(tmp_path / "work"), str(labels), "--json", str(tmp_path / "v")])
    assert code == 0, capsys.readouterr().out
    found = json.loads((tmp_path / "v").read_text())
    assert not found["refuted"], found["refuted"]
    unknown = found["unknown"]["knock-on"]
    assert "day one check: p3.patch: p1.patch's conflict is not in lines" in unknown, unknown


def test_mkfork_makes_a_fork_whose_series_is_the_branch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`tools/trial/mkfork.sh MIRROR BRANCH DIR` (how the benchmarks' real forks are made): a
    clone whose engineer's branch is imported as a series over origin/main and pushed, with
    HEAD's tree the branch's and `lin` at HEAD."""
    from .conftest import make_repo

    up = make_repo(tmp_path / "up", {"a.py": "one\ntwo\nthree\n", "b.py": "x\n"})
    up.git("checkout", "-q", "-b", "eng/feature")
    up.write("a.py", "one\ntwo, changed\nthree\n")
    up.commit_all("change two")
    up.write("c.py", "new\n")
    up.commit_all("add c")
    up.git("checkout", "-q", "main")
    mirror = tmp_path / "mirror.git"
    up.git("clone", "-q", "--bare", str(up.path), str(mirror))
    fork = tmp_path / "fork"
    script = TOOLS / "mkfork.sh"
    proc = subprocess.run(
        ["bash", str(script), str(mirror), "eng/feature", str(fork)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    made = Repo(fork)
    assert made.tree() == made.tree("origin/eng/feature")
    assert made.head() == made.git("rev-parse", "lin").strip()
    listed = json.loads(made.ps("series", "--json").stdout)
    assert len(listed["patches"]) == 2
