"""The shortcuts of issue 35 (status, check, refresh, pop) give what the plain way gives:
each is compared with the plain way's output (byte-identical JSON, trees), and what it saves
is read from git's own trace (which processes ran), never from a clock."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, replace_line


def _imported(repo: Repo) -> None:
    """Three commits on HEAD imported as a series, then made the applied patches."""
    repo.git("branch", "base")
    for i, (f, n) in enumerate([("a.py", 3), ("b.py", 7), ("a.py", 20)]):
        replace_line(repo, f, f"{f[0]} {n}\n", f"{f[0]} {n} fork{i}\n")
        repo.commit_all(f"fork change {i}")
    repo.ps("import", "commits", "base..HEAD", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")


def _traced(repo: Repo, trace: Path, *args: str) -> tuple[str, str]:
    if trace.exists():
        trace.unlink()
    out = repo.ps(*args, code=None).stdout
    return out, trace.read_text() if trace.exists() else ""


def test_status_after_a_push_of_an_imported_series_proves_nothing_again(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """``push --all`` of commits whose chain an earlier command built (the import proved
    them) records them exact, as it does the commits it makes: ``status`` then reads no
    commit's change to prove it again, and says what it says with no cache at all."""
    _imported(repo)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    fast, traced = _traced(repo, trace, "status", "--json")
    assert "diff-tree --stdin" not in traced  # no applied commit's change read to prove it
    (repo.path / ".git" / "patchstack" / "cache").unlink()
    plain, traced = _traced(repo, trace, "status", "--json")
    assert "diff-tree --stdin" in traced  # (the plain way does read them)
    assert fast == plain
    assert {p["matches"] for p in json.loads(fast)["patches"]} == {"exact"}


def _knock_ons(repo: Repo) -> None:
    """p1 conflicts with upstream in b.py; p2 and p3 edit the lines of a.py next to p1's, so
    each conflicts only for p1's absence: both are placed on the same tree (upstream's), and
    their proofs merge p1 there."""
    repo.ps("init")
    repo.git("branch", "up")
    replace_line(repo, "b.py", "b 5\n", "b 5 p1\n")
    for i, n in enumerate((10, 11, 12)):
        replace_line(repo, "a.py", f"a {n}\n", f"a {n} p{i + 1} was here\n")
        repo.ps("new", f"p{i + 1}", "--tag", "essential")
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.py", "b 5\n", "b 5 upstream\n")
    repo.commit_all("upstream edits b 5")
    repo.git("checkout", "-q", "main")


def test_a_run_of_knock_ons_merges_each_root_once_and_says_the_same(
    repo: Repo, monkeypatch
) -> None:
    """Knock-ons placed on the same tree prove their roots with the same merges: each is
    made once (`engine.triage`), and check's report is byte for byte the plain path's."""
    from patchstack.engine import triage

    _knock_ons(repo)
    made: list[tuple[str, ...]] = []
    plain_place = triage.place_fast

    def counted(git, before, tree, after, labels, *rest):  # type: ignore[no-untyped-def]
        made.append((before, tree, after, labels[1]))
        return plain_place(git, before, tree, after, labels, *rest)

    monkeypatch.setattr(triage, "place_fast", counted)
    fast = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    assert len(made) == len(set(made))
    monkeypatch.setenv("PATCHSTACK_NO_FAST_PATH", "1")
    made.clear()
    plain = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    assert len(made) > len(set(made))  # (the plain way merges p1 there again)
    assert fast == plain
    kinds = {c["patch"]: c["kind"] for c in json.loads(fast)["conflicts"]}
    assert kinds == {"p1.patch": "primary", "p2.patch": "knock-on", "p3.patch": "knock-on"}


