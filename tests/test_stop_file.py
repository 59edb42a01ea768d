"""A stop's conflicted file is the one ``git rebase`` writes at the same stop (issue 36 item 5:
"patchstack's own merge shows more hunks than git's"). Both merge with merge-ort (histogram
diff, diff3 markers); the case below is one where myers' diff (``git merge-file``, which a
Python or merge-file merge would use) cuts the conflict into two hunks and merge-ort into one:
a stop must show merge-ort's, byte for byte but for the markers' labels."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from patchstack.commands.refresh.hunks import Hunk, split

from .conftest import Repo, make_repo

# Found by a search over small files where the two diff algorithms disagree.
BASE = "\nreturn\nx = 1\nx = 1\nz\nx = 1\ny\nz\nx = 1\nz\nz\nx = 1\ny\n}\n"
UPSTREAM = "\nx = 1\nx = 1\nz\nx = 1\ny\nz\nx = 1\nx = 1\nreturn\n}\n"
PATCH = "\nreturn\nx = 1\nx = 1\nz\nx = 1\ny\n}\nz\nx = 1\nz\nx = 1\ny\nnew2\n"
LABELS = re.compile(r"(?m)^(<<<<<<<|\|\|\|\|\|\|\||>>>>>>>) .*$")


def hunks(text: str) -> int:
    parts = split(text.encode()) or []
    return sum(1 for p in parts if isinstance(p, Hunk))


def test_a_stop_shows_the_file_git_rebase_writes_where_myers_would_cut_it_otherwise(
    tmp_path: Path,
) -> None:
    for name, text in (("base", BASE), ("up", UPSTREAM), ("patch", PATCH)):
        (tmp_path / name).write_text(text)
    myers = subprocess.run(
        ["git", "merge-file", "-p", "--diff3", "up", "base", "patch"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    assert hunks(myers) == 2  # the control: the case does tell the algorithms apart
    repo = make_repo(tmp_path / "fork", {"f.txt": BASE})
    base = repo.head()
    repo.ps("init")
    repo.write("f.txt", PATCH)
    repo.ps("new", "p1", "--tag", "essential")
    patch_commit = repo.head()
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("f.txt", UPSTREAM)
    repo.commit_all("upstream")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", code=1)
    ours = repo.read("f.txt")
    # git rebase of the same commit onto the same upstream, in a clone
    clone = Repo(tmp_path / "git")
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(clone.path)], check=True)
    clone.git("checkout", "-q", "--detach", repo.git("rev-parse", "up").strip())
    clone.git("-c", "merge.conflictStyle=diff3", "cherry-pick", patch_commit, check=False)
    theirs = clone.read("f.txt")
    assert hunks(theirs) == 1 and hunks(ours) == 1
    assert LABELS.sub(r"\1", ours) == LABELS.sub(r"\1", theirs)
    repo.ps("refresh", "--abort")
