"""The byte-exact git boundary and the one transaction: each reproduction of the issue that
asked for them, the core story in a SHA-256 repository, and undo/redo of every command."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import git as gitpython
import pytest

from .conftest import Repo, make_repo, numbered, replace_line, slow_after

GOLDEN = Path(__file__).parent / "golden"


def full(repo: Repo) -> tuple:
    """The whole state, but for the recorded resolutions: what a refresh learned is not
    state, and undo leaves it (as git's rerere cache survives a reset)."""
    _head, status, files = repo.state()
    return (
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.head(),
        repo.git("ls-files", "-s"),
        status,
        files,
    )


def test_conflict_in_a_non_ascii_file_is_reported_and_never_committed(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"café.txt": numbered(20, "c")})
    repo.git("branch", "upstream")
    repo.ps("init")
    replace_line(repo, "café.txt", "c 10\n", "c 10 fork\n")
    repo.ps("new", "mine", "--tag", "essential")
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "café.txt", "c 10\n", "c 10 upstream\n")
    repo.git("commit", "-qam", "upstream edits café")
    repo.git("checkout", "-q", "main")
    result = repo.ps("refresh", "--onto", "upstream", code=1)
    assert "file café.txt" in result.stderr and "café.txt:10:" in result.stderr
    assert "+ c 10 upstream" in result.stderr
    assert "--continue" in result.stderr
    assert repo.ps("refresh", "--continue", code=2).stderr.count("café.txt:") == 4
    text = repo.read("café.txt")
    repo.write(
        "café.txt", text.split("<<<<<<<")[0] + "c 10 both\n" + text.split(">>>>>>> mine.patch\n")[1]
    )
    repo.ps("refresh", "--continue")
    patch = (repo.path / "patches" / "mine.patch").read_bytes()
    assert b"<<<<<<<" not in patch and b"+c 10 both" in patch


def test_new_takes_a_path_literally(repo: Repo) -> None:
    repo.ps("init")
    repo.write("app/[slug]/page.tsx", "slug\n")
    repo.write("app/s/page.tsx", "s\n")
    repo.commit_all("pages")
    repo.ps("init", code=2)  # the series exists already
    repo.write("app/[slug]/page.tsx", "slug edited\n")
    repo.write("app/s/page.tsx", "s edited\n")
    result = repo.ps("new", "slug", "--tag", "essential", "app/[slug]/page.tsx")
    assert "1 file(s)" in result.stdout
    commit = gitpython.Repo(repo.path).head.commit
    assert list(commit.stats.files) == ["app/[slug]/page.tsx"]
    status = repo.git("status", "--porcelain", "--", "app")
    assert status == " M app/s/page.tsx\n"  # unstaged, as it was: not "MM"


def test_patch_without_index_lines_creating_nested_folders(repo: Repo) -> None:
    repo.ps("init")
    (repo.path / "patches" / "nested.patch").write_text(
        "Subject: nested\n\n---\n--- /dev/null\n+++ b/new dir/sub/f.txt\n@@ -0,0 +1 @@\n+hello\n"
    )
    series = repo.path / "patches" / "series"
    series.write_text(series.read_text() + "nested.patch # essential\n")
    repo.ps("push", "--all")
    assert repo.read("new dir/sub/f.txt") == "hello\n"
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []


