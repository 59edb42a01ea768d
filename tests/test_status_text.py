"""What ``status`` prints stays readable on a real fork: one upstream commit that touches many
files of many patches is one short line (its first paths and patches, and how many more);
``--verbose`` and ``--json`` name them all."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Repo, make_repo


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
    assert row.endswith(
        "(pkg/mod0.py, pkg/mod1.py and 10 more files: p0.patch, p1.patch and 10 more patches)"
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
