"""A summary line names at most three names within 100 characters, then "and N more", and cuts
an upstream subject at 50 characters (`output.some_names`, `fitted`); ``--verbose`` keeps all.
On a generated case that exceeds each cap: the hunks a record settled (an ``unknown`` or
any verdict's line), the upstream commit that brought a patch (``upstream`` line), an upstream
commit's files and patches in ``status``, and the files whose records are for other lines at
a stop. (Real forks: 320 to 1,057 characters on one line the day after a drift.)"""

from __future__ import annotations

import re
from pathlib import Path

from patchstack.cli.conflicttext import SUBJECT_SHOWN

from .conftest import Repo, built_once, make_repo, numbered, replace_line

FILES = [f"src/mod/m{i}.py" for i in range(5)]
SUBJECT = "Rework line ten of every module and line five of b.py, in one commit with a long subject"


@built_once
def fork(tmp_path: Path) -> Repo:
    """p1 changes line 10 of five files, p2 line 5 of b.py; upstream ``up`` changes those
    five lines too (five conflict hunks) and makes p2's very change, in one commit with a
    long subject; ``up2``: up with a header added to each file; ``up3``: up with line 10
    changed again in each. origin/main is ``up`` (status's drift)."""
    files = {p: numbered(40, f"m{i}") for i, p in enumerate(FILES)}
    repo = make_repo(tmp_path, {**files, "b.py": numbered(20, "b")})
    base = repo.head()
    repo.ps("init")
    for i, p in enumerate(FILES):
        replace_line(repo, p, f"m{i} 10\n", f"m{i} 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential", *FILES)
    replace_line(repo, "b.py", "b 5\n", "b 5 fixed\n")
    repo.ps("new", "p2", "--tag", "essential", "b.py")
    repo.git("checkout", "-q", "-b", "up", base)
    for i, p in enumerate(FILES):
        replace_line(repo, p, f"m{i} 10\n", f"m{i} 10 up\n")
    replace_line(repo, "b.py", "b 5\n", "b 5 fixed\n")
    repo.commit_all(SUBJECT)
    repo.git("checkout", "-q", "-b", "up2")
    for p in FILES:
        repo.write(p, "# header\n" + repo.read(p))
    repo.commit_all("upstream adds a header to each module")
    repo.git("checkout", "-q", "-b", "up3", "up")
    for i, p in enumerate(FILES):
        replace_line(repo, p, f"m{i} 10 up\n", f"m{i} 10 up again\n")
    repo.commit_all("upstream reworks line ten again")
    repo.git("checkout", "-q", "main")
    repo.git("remote", "add", "origin", str(repo.path))  # (never fetched)
    repo.git("update-ref", "refs/remotes/origin/main", repo.git("rev-parse", "up").strip())
    return repo


@built_once
def recorded(tmp_path: Path) -> Repo:
    """`fork`, its five conflict hunks resolved and recorded, then undone: the records stay."""
    repo = fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    for p in FILES:
        text = repo.read(p)
        repo.write(p, re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", "resolved\n", text, flags=re.S))
    repo.ps("refresh", "--continue")
    repo.ps("undo")
    repo.ps("undo")
    return repo


def _line(out: str, *words: str) -> str:
    found = [ln for ln in out.splitlines() if all(w in ln for w in words)]
    assert len(found) == 1, out
    return found[0]


def test_the_hunks_a_record_settled_and_the_upstream_subject_are_capped(tmp_path) -> None:
    repo = recorded(tmp_path / "fork")
    out = repo.ps("check", "--onto", "up2").stdout
    line = _line(out, "p1.patch", "recorded resolution reused for hunk")
    assert line.endswith(" and 2 more hunks)"), line
    assert line.count(".py:") == 3 and len(line) <= 160, line
    up = _line(out, "p2.patch")
    assert SUBJECT not in up and SUBJECT[: SUBJECT_SHOWN - 3].rstrip() + "..." in up, up
    assert len(up) <= 100, up
    full = repo.ps("check", "--onto", "up2", "--verbose").stdout
    line = _line(full, "p1.patch", "recorded resolution reused for hunk")
    assert line.count(".py:") == 5 and "more" not in line, line
    assert SUBJECT in _line(full, "p2.patch")


def test_an_upstream_commits_files_and_patches_are_capped_in_status(tmp_path) -> None:
    repo = fork(tmp_path / "fork")
    out = repo.ps("status", code=None).stdout
    line = _line(out, "p1.patch", "more files")
    assert SUBJECT not in line and SUBJECT[: SUBJECT_SHOWN - 3].rstrip() + "..." in line
    assert "b.py, src/mod/m0.py, src/mod/m1.py and 3 more files: p" in line, line
    assert len(line) <= 160, line
    full = _line(repo.ps("status", "--verbose", code=None).stdout, "p1.patch", SUBJECT)
    assert all(p in full for p in FILES) and "b.py" in full, full


def test_the_files_whose_records_are_for_other_lines_are_one_capped_clause(tmp_path) -> None:
    repo = recorded(tmp_path / "fork")
    err = repo.ps("refresh", "--onto", "up3", code=1).stderr
    line = _line(err, "are for other lines")
    assert line.count("the recorded resolutions of") == 1, line
    assert "in src/mod/m0.py, src/mod/m1.py, src/mod/m2.py and 2 more files are for" in line
    assert len(line) <= 250, line
    repo.ps("refresh", "--abort")
    err = repo.ps("refresh", "--onto", "up3", "--verbose", code=1).stderr
    line = _line(err, "are for other lines")
    assert all(p in line for p in FILES) and "more" not in line, line
