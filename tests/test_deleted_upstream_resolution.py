"""A stop at a file upstream deleted and the patch modifies (modify/delete: no conflict
markers, the patch's version in the work tree, not in the index). The user's deletion is
the resolution: ``rm FILE`` then ``refresh --continue`` gives the tree ``git cherry-pick``
gives with ``git rm FILE``, the patch's other files kept, as timmy/paged-attn's first stop
(scheduler_output_processor_mixin.py, deleted upstream). ``git rm`` cannot do it here (git
answers "pathspec did not match": the index holds the stop's HEAD, which lacks the file), so
the stop's hint says ``rm``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import make_repo, numbered, replace_line


def test_deleting_the_file_at_the_stop_takes_upstreams_deletion_as_git_does(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "fork", {"gone.py": numbered(20, "o"), "a.py": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "gone.py", "o 3\n", "o 3 mine\n")
    replace_line(repo, "a.py", "a 5\n", "a 5 mine\n")
    repo.ps("new", "both", "--tag", "essential", "gone.py", "a.py")
    patch_commit = repo.head()
    repo.git("checkout", "-q", "-b", "up", base)
    repo.git("rm", "-q", "gone.py")
    replace_line(repo, "a.py", "a 15\n", "a 15 upstream\n")
    up = repo.commit_all("upstream drops gone.py")
    # git: the patch picked onto upstream, the deletion taken with git rm
    side = tmp_path / "git"
    repo.git("worktree", "add", "-q", "--detach", str(side), up)
    picked = subprocess.run(["git", "cherry-pick", patch_commit], cwd=side, capture_output=True)
    assert picked.returncode != 0
    for step in (["rm", "-q", "gone.py"], ["-c", "core.editor=true", "cherry-pick", "--continue"]):
        subprocess.run(["git", *step], cwd=side, check=True, capture_output=True)
    want = repo.git("-C", str(side), "rev-parse", "HEAD^{tree}").strip()
    repo.git("checkout", "-q", "main")

    err = repo.ps("refresh", "--onto", "up", code=1).stderr
    assert "'rm' it first (not 'git rm': the index does not have it)" in err, err
    said = subprocess.run(["git", "rm", "-q", "gone.py"], cwd=repo.path, capture_output=True)
    assert said.returncode != 0 and b"did not match" in said.stderr  # (git's own answer)
    (Path(repo.path) / "gone.py").unlink()
    out = repo.ps("refresh", "--continue").stdout
    assert "both.patch  (resolved)" in out, out
    assert repo.tree() == want
    patch = repo.read("patches/both.patch")
    assert "gone.py" not in patch and "a 5 mine" in patch, patch
