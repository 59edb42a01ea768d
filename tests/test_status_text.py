"""What ``status`` and a stop print stay readable on a real fork: one upstream commit that
touches many files of many patches is one short line (its first paths and patches, and how
many more), and so are the built-in rule's proposals in many files at a stop (counted);
``--verbose`` and ``--json`` name them all."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo, numbered


def test_an_upstream_commit_touching_many_files_names_a_few_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    files = {f"pkg/mod{i}.py": f"m{i} = 1\n" for i in range(12)}
    upstream = make_repo(tmp_path / "upstream", files)
    Repo(tmp_path).git("clone", "-q", str(upstream.path), "fork")
    fork = Repo(tmp_path / "fork")
    fork.ps("init")
    for i in range(12):  # one patch a file, as 'import branch' makes of a big merge
        fork.write(f"pkg/mod{i}.py", f"m{i} = 2\n")
        fork.ps("new", f"p{i}", "--tag", "essential", f"pkg/mod{i}.py")
    for i in range(12):
        upstream.write(f"pkg/mod{i}.py", f"m{i} = 1\nn{i} = 0\n")
    upstream.git("commit", "-qam", "upstream touches every module")
    fork.git("fetch", "-q")
    out = fork.ps("status").stdout.splitlines()
    row = next(line for line in out if "upstream touches every module" in line)
    assert row.endswith(  # (`some_names`: three names within half a line each)
        "(pkg/mod0.py, pkg/mod1.py, pkg/mod10.py and 9 more files:"
        " p0.patch, p1.patch, p10.patch and 9 more patches)"
    ), row
    verbose = fork.ps("status", "--verbose").stdout
    assert all(f"pkg/mod{i}.py" in verbose and f"p{i}.patch" in verbose for i in range(12))
    touching = json.loads(fork.ps("status", "--json").stdout)["drift"]["touching"]
    assert [len(c["files"]) for c in touching] == [12]
    assert len(touching[0]["patches"]) == 12


def test_a_few_files_and_patches_are_all_named(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    Repo(tmp_path).git("clone", "-q", str(upstream.path), "fork")
    fork = Repo(tmp_path / "fork")
    fork.ps("init")
    fork.write("a.py", "a = 2\n")
    fork.write("b.py", "b = 2\n")
    fork.ps("new", "both", "--tag", "essential")
    upstream.write("a.py", "a = 1\nz = 0\n")
    upstream.write("b.py", "b = 1\nz = 0\n")
    upstream.git("commit", "-qam", "upstream touches both")
    fork.git("fetch", "-q")
    status = fork.ps("status").stdout
    assert "upstream touches both  (a.py, b.py: both.patch)" in status


def test_proposals_in_many_files_are_counted_on_one_line(tmp_path: Path) -> None:
    """Upstream took the patch's line in each of 8 files and added one after it (the built-in
    rule proposes each hunk: upstream's side holds the patch's change), and changed the
    patch's other line otherwise in one file, where the refresh stops."""
    files = {f"m{i}.py": numbered(20, f"m{i}") for i in range(8)}
    repo = make_repo(tmp_path / "fork", files)
    base = repo.head()
    repo.ps("init")
    for i in range(8):
        text = files[f"m{i}.py"].replace(f"m{i} 5\n", f"m{i} 5\nmine {i}\n")
        repo.write(f"m{i}.py", text.replace("m0 15\n", "m0 15 mine\n"))
    repo.ps("new", "p1", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    for i in range(8):
        text = files[f"m{i}.py"].replace(f"m{i} 5\n", f"m{i} 5\nmine {i}\ntheirs {i}\n")
        repo.write(f"m{i}.py", text.replace("m0 15\n", "m0 15 up\n"))
    repo.commit_all("upstream takes the patch's lines, adds one after each, reworks m0 15")
    repo.git("checkout", "-q", "main")
    result = repo.ps("refresh", "--onto", "up", code=1)
    said = [ln for ln in result.stderr.splitlines() if "proposed by a built-in rule" in ln]
    assert said == [
        "  proposed by a built-in rule: 8 conflict hunks in 8 files (8 as upstream's side"
        " already holds the patch's change), shown resolved; check before --continue"
        " (--verbose names each)"
    ], result.stderr
    assert all(f"mine {i}\ntheirs {i}\n" in repo.read(f"m{i}.py") for i in range(8))
    repo.ps("refresh", "--abort")
    verbose = repo.ps("refresh", "--onto", "up", "--verbose", code=1).stderr
    assert all(f"of m{i}.py (m{i}.py:6), shown resolved" in verbose for i in range(8)), verbose
