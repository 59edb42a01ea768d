"""A publish that moves a ``.gitignore`` changes which untracked files a snapshot records: an
ignored file shows, a shown one is ignored. The snapshot after it is still derived
(`journal.derived._unignored`), and is the very one a scan takes
(``PATCHSTACK_NO_SNAPSHOT_DERIVE=1``): at a refresh's stop (upstream rewrote the ignore
rules), and after a pop and a push of a patch that changes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchstack.git import find_repo
from patchstack.journal import derived, oplog

from .conftest import Repo, copy_repo, make_repo

LINES = "".join(f"line {i}\n" for i in range(1, 21))
IGNORED = "*.log\n# 1\n# 2\n# 3\n# 4\nbuild/\n"  # (A and upstream change it apart)


def _fork(tmp_path: Path) -> Repo:
    """Patch A edits f.py's line 5 and ignores ``*.out``; upstream (branch ``up``)
    rewrites that line and ignores ``*.tmp`` instead of ``*.log``. The user's untracked files:
    debug.log (ignored on main), scratch.tmp (shown on main), run.out (ignored with A)."""
    repo = make_repo(tmp_path / "fork", {"f.py": LINES, ".gitignore": IGNORED})
    base = repo.head()
    repo.write("f.py", LINES.replace("line 5\n", "A 5\n"))
    repo.write(".gitignore", IGNORED.replace("build/", "*.out"))
    repo.commit_all("A\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("f.py", LINES.replace("line 5\n", "up 5\n"))
    repo.write(".gitignore", IGNORED.replace("*.log", "*.tmp"))
    repo.commit_all("upstream ignores *.tmp")
    repo.git("checkout", "-q", "main")
    for name in ("debug.log", "scratch.tmp", "run.out"):
        repo.write(name, f"mine: {name}\n")
    return repo


def _after(repo: Repo) -> dict[str, Any]:
    entry = next(iter(oplog.entries(find_repo(str(repo.path)))))
    assert entry.after is not None
    return entry.after.to_json()


def _files(repo: Repo, tree: str) -> list[str]:
    return repo.git("ls-tree", "-r", "--name-only", tree).split()


@pytest.mark.parametrize("how", ["stop", "pop", "pop-push"])
def test_a_moved_gitignore_records_the_snapshot_a_scan_takes(
    tmp_path: Path, monkeypatch, how: str
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    results: list[bool] = []
    for name in ("overlaid_snapshot", "moved_snapshot"):
        real = getattr(derived, name)

        def spied(*args, real=real, **kwargs):  # type: ignore[no-untyped-def]
            got = real(*args, **kwargs)
            results.append(got is not None)
            return got

        monkeypatch.setattr(derived, name, spied)

    def run(repo: Repo) -> list[dict[str, Any]]:
        if how == "stop":
            repo.ps("refresh", "--onto", "up", code=1)
            return [_after(repo)]
        repo.ps("pop", "--all")
        found = [_after(repo)]
        if how == "pop-push":
            repo.ps("push", "--all")
            found.append(_after(repo))
        return found

    derived_ones = run(repo)
    assert results and all(results), results  # derived, not scanned
    monkeypatch.setenv("PATCHSTACK_NO_SNAPSHOT_DERIVE", "1")
    assert run(plain) == derived_ones
    shown = _files(repo, derived_ones[0]["worktree"])
    if how == "stop":  # upstream's rules: *.tmp ignored, *.log shown
        assert "debug.log" in shown and "scratch.tmp" not in shown and "run.out" not in shown
    else:  # the base's rules: *.log ignored, *.out shown
        assert "debug.log" not in shown and "run.out" in shown and "scratch.tmp" in shown


def test_the_snapshot_after_a_stop_edits_only_what_the_move_did_not_write(
    tmp_path: Path, monkeypatch
) -> None:
    """Upstream changed 30 files the stop's move writes: the snapshot after it is made from
    the tree the move wrote, edited at the few paths the work tree holds otherwise (the
    stopped file, the user's untracked one), not from the tree before edited at all 30."""
    from patchstack.git import Git

    from .refresh_fixtures import series_fork

    files = {f"{n}.py": LINES for n in ["f", *(f"h{i}" for i in range(30))]}
    upstream = [("rewrites", [("f", 5, "up 5"), *((f"h{i}", 3, "up 3") for i in range(30))])]
    repo = series_fork(tmp_path / "fork", files, [("A", [("f", 5, "A 5")])], upstream)
    repo.write("mine.txt", "mine\n")
    edited: list[int] = []
    real = Git.edit_tree

    def counted(self, tree, changes):  # type: ignore[no-untyped-def]
        edited.append(len(changes))
        return real(self, tree, changes)

    monkeypatch.setattr(Git, "edit_tree", counted)
    results: list[bool] = []
    real_overlaid = derived.overlaid_snapshot

    def spied(*args, **kwargs):  # type: ignore[no-untyped-def]
        edited.clear()
        got = real_overlaid(*args, **kwargs)
        results.append(got is not None)
        return got

    monkeypatch.setattr(derived, "overlaid_snapshot", spied)
    repo.ps("refresh", "--onto", "up", code=1)
    assert results == [True]
    assert edited and max(edited) <= 3, edited  # f.py, mine.txt