def test_an_untracked_file_with_a_newline_blocks_nothing(repo: Repo) -> None:
    repo.ps("init")
    repo.write("notes\nfile.txt", "mine\n")
    replace_line(repo, "a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "x", "--tag", "essential")
    repo.ps("pop")
    repo.ps("undo")
    repo.ps("undo")
    assert repo.read("notes\nfile.txt") == "mine\n"
    assert repo.read("a.py") == numbered(40, "a").replace("a 3\n", "a 3 x\n")


def test_a_multi_line_message_keeps_the_operation_log_whole(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "x", "--tag", "essential", "-m", "subj\n\nbody line\n\nmore")
    replace_line(repo, "b.py", "b 3\n", "b 3 y\n")
    repo.ps("new", "y", "--tag", "diagnostic", "-m", "two\nlines")
    log = json.loads(repo.ps("log", "--json").stdout)
    assert [e["kind"] for e in log] == ["new", "new", "init"]
    assert "subj\n\nbody line\n\nmore" in log[1]["command"]
    message = gitpython.Repo(repo.path).commit("HEAD~1").message
    assert message.startswith("subj\n\nbody line\n\nmore\n\nPatchstack-Patch: x.patch\n")
    repo.ps("undo", "3")
    assert not (repo.path / "patches").exists()


def test_import_and_refresh_abort_are_operations_of_the_log(tmp_path) -> None:
    from .refresh_fixtures import make_fork

    repo = make_fork(tmp_path / "fork", conflict=True)
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("e.patch\n")
    (quilt / "e.patch").write_text("--- a/e.txt\n+++ b/e.txt\n@@ -0,0 +1 @@\n+e\n")
    before_import = full(repo)
    repo.ps("import", "quilt", str(quilt), "--tag", "essential", "--append")
    assert (repo.path / "patches" / "e.patch").exists()
    repo.ps("undo")
    assert full(repo) == before_import
    repo.ps("redo")
    before_refresh = full(repo)
    repo.ps("refresh", "--onto", "upstream", code=1)
    stopped = full(repo)
    repo.ps("refresh", "--abort")
    assert full(repo) == before_refresh
    repo.ps("undo")  # undoing the abort gives back the stopped refresh
    assert full(repo) == stopped
    assert "a refresh is stopped" in repo.ps("push", code=2).stderr
    text = repo.read("a.py")
    repo.write(
        "a.py",
        text.split("<<<<<<<")[0]
        + "a 10 near\na 11 upstream\n"
        + text.split(">>>>>>> near.patch\n")[1],
    )
    resolved = full(repo)
    repo.ps("refresh", "--continue")
    finished = full(repo)
    repo.ps("undo")  # undoing --continue gives back the stopped refresh, resolution included
    assert full(repo) == resolved
    assert "a refresh is stopped" in repo.ps("push", code=2).stderr
    repo.ps("redo")
    assert full(repo) == finished
    repo.ps("undo")
    repo.ps("undo")  # undoing the stop: the state before the refresh
    assert full(repo) == before_refresh
    kinds = [e["kind"] for e in json.loads(repo.ps("log", "--json", "-n", "100").stdout)]
    assert kinds.count("import") == 1 and kinds.count("refresh") >= 3


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
def test_the_core_story_in_either_object_format(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "fork"
    path.mkdir()
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main", f"--object-format={fmt}")
    repo.write("a.py", numbered(30, "a"))
    repo.write("b.py", numbered(30, "b"))
    repo.commit_all("upstream")
    repo.git("branch", "upstream")
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 essential\n")
    repo.ps("new", "ess", "--tag", "essential")
    replace_line(repo, "a.py", "a 20\n", "a 20 diag\n")
    repo.ps("new", "diag", "--tag", "diagnostic")
    replace_line(repo, "b.py", "b 5\n", "b 5 opt\n")
    repo.ps("new", "opt", "--tag", "optimization")
    hexsz = 64 if fmt == "sha256" else 40
    assert len(repo.head()) == hexsz
    index_line = next(
        ln
        for ln in (repo.path / "patches" / "ess.patch").read_text().splitlines()
        if ln.startswith("index ")
    )
    assert len(index_line.split()[1].split("..")[0]) == hexsz
    top = repo.tree()
    repo.ps("pop", "--only", "diagnostic,optimization")
    assert "essential" in repo.read("a.py") and "diag" not in repo.read("a.py")
    repo.ps("push", "--all")
    assert repo.tree() == top
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "a.py", "a 1\n", "a 1 upstream\n")
    repo.git("commit", "-qam", "upstream moves")
    repo.git("checkout", "-q", "main")
    result = json.loads(repo.ps("refresh", "--onto", "upstream", "--json").stdout)
    assert {p["verdict"] for p in result["patches"]} == {"offset", "unchanged"}
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []
    repo.ps("undo")
    assert repo.tree() == top
    assert repo.git("fsck", "--no-dangling").strip() == ""


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_undo_and_redo_round_trip_every_command(tmp_path: Path) -> None:
    """init, new, push, pop, pop --only, refresh (fold), import, refresh --onto: after each,
    undo gives back the state before it exactly, and redo the state after."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    repo.git("branch", "upstream")
    repo.write("mine.txt", "untracked\n")
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("q.patch\n")
    (quilt / "q.patch").write_text("--- a/q.txt\n+++ b/q.txt\n@@ -0,0 +1 @@\n+q\n")

    def edit(path: str, old: str, new: str) -> None:
        replace_line(repo, path, old, new)

    steps = [
        ("init",),
        ("new", "e", "--tag", "essential", "a.py"),
        ("new", "d", "--tag", "diagnostic", "b.py"),
        ("pop", "--all"),
        ("push", "--all"),
        ("pop", "--only", "essential"),
        ("push", "--all"),
        ("refresh",),
        ("import", "quilt", str(quilt), "--tag", "optimization", "--append"),
        ("push", "--all"),
        ("refresh", "--onto", "upstream"),
    ]
    prepare = {
        1: lambda: edit("a.py", "a 5\n", "a 5 e\n"),
        2: lambda: edit("b.py", "b 5\n", "b 5 d\n"),
        7: lambda: edit("b.py", "b 5 d\n", "b 5 dd\n"),
        10: lambda: _move_upstream(repo),
    }
    for i, args in enumerate(steps):
        if i in prepare:
            prepare[i]()
        before = full(repo)
        repo.ps(*args)
        after = full(repo)
        assert after != before, args
        repo.ps("undo")
        assert full(repo) == before, args
        repo.ps("redo")
        assert full(repo) == after, args
    assert repo.read("mine.txt") == "untracked\n"


def _move_upstream(repo: Repo) -> None:
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "a.py", "a 30\n", "a 30 upstream\n")
    repo.git("commit", "-qam", "upstream")
    repo.git("checkout", "-q", "main")


def test_git_commands_in_the_users_config_change_nothing(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile configuration (quoted paths, colour, signatures and mailmap in logs, other diff
    prefixes, algorithm, context and function headers, format options), a narrow terminal and
    a diff driver chosen by an attribute: the patch file is the golden bytes, the commits the
    same ids."""
    repo.ps("init")
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(12))
    repo.write("ü dir/ö file.py", body)
    repo.write(".gitattributes", "*.py diff=python\n")
    repo.commit_all("more")
    replace_line(repo, "ü dir/ö file.py", "return 5\n", "return 5 + 0\n")
    repo.ps("new", "x", "--tag", "essential", "-m", "Änderung: x\n\nWhy it exists.")
    plain = (repo.path / "patches" / "x.patch").read_bytes()
    golden = GOLDEN / "hostile-config.patch"
    if os.environ.get("PATCHSTACK_UPDATE_GOLDEN"):
        golden.write_bytes(plain)
    assert plain == golden.read_bytes()
    head = repo.head()
    repo.ps("undo")
    config = tmp_path / "hostile.gitconfig"
    config.write_text(
        "[core]\n\tquotePath = true\n\tabbrev = 7\n[color]\n\tui = always\n"
        "[log]\n\tshowSignature = true\n\tmailmap = true\n\tdecorate = full\n"
        "[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\talgorithm = patience\n"
        "\trenames = copies\n\tcontext = 7\n\tinterHunkContext = 5\n\tindentHeuristic = false\n"
        "\tstatGraphWidth = 5\n\tstatNameWidth = 3\n"
        '[diff "python"]\n\txfuncname = "^[ \\t]*return.*$"\n'
        "[format]\n\tsignOff = true\n\tsubjectPrefix = HACK\n\tnumbered = true\n"
        "\tuseAutoBase = whenAble\n\theaders = X-Hostile: 1\n\tsignature = sig\n"
        "\tencodeEmailHeaders = false\n\tforceInBodyFrom = true\n"
        "[i18n]\n\tlogOutputEncoding = ISO-8859-1\n\tcommitEncoding = ISO-8859-1\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("COLUMNS", "20")
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    repo.ps("new", "x", "--tag", "essential", "-m", "Änderung: x\n\nWhy it exists.")
    assert (repo.path / "patches" / "x.patch").read_bytes() == plain
    assert repo.head() == head
    repo.ps("pop")
    repo.ps("push")
    assert repo.head() == head


# `git -c KEY=VALUE patchstack ...`: git hands the -c entries on in GIT_CONFIG_PARAMETERS,
# which it reads after GIT_CONFIG_COUNT, the pinned entries' place (`git.process`).
DASH_C = (
    "color.ui=always",
    "core.quotePath=true",
    "diff.noprefix=true",
    "diff.mnemonicPrefix=true",
    "diff.interHunkContext=5",
    "log.showRoot=false",
    "log.showSignature=true",
    "log.decorate=full",
)


# `git -c` by default; the same settings in GIT_CONFIG_PARAMETERS and in the user's
# configuration file under -m slow (the test is over 5 s with the three).
@pytest.mark.parametrize(
    "ways", slow_after([("dash-c",), ("parameters", "config")], 1), ids=["dash-c", "environment"]
)
def test_git_dash_c_changes_nothing_that_status_check_refresh_and_review_read(
    tmp_path: Path, ways: tuple[str, ...]
) -> None:
    """The same commands run plainly and as ``git -c ... patchstack`` (git's own way, through
    the ``git-patchstack`` command) print the same: the conflict's upstream commit traced (a
    diff without ``a/``/``b/`` lost it), the knock-on, the non-ASCII path; the refresh leaves
    the same tree and series. With the same ``GIT_CONFIG_PARAMETERS`` set, and with the same
    settings in the user's configuration file, status and check print the same too."""
    import shutil
    import subprocess

    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "ü dir/ö.py": numbered(20)})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.write("new.py", numbered(10, "new"))
    repo.ps("new", "p1", "--tag", "essential", "a.py", "new.py")
    replace_line(repo, "new.py", "new 5\n", "new 5 tuned\n")
    repo.ps("new", "p2", "--tag", "essential")
    replace_line(repo, "ü dir/ö.py", "line 3\n", "line 3 mine\n")
    repo.ps("new", "p3", "--tag", "diagnostic")
    repo.git("add", "patches")
    repo.git("commit", "-qm", "series")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    replace_line(repo, "ü dir/ö.py", "line 15\n", "line 15 upstream\n")
    repo.commit_all("upstream reworks line 10")
    repo.git("checkout", "-q", "main")
    copies = {how: tmp_path / how for how in ("plain", *ways)}
    for place in copies.values():
        shutil.copytree(repo.path, place, symlinks=True)

    commands = (
        ("status", "--json"),
        ("check", "--onto", "up", "--json"),
        ("check", "--onto", "up"),
        ("refresh", "--onto", "up", "--defer-conflicts", "--json"),
        ("review",),
    )
    reading = commands[:2]  # the other two ways: a status and the check whose walk broke
    parameters = " ".join(f"'{k}'='{v}'" for k, v in (kv.split("=") for kv in DASH_C))
    config = tmp_path / "users.gitconfig"
    sections = (kv.split(".", 1) for kv in DASH_C)
    config.write_text("".join(f"[{section}]\n\t{entry}\n" for section, entry in sections))

    def run(how: str, args: tuple[str, ...]) -> tuple[int, str]:
        env = dict(os.environ)
        if how == "parameters":
            env["GIT_CONFIG_PARAMETERS"] = parameters
        if how == "config":
            env["GIT_CONFIG_GLOBAL"] = str(config)
        argv = ["git", *[w for kv in DASH_C for w in ("-c", kv)]] if how == "dash-c" else []
        argv += ["git", "patchstack"] if how != "dash-c" else ["patchstack"]
        proc = subprocess.run(
            [*argv, *args], cwd=copies[how], env=env, capture_output=True, text=True
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)

    asked = commands if ways == ("dash-c",) else reading
    said = {how: [run(how, args) for args in asked] for how in ("plain", *ways)}
    check = json.loads(said["plain"][1][1])
    traced = [u["subject"] for h in check["conflicts"][0]["hunks"] for u in h["upstream_commits"]]
    assert traced == ["upstream reworks line 10"]
    if ways != ("dash-c",):
        assert said["parameters"] == said["config"] == said["plain"]
        return
    assert "+ 1 knock-on(s) waiting for it: p2.patch" in said["plain"][2][1]
    assert said["dash-c"] == said["plain"]
    refreshed = [copies["plain"], copies["dash-c"]]
    assert Repo(refreshed[0]).tree() == Repo(refreshed[1]).tree()
    series = {(p / "patches" / "series").read_bytes() for p in refreshed}
    assert len(series) == 1
