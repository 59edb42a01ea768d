"""The man pages: generated from the click commands, installed with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_committed_man_pages_match_the_commands() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_man.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow  # a fresh virtual environment
def test_git_patchstack_help_finds_the_man_page_in_a_fresh_venv(tmp_path) -> None:
    if shutil.which("man") is None:
        if os.environ.get("CI"):
            pytest.fail("man is not installed (.ci/run installs man-db)")
        pytest.skip("man is not installed")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # patchstack's dependencies from this interpreter (installing them would need the index;
    # the base interpreter's own site-packages may not have them).
    import click
    import jinja2
    import markupsafe

    found = {str(Path(m.__file__).resolve().parent.parent) for m in (click, jinja2, markupsafe)}
    site = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (venv / "lib" / site / "site-packages" / "deps.pth").write_text("\n".join(sorted(found)) + "\n")
    build = tmp_path / "src"
    shutil.copytree(
        ROOT,
        build,
        ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__", ".*cache"),
    )
    proc = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(build)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (venv / "share" / "man" / "man1" / "git-patchstack.1").exists()
    env = dict(
        os.environ,
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        MANPAGER="cat",
        PAGER="cat",
        MANWIDTH="80",
    )
    env.pop("MANPATH", None)
    proc = subprocess.run(
        ["git", "patchstack", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "GIT-PATCHSTACK(1)" in proc.stdout
    assert "pop --only diagnostic,optimization" in proc.stdout
    proc = subprocess.run(
        ["git", "patchstack", "--version"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.stdout.startswith("patchstack, version")

    # As uv and pipx install it: the commands linked into a bin folder of their own, no man
    # page where man looks. 'patchstack help' reads the page from the package, and with its
    # folder on MANPATH man and git find it again.
    shutil.rmtree(venv / "share" / "man")
    linked = tmp_path / "local" / "bin"
    linked.mkdir(parents=True)
    for name in ("patchstack", "git-patchstack"):
        (linked / name).symlink_to(venv / "bin" / name)
    env["PATH"] = f"{linked}{os.pathsep}/usr/bin{os.pathsep}/bin"

    def run(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True
        )

    assert "No manual entry" in run("git", "patchstack", "--help").stderr
    proc = run("patchstack", "help", "pop")
    assert proc.returncode == 0 and "patchstack pop --only diagnostic,optimization" in proc.stdout
    folder = run("patchstack", "help", "--man-path").stdout.strip()
    assert folder.startswith(str(venv))
    proc = run("git", "patchstack", "--help", MANPATH=folder + os.pathsep)
    assert proc.returncode == 0 and "GIT-PATCHSTACK(1)" in proc.stdout, proc.stderr