def test_pop_walks_the_stack_once_for_its_snapshots_and_records_the_same(
    repo: Repo, tmp_path: Path, monkeypatch
) -> None:
    """The operation log's snapshots name the applied patches before and after: a pop's HEAD
    after is in the stack read before it, and the stack before is the one the command read:
    the history is walked once, not three times; what is recorded is what a snapshot taken
    afresh says."""
    from .test_fixed_costs import recorded_and_taken, stack_of_three

    stack_of_three(repo)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    for args in (["pop"], ["push", "--all"], ["pop", "p1.patch"], ["pop", "--all"]):
        _out, traced = _traced(repo, trace, *args)
        walks = [ln for ln in traced.splitlines() if "%H%x01%T%x01%P%x01%B" in ln]
        recorded, taken = recorded_and_taken(repo)
        assert recorded == taken, args
        if args[0] == "pop" and args[1:] != ["--all"]:  # (down to the base: walked below it)
            # read_stack's, which the snapshot reuses; none where the command before kept
            # the stack it left (`state.keep_after`)
            assert len(walks) <= 1, (args, walks)


def test_an_upstream_marks_claim_is_proven_once_and_says_the_same(
    tmp_path: Path, monkeypatch
) -> None:
    """``# upstream: NAME COMMIT in UPSTREAM`` is checked by two merges (`evidence.brought`);
    once a refresh proved it, the next check takes the proof from the cache, and says what
    the plain path (which merges again) says."""
    from patchstack.engine import claims

    from .test_verdicts import two_patches

    repo, _evil = two_patches(tmp_path)
    base = repo.git("rev-parse", "HEAD~2").strip()
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    took = repo.commit_all("upstream takes p2")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up")
    assert f" in {took}\n" in repo.read("patches/series")
    repo.git("checkout", "-q", "up")
    replace_line(repo, "a.txt", "a 8\n", "a 8 up\n")
    repo.commit_all("upstream edits a 8")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up")  # proves the mark, and keeps the proof
    asked: list[str] = []
    plain_brought = claims.brought

    def counted(git, before, after, commit):  # type: ignore[no-untyped-def]
        asked.append(commit)
        return plain_brought(git, before, after, commit)

    monkeypatch.setattr(claims, "brought", counted)
    fast = repo.ps("check", "--json").stdout
    assert asked == []
    monkeypatch.setenv("PATCHSTACK_NO_FAST_PATH", "1")
    plain = repo.ps("check", "--json").stdout
    assert asked == [took]
    assert fast == plain


def test_the_upstream_search_reads_the_versions_at_once_and_finds_the_same(
    repo: Repo, monkeypatch
) -> None:
    """The search for the upstream commit that brought a patch (`evidence.first_holding`)
    steps through the versions of the patch's files; their trees are read in one batch per
    depth up front, not a few round trips per step, and the commit found is the same."""
    from patchstack.engine import evidence
    from patchstack.git.objects import Objects

    repo.write("deep/er/still/a.txt", "".join(f"a {i}\n" for i in range(1, 80)))
    repo.commit_all("a deep file")
    repo.ps("init")
    replace_line(repo, "deep/er/still/a.txt", "a 5\n", "a 5 mine\n")
    repo.ps("new", "p", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", "HEAD~1")
    text = repo.read("deep/er/still/a.txt")
    steps: list[tuple[str, dict[str, str | None]]] = []
    for i in range(30, 75):
        text = text.replace(f"a {i}\n", f"a {i} up\n", 1)
        steps.append((f"upstream edits a {i}", {"deep/er/still/a.txt": text}))
        if i == 50:
            text = text.replace("a 5\n", "a 5 mine\n", 1)
            steps.append(("upstream takes p", {"deep/er/still/a.txt": text}))
    took = repo.commit_steps(steps)[21]  # one fast-import for the 46 commits
    repo.git("checkout", "-q", "main")
    reads: list[int] = []
    plain_read = Objects.read_objects

    def counted(self, names):  # type: ignore[no-untyped-def]
        reads.append(len(names))
        return plain_read(self, names)

    monkeypatch.setattr(Objects, "read_objects", counted)
    ahead = repo.ps("check", "--onto", "up", "--json").stdout
    batched = len(reads)
    reads.clear()
    monkeypatch.setattr(evidence, "AHEAD", 0)
    one_by_one = repo.ps("check", "--onto", "up", "--json").stdout
    assert ahead == one_by_one
    assert json.loads(ahead)["patches"][0]["evidence"]["commit"] == took
    assert batched < len(reads), (batched, len(reads))
