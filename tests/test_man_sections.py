"""The man page reads like one: EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES, and every
command's examples as an indented block of their own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_sections_and_examples_render_as_examples() -> None:
    source = (ROOT / "man" / "man1" / "patchstack.1").read_text()
    for section in ("EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"):
        assert f".SH {section}\n" in source
    # Every "Example:" opens an .EX block; no bare backspace or stray indentation survives.
    assert source.count("Example:\n.RS 4\n.EX\n") == source.count("Example:")
    assert "\b" not in source
    if shutil.which("man") is None:
        if os.environ.get("CI"):
            pytest.fail("man is not installed (.ci/run installs man-db)")
        pytest.skip("man is not installed")
    env = dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat")
    text = subprocess.run(
        ["man", "-l", str(ROOT / "man" / "man1" / "patchstack.1")],
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    text = re.sub(r".\x08", "", text)
    block = text[text.index("   patchstack pop [OPTIONS] [NAME]") :]
    lines = block.splitlines()
    at = lines.index("       Example:")
    assert lines[at + 1] == "           patchstack pop --only diagnostic,optimization"
    assert "       PATCHSTACK_DIR" in text and "       refs/patchstack/oplog" in text
