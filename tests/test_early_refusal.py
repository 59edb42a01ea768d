"""A refresh that moves the base refuses uncommitted edits in files upstream changed (and no
patch touches) before it plans or replays anything (`start.refuse_edits_early`): the move's own
message and exit status, nothing changed, and no merge run first (on dflash_v2 the refusal
came after 5 s of replay). Where ``read-tree`` would not refuse (an index entry that is the
new version already, a file deleted from the work tree alone) it is not refused early either:
the refresh goes on as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Repo
from .refresh_fixtures import make_fork, snapshot


def _traced(repo: Repo, tmp_path: Path, monkeypatch, *args: str, code: int) -> tuple[str, list]:
    trace = tmp_path / "trace"
    trace.unlink(missing_ok=True)
    monkeypatch.setenv("GIT_TRACE", str(trace))
    try:
        result = repo.ps(*args, code=code)
    finally:
        monkeypatch.delenv("GIT_TRACE")
    marker = "trace: built-in: git "
    lines = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    return result.stderr, [ln.split(marker, 1)[1] for ln in lines if marker in ln]


@pytest.mark.parametrize("defer", [False, True])
def test_an_edit_upstream_changes_is_refused_before_any_merge(
    tmp_path: Path, monkeypatch, defer: bool
) -> None:
    repo = make_fork(tmp_path / "fork")  # upstream: b.py, a.py (near's lines), e.py, notes
    repo.write("docs/notes.md", "mine\n")  # upstream changes it; no patch does
    repo.write("e.py", "my own e.py\n")  # untracked: upstream adds one
    before = snapshot(repo)
    args = ("refresh", "--onto", "upstream", *(["--defer-conflicts"] if defer else []))
    err, ran = _traced(repo, tmp_path, monkeypatch, *args, code=2)
    assert "uncommitted edits in files this command would change: docs/notes.md, e.py" in err
    assert "nothing was changed" in err
    # no patch changes them: folding into one is no way out, capturing them is
    assert "patchstack new" in err and "fold them" not in err
    assert snapshot(repo) == before
    assert repo.read("e.py") == "my own e.py\n" and repo.read("docs/notes.md") == "mine\n"
    assert not [r for r in ran if r.startswith(("merge-tree", "merge-file", "read-tree"))], ran


def test_an_edit_in_a_patch_file_is_left_to_the_move(tmp_path: Path, monkeypatch) -> None:
    """b.py: upstream and the patch far change it; whether the move changes it is known after
    the replay: refused there, as before (the replay ran)."""
    repo = make_fork(tmp_path / "fork", conflict=False)
    repo.write("b.py", repo.read("b.py") + "my line\n")
    before = snapshot(repo)
    err, ran = _traced(repo, tmp_path, monkeypatch, "refresh", "--onto", "upstream", code=2)
    assert "uncommitted edits in files this command would change: b.py" in err
    assert snapshot(repo) == before
    assert any(r.startswith("merge-tree") for r in ran), ran


@pytest.mark.parametrize("how", ["staged as upstream has it", "deleted from the work tree"])
def test_what_the_move_goes_over_is_not_refused_early(tmp_path: Path, how: str) -> None:
    """docs/notes.md, which upstream changes and no patch touches, staged as upstream has it
    (read-tree keeps the entry) or deleted from the work tree alone (read-tree writes the new
    version): the refresh moves over it, as it did before the early check; an edit upstream
    never touches is carried."""
    repo = make_fork(tmp_path / "fork", conflict=False)
    upstream_notes = repo.git("show", "upstream:docs/notes.md")
    if how.startswith("staged"):
        repo.write("docs/notes.md", upstream_notes)
        repo.git("add", "docs/notes.md")
    else:
        (repo.path / "docs" / "notes.md").unlink()
    repo.write("docs/guide.md", "edited, upstream never changes it\n")
    repo.ps("refresh", "--onto", "upstream")
    assert repo.read("docs/notes.md") == upstream_notes
    assert repo.read("docs/guide.md") == "edited, upstream never changes it\n"
    repo.git("merge-base", "--is-ancestor", "upstream", "HEAD")
