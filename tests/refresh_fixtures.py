"""A fork whose upstream moves by several commits, for the refresh and check tests.

The series (in this order):

- ``far.patch`` (diagnostic) edits b.py line 30; upstream inserts lines at the top of b.py,
  far away: an *offset*.
- ``near.patch`` (essential) edits a.py line 10; with ``conflict=True`` upstream edits a.py
  line 11, right next to it: a *conflict*.
- ``calm.patch`` (optimization) edits c.py; upstream touches only other files: *unchanged*.
- ``known.patch`` (essential) edits d.py line 20; upstream makes the very same change:
  *upstream*.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line

PATCHES = ["far.patch", "near.patch", "calm.patch", "known.patch"]


def make_fork(path: Path, conflict: bool = True) -> Repo:
    return _fork(path.parent, path.name, conflict)


@built_once
def _fork(folder: Path, name: str, conflict: bool) -> Repo:
    repo = make_repo(
        folder / name,
        {
            "a.py": numbered(40, "a"),
            "b.py": numbered(40, "b"),
            "c.py": numbered(40, "c"),
            "d.py": numbered(40, "d"),
            "docs/notes.md": "upstream notes\n",
            "docs/guide.md": "a guide nobody changes\n",
        },
    )
    repo.git("branch", "upstream")
    repo.ps("init")
    series = repo.read("patches/series")
    repo.write("patches/series", series + "\n# Patches for the accelerator fork.\n")
    replace_line(repo, "b.py", "b 30\n", "b 30 far\n")
    repo.ps("new", "far", "--tag", "diagnostic", "-m", "Far: log b\n\nWhy far exists.", "b.py")
    replace_line(repo, "a.py", "a 10\n", "a 10 near\n")
    repo.ps("new", "near", "--tag", "essential", "-m", "Near: fix a", "a.py")
    replace_line(repo, "c.py", "c 5\n", "c 5 calm\n")
    repo.ps("new", "calm", "--tag", "optimization,nvidia", "-m", "Calm: speed c", "c.py")
    replace_line(repo, "d.py", "d 20\n", "d 20 fixed\n")
    repo.ps("new", "known", "--tag", "essential", "-m", "Known: fix d", "d.py")
    move_upstream(repo, conflict)
    return repo


def move_upstream(repo: Repo, conflict: bool) -> None:
    """Four (or three) commits on branch ``upstream``, made without touching main's checkout."""
    wt = repo.path.parent / (repo.path.name + "-upstream")
    repo.git("worktree", "add", "-q", str(wt), "upstream")
    up = Repo(wt)
    up.write("b.py", "# header 1\n# header 2\n# header 3\n" + up.read("b.py"))
    up.git("commit", "-qam", "b: add a header far from the patch")
    if conflict:
        replace_line(up, "a.py", "a 11\n", "a 11 upstream\n")
        up.git("commit", "-qam", "a: rework line 11 next to the patch")
    up.write("e.py", "new upstream module\n")
    up.write("docs/notes.md", "upstream notes, revised\n")
    up.git("add", "-A")
    up.git("commit", "-qm", "docs and e.py: unrelated work")
    replace_line(up, "d.py", "d 20\n", "d 20 fixed\n")
    up.git("commit", "-qam", "d: the fix the fork carried")
    repo.git("worktree", "remove", "--force", str(wt))


def snapshot(repo: Repo) -> dict:
    """HEAD, refs, git status, every work tree and series file, and the index entries."""
    return {
        "head": repo.head(),
        # The operation log (refs/patchstack/) records every command, an abort included.
        "refs": repo.git(
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/remotes",
            "refs/worktree",
        ),
        # --no-optional-locks: the snapshot itself must not refresh (rewrite) the index.
        "status": repo.status_all("--no-optional-locks"),
        "files": repo.snapshot(),
        # The index entries (mode, blob, stage, path); stat data may be refreshed.
        "index": repo.git("--no-optional-locks", "ls-files", "--stage"),
    }


