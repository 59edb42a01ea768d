"""The bundled example series (series/): the seven-patch story on the real example fork."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from patchstack.demo import build_sandbox, upstream_pull

from .conftest import Repo, names

ESSENTIAL = [
    "kimi-k25-eagle3-delegation.patch",
    "deepseek-v2-eagle3-capture.patch",
    "communicator-sm120.patch",
]


@pytest.fixture
def box(tmp_path):
    return build_sandbox(str(tmp_path / "sandbox"))


def test_sandbox_matches_the_series_base(box) -> None:
    fork = Repo(box.fork)
    series = fork.read("patches/series")
    assert f"# base: {fork.head()} upstream/main" in series
    result = fork.ps("series")
    assert "oea-routing.patch  [optimization, moe]" in result.stdout
    assert result.stdout.count("[essential]") == 3


def test_story_on_the_example(box, tmp_path) -> None:
    fork = Repo(box.fork)
    base_tree = fork.tree()
    fork.ps("push", "--all")
    all_tree = fork.tree()
    # git am of the same patch files gives the same tree.
    am = tmp_path / "am"
    subprocess.run(["git", "clone", "-q", box.upstream, str(am)], check=True)
    patches = [os.path.join(box.fork, "patches", n) for n in names(fork)]
    subprocess.run(["git", "am", "-q", *patches], cwd=am, check=True)
    assert Repo(am).tree() == all_tree
    fork.ps("pop", "--only", "diagnostic,optimization")
    assert names(fork) == ESSENTIAL
    assert "get_embed_and_head" in fork.read("srt/models/kimi_k25.py")
    fork.ps("pop", "--all")
    assert fork.tree() == base_tree
    fork.ps("push", "--only", "essential")
    assert names(fork) == ESSENTIAL
    if shutil.which("quilt"):
        env = dict(os.environ, QUILT_PATCHES=os.path.join(box.fork, "patches"), QUILTRC="/dev/null")
        q = tmp_path / "quilt"
        subprocess.run(["git", "clone", "-q", box.upstream, str(q)], check=True)
        subprocess.run(
            ["quilt", "push", "-aq", "--fuzz=0"], cwd=q, env=env, check=True, capture_output=True
        )
        fork.ps("push", "--all")
        assert fork.git("diff", "--stat", "HEAD") == ""
        proc = subprocess.run(
            [
                "git",
                "diff",
                "--no-index",
                "--stat",
                "--",
                str(q / "srt"),
                os.path.join(box.fork, "srt"),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.stdout == "", proc.stdout


def test_upstream_pull_moves_upstream(box) -> None:
    upstream_pull(box)
    log = Repo(box.upstream).git("log", "--format=%s")
    assert "scheduler: initialize the TP group through init_tp_group" in log
    assert len(log.splitlines()) == 5


def test_sandbox_refuses_a_non_empty_folder(tmp_path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(Exception, match="not empty"):
        build_sandbox(str(tmp_path / "full"))
