"""The culprit walks a refresh keeps from one command for the next (`KeptLines`) are read
under the ``diff`` attributes of the work tree (``git log -p``: a file ``-diff`` or
``binary`` there has no lines to trace). A walk kept under other attributes is not taken:
differential, a refresh stop by stop prints the same stops with the walks kept and without
(``PATCHSTACK_NO_PROOF_CACHE=1``) where a patch between two stops on the same file makes it
binary to git's diff, or where the user does between two commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, numbered
from .refresh_fixtures import stop_by_stop

SWITCH = "PATCHSTACK_NO_PROOF_CACHE"


def _fork(tmp_path: Path, attributes_patch: bool = True) -> Repo:
    """A edits g.py line 5; G (``attributes_patch``) adds a ``.gitattributes`` making g.py
    binary to git's diff; B edits g.py line 15; upstream rewrites both lines."""
    repo = make_repo(tmp_path / "fork", {"g.py": numbered(30, "g"), "h.py": "h\n"})
    base = repo.head()

    def commit(path: str, line: int | None, text: str, subject: str) -> None:
        if line is None:
            repo.write(path, text)
        else:
            lines = repo.read(path).splitlines(keepends=True)
            lines[line - 1] = text + "\n"
            repo.write(path, "".join(lines))
        repo.commit_all(subject)

    commit("g.py", 5, "A g5", "A\n\nPatchstack-Tag: essential")
    if attributes_patch:
        commit(".gitattributes", None, "g.py -diff\n", "G\n\nPatchstack-Tag: essential")
    commit("g.py", 15, "B g15", "B\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    commit("g.py", 5, "up g5", "upstream rewrites g5")
    commit("g.py", 15, "up g15", "upstream rewrites g15")
    repo.git("checkout", "-q", "main")
    return repo


def _traced(stop: str) -> str:
    return stop.split("g.py:", 1)[1]


def test_a_walk_kept_before_a_patch_makes_the_file_binary_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = stop_by_stop(repo)
    monkeypatch.setenv(SWITCH, "1")
    assert stop_by_stop(plain) == kept
    stops = kept[0]
    assert len(stops) == 2
    assert "upstream rewrites g5" in _traced(stops[0])
    assert "upstream rewrites g15" not in _traced(stops[1])  # binary to git's diff there


def test_a_walk_kept_before_the_user_changes_the_attributes_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _fork(tmp_path, attributes_patch=False)
    info = Path(repo.path) / ".git" / "info"
    info.mkdir(exist_ok=True)

    def binary(stops: int) -> None:  # between the stop at A and the skip: g.py binary
        (info / "attributes").write_text("g.py -diff\n" if stops else "")

    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = stop_by_stop(repo, binary)
    monkeypatch.setenv(SWITCH, "1")
    plain_info = Path(plain.path) / ".git" / "info"
    plain_info.mkdir(exist_ok=True)
    (plain_info / "attributes").write_text("")
    made = stop_by_stop(plain, lambda n: (plain_info / "attributes").write_text("g.py -diff\n"))
    assert made == kept
    assert "upstream rewrites g15" not in _traced(kept[0][1])