def quilt_applies(repo: Repo, rev: str, tmp: Path) -> dict[str, str]:
    """Apply the series with quilt (no fuzz) on a clean checkout of ``rev``; the files."""
    clone = tmp / "quilt"
    subprocess.run(["git", "clone", "-q", str(repo.path), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
    env = dict(os.environ, QUILT_PATCHES=str(repo.path / "patches"), QUILTRC="/dev/null")
    proc = subprocess.run(
        ["quilt", "push", "-a", "--fuzz=0"], cwd=clone, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {p: (clone / p).read_text() for p in ("a.py", "b.py", "c.py", "d.py")}


Edit = tuple[str, int, "str | None"]  # (file stem, line, text): line 0 writes the whole file,
# text None deletes it


def edit(repo: Repo, name: str, line: int, text: str | None) -> None:
    if text is None:
        (repo.path / f"{name}.py").unlink()
    elif not line:
        repo.write(f"{name}.py", text)
    else:
        lines = repo.read(f"{name}.py").splitlines(keepends=True)
        lines[line - 1] = text + "\n"
        repo.write(f"{name}.py", "".join(lines))


def series_fork(
    path: Path,
    files: dict[str, str],
    series: list[tuple[str, list[Edit]]],
    upstream: list[tuple[str, list[Edit]]],
) -> Repo:
    """A fork of ``files`` whose ``series`` (patch name, its edits: essential patches,
    imported and pushed on ``main``) meets ``upstream`` (commit subject, its edits) on the
    branch ``up``. Built once per worker for the same arguments (then copied)."""
    return _series_fork(path.parent, path.name, files, series, upstream)


@built_once
def _series_fork(
    folder: Path,
    name: str,
    files: dict[str, str],
    series: list[tuple[str, list[Edit]]],
    upstream: list[tuple[str, list[Edit]]],
) -> Repo:
    repo = make_repo(folder / name, files)
    base = repo.head()
    for name, edits in series:
        for f, line, text in edits:
            edit(repo, f, line, text)
        repo.commit_all(f"{name}\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for subject, edits in upstream:
        for f, line, text in edits:
            edit(repo, f, line, text)
        repo.commit_all(f"upstream {subject}")
    repo.git("checkout", "-q", "main")
    return repo


def stop_by_stop(
    repo: Repo, before_skip: Callable[[int], None] = lambda stops: None
) -> tuple[list[str], str, str]:
    """(what each stop printed, what the last command printed, the series after) of
    ``refresh --onto up``, then ``--skip`` at every stop; ``before_skip(n)`` runs before each
    skip, after n stops."""
    stops = [repo.ps("refresh", "--onto", "up", code=1).stderr]
    while True:
        before_skip(len(stops))
        step = repo.ps("refresh", "--skip", code=None)
        if step.exit_code != 1:
            break
        stops.append(step.stderr)
    assert step.exit_code == 0, step.stderr
    return stops, step.stdout + step.stderr, repo.read("patches/series")


Commit = tuple[str, str, str, str]  # (path, the line, its replacement, the message)


def relanded_fork(
    path: Path,
    files: dict[str, str],
    between: Sequence[Commit] = (),
    after: Sequence[Commit] = (),
) -> tuple[Repo, str, str, str]:
    """p1 fixes a.py's line 10 (``files`` hold a.py: ``numbered(40, "a")``); upstream, branch
    ``up``, lands the same fix, makes the commits ``between``, reverts the landing, lands the
    fix again and makes the commits ``after``; main is checked out again. (repo, the base,
    the landing, the re-landing.)"""

    def commit(c: Commit) -> str:
        replace_line(repo, c[0], c[1], c[2])
        return repo.commit_all(c[3])

    repo = make_repo(path, files)
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 fixed\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    landed = commit(("a.py", "a 10\n", "a 10 fixed\n", "land the fix"))
    for c in between:
        commit(c)
    repo.git("revert", "--no-edit", landed)
    reland = commit(("a.py", "a 10\n", "a 10 fixed\n", "land the fix again"))
    for c in after:
        commit(c)
    repo.git("checkout", "-q", "main")
    return repo, base, landed, reland


def small_function(k: int, indent: str = "    ") -> str:
    """``f{k}``, five lines (its ``y = x + k`` at its line 2), as moved code is found again."""
    return (
        f"def f{k}(x):\n{indent}y = x + {k}\n{indent}if y > {k}:\n"
        f"{indent}{indent}return y * {k}\n{indent}return 0\n\n\n"
    )


def fillers(tag: str, n: int) -> str:
    """``n`` small functions named after ``tag``: code around moved code."""
    return "".join(f"def {tag}_{i}():\n    return {i * 7}\n\n\n" for i in range(n))
