"""``refresh --steps`` against the one-shot ``refresh --onto TARGET``: over generated drifts
(several upstream commits, some changing the patches' own lines, some moving them, some tagged),
every conflict resolved the same way (the patch's side of each region, as the one-shot would need
it), the stepped refresh ends with the same tree, the same applied commits' trees and the same
series as the one-shot one, whatever the steps (culprits, tags, every N)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from .conftest import Repo, make_repo, slow_after
from .test_steps import resolve_as_the_patch

FILES = ("a.py", "b.py", "c.py")
LINES = 40


def lines_of(name: str) -> list[str]:
    return [f"{name[0]} {i}" for i in range(1, LINES + 1)]


def generate(tmp_path: Path, seed: int) -> Repo:
    """A fork whose patches change lines of their own (three lines apart at least), and an
    upstream branch ``up`` of 4-9 commits: an edit of a patch's own line (a conflict),
    an edit far from every patch's lines, lines added at the top of a file (an offset), a new
    file; some commits tagged."""
    rng = random.Random(seed)
    files = {f: lines_of(f) for f in FILES}
    repo = make_repo(tmp_path / f"fork{seed}", {f: "\n".join(t) + "\n" for f, t in files.items()})
    base = repo.head()
    repo.ps("init")
    taken: dict[str, set[int]] = {f: set() for f in FILES}

    def free(f: str) -> int:
        while True:
            i = rng.randrange(5, LINES - 3)
            if all(abs(i - j) >= 3 for j in taken[f]):
                taken[f].add(i)
                return i

    own: list[tuple[str, int]] = []  # (file, 0-based line) the patches change
    for k in range(rng.randint(2, 4)):
        for _ in range(rng.randint(1, 2)):
            f = rng.choice(FILES)
            i = free(f)
            own.append((f, i))
            files[f][i] += f" mine{k}"
        for f in FILES:
            repo.write(f, "\n".join(files[f]) + "\n")
        repo.ps("new", f"p{k}", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    up = {f: lines_of(f) for f in FILES}
    far = {f: [i for i in range(LINES) if all(abs(i - j) >= 3 for j in taken[f])] for f in FILES}
    for n in range(rng.randint(4, 9)):
        kind = rng.choice(("conflict", "conflict", "far", "top", "new"))
        if kind == "conflict":
            f, i = rng.choice(own)
            shift = len(up[f]) - LINES
            up[f][i + shift] += f" up{n}"
        elif kind == "far":
            f = rng.choice(FILES)
            shift = len(up[f]) - LINES
            up[f][rng.choice(far[f]) + shift] += f" up{n}"
        elif kind == "top":
            f = rng.choice(FILES)
            up[f][0:0] = [f"# added by u{n}"] * rng.randint(1, 3)
        else:
            repo.write(f"new{n}.py", f"u{n}\n")
        for f in FILES:
            repo.write(f, "\n".join(up[f]) + "\n")
        repo.commit_all(f"u{n} {kind}")
        if rng.random() < 0.3:
            repo.git("tag", f"v{n}")
    repo.git("checkout", "-q", "main")
    return repo


def settle(repo: Repo, *args: str) -> int:
    """Run a refresh, resolving every stop as the patch's side, to its end; the stops."""
    stops = 0
    r = repo.ps("refresh", *args, code=None)
    while r.exit_code == 1:
        stops += 1
        marked = [f for f in repo.snapshot() if "<<<<<<<" in repo.read(f)]
        assert marked, r.stderr
        for f in marked:
            resolve_as_the_patch(repo, f)
        r = repo.ps("refresh", "--continue", code=None)
        assert stops < 40
    assert r.exit_code == 0, r.stdout + r.stderr
    return stops


def result(repo: Repo) -> tuple[object, ...]:
    applied = repo.git("log", "--format=%T", "up..HEAD").split()
    series = {k: v for k, v in repo.snapshot().items() if k.startswith("patches/")}
    return repo.tree(), applied, series, repo.git("rev-parse", "HEAD~0^{tree}")


def back_to(repo: Repo, state: object) -> None:
    for _ in range(40):
        if repo.state() == state:
            return
        repo.ps("undo")
    raise AssertionError("undo did not go back")


MODES = ("culprits", "tags", "2")
# Seed 1's culprit steps by default; its tag and every-2 steps, and seeds 3-5, with -m slow.
CASES = [
    pytest.param(1, ("culprits",), id="1-culprits"),
    pytest.param(1, ("tags", "2"), id="1-tags-2"),
    *(pytest.param(seed, MODES, id=str(seed)) for seed in (3, 4, 5)),
]


@pytest.mark.parametrize("seed, modes", slow_after(CASES, 1))  # 1-3 steps that stop, 1-2 one-shot
def test_steps_end_where_the_one_shot_refresh_ends(
    tmp_path: Path, seed: int, modes: tuple[str, ...]
) -> None:
    repo = generate(tmp_path, seed)
    before = repo.state()
    one_shot_stops = settle(repo, "--onto", "up")
    one_shot = result(repo)
    for mode in modes:
        back_to(repo, before)
        # Not what the one-shot recorded: each step resolves its own conflicts.
        repo.ps("resolutions", "--forget")
        settle(repo, "--onto", "up", "--steps", mode)
        assert result(repo) == one_shot, (seed, mode, one_shot_stops)
