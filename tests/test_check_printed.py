"""``check`` without ``--verbose``/``--json`` traces only what it prints (`engine.printed`):
each primary conflict's first upstream commit, from its first file's hunks (all of a report
that may be superseded). Differential: the output is exactly what tracing every hunk prints
(``PATCHSTACK_TRACE_ALL=1``, the plain algorithm), on generated drifts; and the walk of
upstream's history (`Git.line_changes`) is given fewer files."""

from __future__ import annotations

import json
import random

import pytest

from patchstack.git import Git

from .conftest import Repo, copy_repo, make_repo, numbered, slow_after

FILES = 6


def _drift(tmp_path, seed: int) -> Repo:
    """Three patches: A rewrites spots of f0-f2, B of f3 and f4, C a line of f5; upstream
    rewrites each spot in 1 to 3 commits, in random order, and makes C's line its own way
    with C's line in it (C may be superseded)."""
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "fork", {f"f{i}.py": numbered(60, f"f{i}") for i in range(FILES)})
    base = repo.head()

    def rewrite(path: str, at: int, lines: list[str]) -> None:
        old = repo.read(path).splitlines(keepends=True)
        old[at : at + 1] = [f"{ln}\n" for ln in lines]
        repo.write(path, "".join(old))

    spots = {0: (5, 30), 1: (12,), 2: (40, 50), 3: (8,), 4: (20, 44)}
    for name, files in (("A", (0, 1, 2)), ("B", (3, 4))):
        for i in files:
            for at in spots[i]:
                rewrite(f"f{i}.py", at, [f"mine {name} {i} {at}"])
        repo.commit_all(f"{name}\n\nPatchstack-Tag: essential")
    rewrite("f5.py", 10, ["taken = 1"])
    repo.commit_all("C\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    edits = [(f"f{i}.py", at, k) for i, ats in spots.items() for at in ats for k in range(3)]
    edits = [e for e in edits if e[2] < rng.randint(1, 3)]
    edits.append(("f5.py", 10, 9))
    rng.shuffle(edits)
    for n, (path, at, k) in enumerate(edits):
        lines = ["taken = 1", "also = 2"] if k == 9 else [f"up{k} {path} {at}"]
        rewrite(path, at, lines)
        repo.commit_all(f"upstream {n}: {path} at {at}")
    repo.git("checkout", "-q", "main")
    return repo


def _walked(monkeypatch) -> list[list[str]]:
    """The paths of each walk of upstream's history, as `Git.line_changes` is asked."""
    walks: list[list[str]] = []
    plain, early = Git.line_changes, Git.start_line_changes

    def observed(self, rng, paths, *args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append(list(paths))
        return plain(self, rng, paths, *args, **kwargs)

    def begun(self, rng, paths, *args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append(["(begun)", *paths])
        return early(self, rng, paths, *args, **kwargs)

    monkeypatch.setattr(Git, "line_changes", observed)
    monkeypatch.setattr(Git, "start_line_changes", begun)
    return walks


# The generated drifts: the first seed of each by default, the others under -m slow.
@pytest.mark.parametrize("seed", slow_after([1, 2, 3], 1))
def test_check_prints_what_tracing_every_hunk_prints(tmp_path, monkeypatch, seed: int) -> None:
    repo = _drift(tmp_path, seed)
    plain = copy_repo(repo.path, tmp_path / "plain")
    walks = _walked(monkeypatch)
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL", raising=False)
    got = repo.ps("check", "--onto", "up", code=1).stdout
    lazy_walks = list(walks)
    walks.clear()
    monkeypatch.setenv("PATCHSTACK_TRACE_ALL", "1")
    want = plain.ps("check", "--onto", "up", code=1).stdout
    assert got == want
    assert "conflict  A.patch  f0.py (+2 more)  " in got  # an upstream commit named
    assert "superseded by " in got  # C: upstream's side has its line
    lazy = {p for w in lazy_walks for p in w} - {"(begun)"}
    every = {p for w in walks for p in w}
    assert lazy < every and "f1.py" not in lazy and "f5.py" in lazy
    # the first files' walk begun before the relocations, taken by the trace: the same lines
    # as when it is walked as the trace asks (PATCHSTACK_NO_EARLY_WALK=1)
    assert lazy_walks[0][0] == "(begun)" and "f5.py" in lazy_walks[0]
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL")
    monkeypatch.setenv("PATCHSTACK_NO_EARLY_WALK", "1")
    walks.clear()
    assert copy_repo(repo.path, tmp_path / "late").ps("check", "--onto", "up", code=1).stdout == got
    assert walks and all(w[0] != "(begun)" for w in walks)
    monkeypatch.delenv("PATCHSTACK_NO_EARLY_WALK")
    monkeypatch.setenv("PATCHSTACK_TRACE_ALL", "1")
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL")
    # --json is complete: every primary hunk traced, as before
    whole = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    hunks = [h for c in whole["conflicts"] for h in c["hunks"]]
    assert len(hunks) == 9 and all(h["upstream_commits"] for h in hunks)


@pytest.mark.parametrize("seed", slow_after([4, 5], 1))
def test_refresh_defers_what_tracing_every_hunk_defers(tmp_path, monkeypatch, seed) -> None:
    """``refresh --defer-conflicts`` prints its deferred conflicts as check does: the same
    lines whether every hunk is traced or only what is printed."""
    repo = _drift(tmp_path, seed)
    plain = copy_repo(repo.path, tmp_path / "plain")
    walks = _walked(monkeypatch)
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL", raising=False)
    got = repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    lazy = {p for w in walks for p in w} - {"(begun)"}  # (its first files' walk begun early)
    walks.clear()
    monkeypatch.setenv("PATCHSTACK_TRACE_ALL", "1")
    want = plain.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    assert got == want
    assert "deferred: 3 primary" in got and "superseded by " in got
    assert lazy < {p for w in walks for p in w}


@pytest.mark.parametrize("seed", slow_after([4, 1, 2], 1))
def test_a_deferring_refresh_takes_the_walks_an_earlier_command_kept(
    tmp_path, monkeypatch, seed: int
) -> None:
    """The culprit walk of each printed file is kept (`kept.KeptLines`, as a stop's is): a
    ``refresh --defer-conflicts`` after another one (undone) walks no file again, nor does a
    ``check`` after it, and both print what a walk prints (``PATCHSTACK_NO_PROOF_CACHE=1``:
    nothing kept, every file walked each time)."""
    repo = _drift(tmp_path, seed)
    plain = copy_repo(repo.path, tmp_path / "plain")
    walks = _walked(monkeypatch)
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL", raising=False)
    first = repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    assert walks
    repo.ps("undo")
    walks.clear()
    again = repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    assert again == first and walks == []
    repo.ps("undo")
    checked = repo.ps("check", "--onto", "up", code=1).stdout
    assert walks == []
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    plain.ps("refresh", "--onto", "up", "--defer-conflicts")
    plain.ps("undo")
    walks.clear()
    assert plain.ps("refresh", "--onto", "up", "--defer-conflicts").stdout == first
    assert walks
    plain.ps("undo")
    assert plain.ps("check", "--onto", "up", code=1).stdout == checked
