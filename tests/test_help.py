"""`patchstack help [COMMAND]`: the manual from the page shipped inside the package, as text
when piped, through man or the pager on a terminal."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack import manpage

from .conftest import Repo

ROOT = Path(__file__).resolve().parent.parent
PTY = "import pty, sys; pty.spawn(sys.argv[1:])"


def test_help_prints_one_command_of_the_page(tmp_path) -> None:
    repo = Repo(tmp_path)  # any folder: help opens no repository
    out = repo.ps("help", "pop").stdout
    assert out.splitlines()[0].startswith("PATCHSTACK(1)")
    assert "   patchstack pop [OPTIONS] [NAME]" in out
    assert "           patchstack pop --only diagnostic,optimization" in out
    assert "--discard-changes" in out and "patchstack push [OPTIONS]" not in out
    # A group holds its subcommands.
    out = repo.ps("help", "import").stdout
    assert "patchstack import quilt" in out and "patchstack import mbox" in out
    assert "patchstack export" not in out
    assert "patchstack import quilt" in repo.ps("help", "import", "quilt").stdout


def test_help_without_a_command_is_the_whole_page(tmp_path) -> None:
    out = Repo(tmp_path).ps("help").stdout
    for section in ("NAME", "SYNOPSIS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        assert f"\n{section}\n" in out
    for name in manpage.command_names(manpage.read_page()):
        assert f"   patchstack {name} " in out or out.count(f"patchstack {name}\n")


def test_an_unknown_command_is_a_usage_error_with_a_suggestion(tmp_path) -> None:
    result = Repo(tmp_path).ps("help", "refesh", code=2)
    assert "no command 'refesh' in the manual" in result.stderr
    assert "did you mean 'refresh'?" in result.stderr


def test_the_text_has_every_word_man_shows(tmp_path) -> None:
    """The plain text loses nothing of the page: word for word what man renders (without
    hyphenation and justification), less man's footer."""
    if shutil.which("man") is None:
        if os.environ.get("CI"):
            pytest.fail("man is not installed (.ci/run installs man-db)")
        pytest.skip("man is not installed")
    page = manpage.read_page()
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat")
    path = tmp_path / "patchstack.1"
    path.write_text(page)
    proc = subprocess.run(
        ["man", "--nh", "--nj", "-l", str(path)], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0 and not os.environ.get("CI"):
        pytest.skip(f"this man is not man-db's: {proc.stderr.strip()}")
    # man breaks a line after a word's own hyphen ("Upstream-" / "Status:") even with --nh.
    words = re.sub(r"(\w-)\n\s+", r"\1", re.sub(r".\x08", "", proc.stdout)).split()
    assert words[-3:] == ["patchstack", words[-2], "PATCHSTACK(1)"]
    assert manpage.to_text(page, 80).split() == words[:-3]


def _in_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PTY, *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_on_a_terminal_help_goes_through_man_or_the_pager(tmp_path) -> None:
    seen = tmp_path / "seen.txt"
    pager = f"sh -c 'cat > {seen}'"
    env = dict(os.environ, MANPAGER=pager, PAGER=pager, MANWIDTH="80")
    run = [sys.executable, "-m", "patchstack", "help", "pop"]
    if shutil.which("man") is not None:
        _in_a_terminal(run, env, tmp_path)
        text = re.sub(r".\x08", "", seen.read_text())  # man's bold, as overstrike
        assert "patchstack pop [OPTIONS] [NAME]" in text and "PATCHSTACK(1)" in text
        seen.unlink()
    # Without man: the plain text, through the pager.
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "cat"):
        (bare / tool).symlink_to(shutil.which(tool))
    _in_a_terminal(run, dict(env, PATH=str(bare)), tmp_path)
    assert "   patchstack pop [OPTIONS] [NAME]" in seen.read_text()
    # Piped, nothing is paged.
    seen.unlink()
    piped = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "patchstack pop [OPTIONS] [NAME]" in piped.stdout and not seen.exists()


def test_man_path_is_a_manpath_folder_of_the_shipped_pages(tmp_path) -> None:
    folder = Path(Repo(tmp_path).ps("help", "--man-path").stdout.strip())
    assert (folder / "man1" / "patchstack.1").read_text() == manpage.read_page()
    assert (folder / "man1" / "git-patchstack.1").exists()
