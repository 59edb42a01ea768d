"""The seven-patch story of DESIGN.md, end to end through the CLI on a real repository."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from .conftest import Repo, built_once, make_repo, names, numbered, replace_line

FILES = {
    "models/kimi_k25.py": ("essential", "kimi-k25-eagle3"),
    "models/deepseek_v2.py": ("essential", "deepseek-v2-capture"),
    "layers/communicator.py": ("essential", "communicator-sm120"),
    "entrypoints/engine.py": ("diagnostic", "nccl-env"),
    "managers/scheduler.py": ("diagnostic", "nccl-logging"),
    "layers/attention/mla.py": ("optimization", "mla-gather-cast"),
    "layers/moe/topk.py": ("optimization", "oea-routing"),
}


def edit_all(repo: Repo) -> None:
    for path in FILES:
        replace_line(repo, path, f"{path} 10\n", f"{path} 10 patched\nextra {path}\n")


def capture_story(repo: Repo) -> None:
    repo.ps("init")
    edit_all(repo)
    repo.write("README.md", "my unrelated local note\n")
    for path, (tag, name) in FILES.items():
        repo.ps("new", name, "--tag", tag, "-m", f"{name}: subject\n\nWhy {name} exists.", path)


@built_once
def captured(tmp_path) -> Repo:
    """The fork with the story captured: seven patches over the upstream snapshot (HEAD~7)."""
    files = {path: numbered(30, path) for path in FILES}
    files["README.md"] = "upstream readme\n"
    repo = make_repo(tmp_path / "fork", files)
    capture_story(repo)
    return repo


def test_seven_edits_become_seven_tagged_patches(tmp_path) -> None:
    fork = captured(tmp_path)
    base_tree = fork.tree("HEAD~7")
    all_tree = fork.tree()
    series = fork.read("patches/series")
    for path, (tag, name) in FILES.items():
        assert f"{name}.patch # {tag}\n" in series
        text = fork.read(f"patches/{name}.patch")
        assert text.startswith("From 0000000000000000000000000000000000000000 ")
        assert f"Subject: [PATCH] {name}: subject" in text
        assert f"diff --git a/{path} b/{path}" in text
        assert "Patchstack-" not in text
    assert names(fork) == [n + ".patch" for _t, n in FILES.values()]
    # The unrelated edit was never captured and is still there.
    assert fork.read("README.md") == "my unrelated local note\n"
    assert fork.git("status", "--porcelain", "--", "README.md").startswith(" M")
    log = fork.git("log", "--format=%(trailers:key=Patchstack-Tag,valueonly)", "-7")
    assert log.split() == list(reversed([t for t, _n in FILES.values()]))

    fork.ps("pop", "--all")
    assert fork.tree() == base_tree
    assert fork.git("status", "--porcelain").splitlines() == [" M README.md", "?? patches/"]
    for path in FILES:
        assert "patched" not in fork.read(path)

    fork.ps("push", "--only", "essential")
    assert names(fork) == [
        "kimi-k25-eagle3.patch",
        "deepseek-v2-capture.patch",
        "communicator-sm120.patch",
    ]
    essential_tree = fork.tree()

    fork.ps("push", "--all")
    assert fork.tree() == all_tree
    assert len(names(fork)) == 7

    fork.ps("pop", "--only", "diagnostic,optimization")
    assert fork.tree() == essential_tree
    assert "patched" in fork.read("models/kimi_k25.py")
    assert "patched" not in fork.read("managers/scheduler.py")
    assert fork.read("README.md") == "my unrelated local note\n"

    # Same tree as pop --all then push --except.
    fork.ps("push", "--all")
    fork.ps("pop", "--all")
    fork.ps("push", "--except", "diagnostic,optimization")
    assert fork.tree() == essential_tree
    assert fork.read("README.md") == "my unrelated local note\n"


def test_quilt_applies_the_same_series(tmp_path) -> None:
    if shutil.which("quilt") is None:
        if os.environ.get("CI"):
            pytest.fail("quilt is not installed (.ci/run installs it)")
        pytest.skip("quilt is not installed")
    fork = captured(tmp_path / "t")
    base = fork.git("rev-parse", "HEAD~7").strip()
    fork.ps("push", "--all")
    expected = {p: fork.read(p) for p in FILES}
    clone = tmp_path / "quilt"
    subprocess.run(["git", "clone", "-q", str(fork.path), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", base], cwd=clone, check=True)
    env = dict(os.environ, QUILT_PATCHES=str(fork.path / "patches"), QUILTRC="/dev/null")
    proc = subprocess.run(
        ["quilt", "push", "-a", "--fuzz=0"], cwd=clone, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path, text in expected.items():
        assert (clone / path).read_text() == text


def test_unrelated_edit_survives_every_command(tmp_path) -> None:
    fork = captured(tmp_path)
    fork.write("untracked-notes.txt", "keep me\n")
    commands = [
        ("pop",),
        ("pop", "--all"),
        ("push",),
        ("push", "--only", "essential"),
        ("push", "--all"),
        ("pop", "--only", "diagnostic"),
        ("status",),
        ("series",),
        ("push", "--all"),
        ("pop", "communicator-sm120"),
        ("push", "nccl-env"),
    ]
    for args in commands:
        fork.ps(*args, code=None)
        assert fork.read("README.md") == "my unrelated local note\n", args
        assert fork.read("untracked-notes.txt") == "keep me\n", args
        assert fork.git("status", "--porcelain", "--", "README.md") == " M README.md\n", args


def test_make_repo_roundtrip(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", {"x": "1\n"})
    assert repo.git("log", "--format=%s").strip() == "Upstream snapshot"


def test_shell_completion_of_patch_names_and_tags(tmp_path) -> None:
    import subprocess
    import sys

    fork = captured(tmp_path)
    env = dict(
        os.environ,
        _PATCHSTACK_COMPLETE="bash_complete",
        COMP_WORDS="patchstack pop nc",
        COMP_CWORD="2",
    )
    proc = subprocess.run(
        [sys.executable, "-c", "from patchstack.cli import main; main()"],
        cwd=fork.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.split() == ["plain,nccl-env.patch", "plain,nccl-logging.patch"]
    env.update(COMP_WORDS="patchstack push --only essential,d", COMP_CWORD="3")
    proc = subprocess.run(
        [sys.executable, "-c", "from patchstack.cli import main; main()"],
        cwd=fork.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.split() == ["plain,essential,diagnostic"]
    env.update(_PATCHSTACK_COMPLETE="bash_source")
    proc = subprocess.run(
        [sys.executable, "-c", "from patchstack.cli import main; main()"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "_patchstack_completion" in proc.stdout
