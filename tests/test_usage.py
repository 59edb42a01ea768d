"""Every usage error in one style: 'patchstack: error: ...' then 'hint: ...', exit status 2,
nothing changed; with 'did you mean' for commands, options, tags and patch names."""

from __future__ import annotations

import pytest

from patchstack.model.suggest import close_matches

from .conftest import Repo, built_once, make_repo, numbered

CASES = [
    (["pussh"], "no such command 'pussh'", "did you mean 'push'? (see 'patchstack --help')"),
    (["push", "--onlly", "x"], "no such option '--onlly'", "'--only'"),
    (["--colr", "never", "series"], "no such option '--colr'", "did you mean '--color'?"),
    (["import", "quilts"], "no such command 'quilts'", "see 'patchstack import --help'"),
    (["show"], "missing argument 'NAME'", "see 'patchstack show --help'"),
    (["new", "x", "--tag", "essentail"], "--tag: unknown tag 'essentail'", "'essential'?"),
    (["push", "--only", "diagnostc"], "unknown tag 'diagnostc' in --only", "'diagnostic'?"),
    (["push", "aplha"], "no patch named 'aplha' in the series", "did you mean 'alpha'?"),
    (["show", "bet"], "no patch named 'bet' in the series", "did you mean 'beta'?"),
    (["graph", "--format", "svg"], "invalid value for '--format'", "see 'patchstack graph --help'"),
]


@pytest.fixture
@built_once
def fork(tmp_path) -> Repo:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    repo.ps("init")
    for name, line in (("alpha", "a 3\n"), ("beta", "a 12\n")):
        text = repo.read("a.py").replace(line, line.upper())
        repo.write("a.py", text)
        repo.ps("new", name, "--tag", "essential")
    return repo


@pytest.mark.parametrize(("args", "message", "hint"), CASES)
def test_usage_errors_share_one_style(fork: Repo, args, message, hint) -> None:
    before = fork.state()
    res = fork.ps(*args, code=2)
    lines = res.stderr.splitlines()
    assert lines[0] == f"patchstack: error: {message}" or lines[0].startswith(
        f"patchstack: error: {message}"
    ), res.stderr
    assert lines[1].startswith("hint: ") and hint in lines[1], res.stderr
    assert "Usage:" not in res.stderr and "Error:" not in res.stderr
    assert fork.state() == before


def test_close_matches() -> None:
    assert close_matches("essentail", ["essential", "diagnostic", "optimization"]) == ["essential"]
    assert close_matches("opt", ["essential", "optimization"]) == ["optimization"]
    assert close_matches("zzz", ["essential"]) == []
