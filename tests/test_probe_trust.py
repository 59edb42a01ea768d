"""Probes are code from the series (issue 34, item 5): wherever a patch file keeps its probe,
``show`` and ``review`` show it; the ``reproduce:`` line quotes it; it runs without git's
repository variables, and only when asked."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line


@pytest.fixture
@built_once
def fork(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"lib.txt": "mode = slow\n" + numbered(20, "lib")})
    repo.ps("init")
    replace_line(repo, "lib.txt", "mode = slow\n", "mode = fast\n")
    repo.ps("new", "fast", "--tag", "essential")
    return repo


def _hide_probe(repo: Repo, probe: str, where: str) -> None:
    """Write ``probe`` into fast.patch where the description never shows it: as a mail
    header line under Subject:, or in a DEP-3 block above the diff."""
    path = repo.path / "patches" / "fast.patch"
    text = path.read_text()
    if where == "mail":
        head, subject, rest = text.partition("\nSubject: ")
        line, nl, rest = rest.partition("\n")
        text = f"{head}{subject}{line}\nPatchstack-Probe: {probe}{nl}{rest}"
    else:
        diff = text[text.index("diff --git") :]
        text = f"Description: make it fast\nPatchstack-Probe: {probe}\n\n{diff}"
    path.write_text(text)


@pytest.mark.parametrize("where", ["mail", "dep3"])
def test_a_probe_in_the_header_block_is_shown_and_reviewed(fork: Repo, tmp_path: Path, where):
    repo = fork
    old = tmp_path / "old-series"
    shutil.copytree(repo.path / "patches", old)
    probe = "touch \"$PROBE_MARK\"; echo '<b>' `x` | true"
    _hide_probe(repo, probe, where)
    # The reader of probes finds it: check --probes would run it.
    assert json.loads(repo.ps("status", "--json").stdout)["without_probe"] == []

    assert f"probe: {probe}" in repo.ps("show", "fast").stdout
    assert json.loads(repo.ps("show", "fast", "--json").stdout)["probe"] == probe
    md = repo.ps("show", "fast", "--format", "markdown").stdout
    assert "**Probe**" in md and "``touch" in md  # a code span longer than its backticks
    html = repo.ps("show", "fast", "--format", "html").stdout
    assert "Probe" in html and "&lt;b&gt;" in html and "<b>'" not in html

    args = ("review", str(old), str(repo.path / "patches"))
    text = repo.ps(*args).stdout
    assert "probe set" in text and f"+{probe}" in text
    doc = json.loads(repo.ps(*args, "--json").stdout)
    (row,) = doc["patches"]
    assert "probe" in row["words"] and row["probe_diff"] == [f"+{probe}"]
    assert row["new"]["probe"] == probe and row["old"]["probe"] is None
    md = repo.ps(*args, "--format", "markdown").stdout
    assert "Probe (a command `check --probes` runs)" in md and f"+{probe}" in md
    html = repo.ps(*args, "--format", "html").stdout
    assert "Probe (a command" in html and "&lt;b&gt;" in html

    # A changed probe is a change too; the same probe on both sides is none.
    shutil.rmtree(old)
    shutil.copytree(repo.path / "patches", old)
    assert json.loads(repo.ps(*args, "--json").stdout)["patches"][0]["words"] == ["unchanged"]
    _hide_probe(repo, "true", where)
    changed = json.loads(repo.ps(*args, "--json").stdout)["patches"][0]
    assert "probe" in changed["words"]
    assert changed["probe_diff"][-1] == "+true" and f"-{probe}" in changed["probe_diff"]


def test_probes_run_only_when_asked_and_without_git_repository_variables(
    fork: Repo, tmp_path: Path, monkeypatch
) -> None:
    repo = fork
    log = tmp_path / "probe.log"
    probe = (
        'echo "${GIT_DIR-unset} ${GIT_INDEX_FILE-unset} ${GIT_WORK_TREE-unset}'
        ' ${GIT_OBJECT_DIRECTORY-unset} ${GIT_COMMON_DIR-unset}" >> "$PROBE_LOG";'
        " grep -qx 'mode = fast' lib.txt"
    )
    _hide_probe(repo, probe, "mail")
    monkeypatch.setenv("PROBE_LOG", str(log))
    repo.ps("check")
    repo.ps("status")
    repo.ps("show", "fast")
    assert not log.exists()  # no command runs a probe unless asked
    # As from a pre-commit hook: git's variables name the user's own repository and index.
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo.path / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo.path))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(repo.path / ".git" / "objects"))
    monkeypatch.setenv("GIT_COMMON_DIR", str(repo.path / ".git"))
    out = repo.ps("check", "--probes").stdout
    assert "effective  fast.patch" in out
    assert set(log.read_text().split("\n")) == {"unset unset unset unset unset", ""}


def test_the_reproduce_line_quotes_the_probe(fork: Repo, tmp_path: Path) -> None:
    repo = fork
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    probe = f"grep -qx 'mode = fast' lib.txt && exit 1; rm -f {victim}"
    _hide_probe(repo, probe, "mail")
    out = repo.ps("check", "--probes", code=1).stdout
    assert "broken" in out
    line = next(ln for ln in out.split("\n") if "reproduce:" in ln)
    words = shlex.split(line.split("reproduce:", 1)[1])
    # One command after the last '&&', the probe as one word: pasted, nothing else runs.
    assert words[-3:] == ["sh", "-c", probe]
    assert ";" not in words and "rm" not in words


def test_bisect_runs_its_command_without_git_repository_variables(
    fork: Repo, tmp_path: Path, monkeypatch
) -> None:
    repo = fork
    good = repo.git("rev-parse", "HEAD~1").strip()
    repo.ps("pop", "--all")
    repo.write("other.txt", "upstream moved\n")
    repo.commit_all("upstream: another file")
    repo.ps("push", "--all")
    log = tmp_path / "bisect.log"
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo.path / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo.path))
    shown = "${GIT_DIR-unset} ${GIT_INDEX_FILE-unset} ${GIT_WORK_TREE-unset}"
    command = f'echo "{shown}" >> {log}'
    repo.ps("bisect", good, "HEAD~1", "--", "sh", "-c", command, code=None)
    lines = set(log.read_text().split("\n")) - {""}
    assert lines == {"unset unset unset"}
