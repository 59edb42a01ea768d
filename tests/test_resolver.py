"""``refresh --resolver CMD``: each conflict no record settles is handed to a command as one JSON
packet, and its proposal is taken only when verified (issue 36, item 4): no conflict marker,
only the patch's files, the patch's probe effective on it. Each resolver is a small Python
script written by the test; the repositories are real, the CLI the real one."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

from . import schemas
from .conftest import Repo, numbered
from .test_defer import drift

GOOD = numbered(40, "a").replace("a 10\n", "a 10 upstream and mine\n")


def resolver(tmp_path: Path, name: str, body: str) -> str:
    """A resolver script outside the repository; the command that runs it."""
    path = tmp_path / "bin" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import json, os, sys\n" + body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


# Writes GOOD into result/a.py (the scratch folder is its working folder).
WRITES_GOOD = f"open('result/a.py', 'w').write({GOOD!r})\n"


def test_a_verified_proposal_is_taken_recorded_as_machine_made_and_undone(tmp_path) -> None:
    repo = drift(tmp_path)
    cmd = resolver(tmp_path, "good", WRITES_GOOD)
    before = repo.state()
    old_series = tmp_path / "old-series"
    os.system(f"cp -r {repo.path / 'patches'} {old_series}")
    result = repo.ps("refresh", "--onto", "up", "--resolver", cmd)
    assert f"p1.patch  (resolved by {cmd}: machine-made" in result.stdout
    assert repo.read("a.py") == GOOD
    assert "a 10 upstream and mine" in repo.git("show", "HEAD~2:a.py")
    assert "+a 10 upstream and mine" in repo.read("patches/p1.patch")
    # Recorded as a resolution, by the command: it settles the same conflict again.
    (record,) = (repo.path / "patches" / "resolutions").iterdir()
    assert f"by: {cmd}\n" in record.read_text()
    # Marked as machine-made in the review, every format.
    doc = json.loads(repo.ps("review", str(old_series), "patches", "--json").stdout)
    (change,) = doc["resolutions"]
    assert (change["patch"], change["path"], change["by"]) == ("p1.patch", "a.py", cmd)
    text = repo.ps("review", str(old_series), "patches").stdout
    assert f"[machine-made: resolved by {cmd}]" in text
    for fmt in ("markdown", "html"):
        out = repo.ps("review", str(old_series), "patches", "--format", fmt).stdout
        assert "<strong>machine-made</strong>: resolved by" in out, fmt
    # Undone like any other refresh.
    repo.ps("undo")
    assert repo.state() == before
    again = repo.ps("refresh", "--onto", "up")  # no resolver: the record settles it
    assert "p1.patch  (recorded resolution)" in again.stdout
    assert repo.read("a.py") == GOOD


def refused(repo: Repo, cmd: str, *why: str) -> dict:
    """The refresh stops at p1 as without a resolver, saying why the proposal was refused."""
    before = repo.state()
    result = repo.ps("refresh", "--onto", "up", "--resolver", cmd, code=1)
    for w in why:
        assert w in result.stderr, result.stderr
    assert "<<<<<<<" in repo.read("a.py")  # asked, as today: the markers are the user's
    assert not (repo.path / "patches" / "resolutions").exists()
    repo.ps("refresh", "--abort")
    assert repo.state() == before
    doc = json.loads(repo.ps("refresh", "--onto", "up", "--resolver", cmd, "--json", code=1).stdout)
    assert "was refused" in doc["stopped"]["note"]
    repo.ps("refresh", "--abort")
    (p,) = doc["proposals"]
    assert p["patch"] == "p1.patch" and not p["accepted"]
    return p


def test_a_proposal_that_leaves_markers_is_refused(tmp_path) -> None:
    repo = drift(tmp_path)
    cmd = resolver(tmp_path, "nothing", "pass\n")  # exits 0, result/ as the merge left it
    refused(repo, cmd, "the proposal of", "was refused: it left conflict markers in a.py:")
    appends = "t = open('result/a.py').read()\nopen('result/a.py', 'w').write(t + 'x\\n')\n"
    half = resolver(tmp_path, "half", appends)
    refused(repo, half, "it left conflict markers in a.py:")


def test_a_proposal_that_touches_another_file_is_refused(tmp_path) -> None:
    repo = drift(tmp_path)
    folder = resolver(tmp_path, "folder", WRITES_GOOD + "open('result/b.py', 'w').write('x\\n')\n")
    refused(repo, folder, "it changes b.py, not one of the patch's files")
    answer = {"version": 1, "files": {"a.py": GOOD, "b.py": "taken over\n"}}
    printed = resolver(tmp_path, "printed", f"print(json.dumps({answer!r}))\n")
    refused(repo, printed, "it changes b.py, not one of the patch's files")
    # The same answer without the other file is taken.
    fine = {"version": 1, "files": {"a.py": GOOD}}
    ok = resolver(tmp_path, "ok", f"print(json.dumps({fine!r}))\n")
    repo.ps("refresh", "--onto", "up", "--resolver", ok)
    assert repo.read("a.py") == GOOD and "b 20 mine" in repo.read("b.py")


def probed_drift(tmp_path: Path) -> Repo:
    """The drift, p1 with a probe: passes with p1 ('mine' on line 10), fails without."""
    repo = drift(tmp_path)
    repo.ps("edit", "p1", "--probe", "grep -q '^a 10 .*mine$' a.py")
    return repo


def test_a_proposal_the_probe_refutes_is_refused(tmp_path) -> None:
    repo = probed_drift(tmp_path)
    upstream_only = numbered(40, "a").replace("a 10\n", "a 10 upstream\n")
    cmd = resolver(tmp_path, "drops", f"open('result/a.py', 'w').write({upstream_only!r})\n")
    p = refused(repo, cmd, "the patch's probe fails on the proposal (exit 1)")
    assert "probe fails" in p["why"]
    good = resolver(tmp_path, "good", WRITES_GOOD)
    doc = json.loads(repo.ps("refresh", "--onto", "up", "--resolver", good, "--json").stdout)
    (p,) = doc["proposals"]
    assert p["accepted"] and p["why"] == "its probe passes on it and fails without the patch"
    assert repo.read("a.py") == GOOD


def test_a_probe_that_passes_without_the_patch_proves_nothing(tmp_path) -> None:
    repo = drift(tmp_path)
    repo.ps("edit", "p1", "--probe", "true")
    refused(repo, resolver(tmp_path, "good", WRITES_GOOD), "passes without the patch too")


def test_a_resolver_out_of_time_is_killed_with_what_it_started(tmp_path) -> None:
    repo = drift(tmp_path)
    pidfile = tmp_path / "child.pid"
    body = (
        "import subprocess, time\n"
        f"child = subprocess.Popen(['sleep', '120'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n" + WRITES_GOOD + "time.sleep(120)\n"
    )
    cmd = resolver(tmp_path, "slow", body)
    started = time.monotonic()
    result = repo.ps(
        "refresh", "--onto", "up", "--resolver", cmd, "--resolver-timeout", "1", code=1
    )
    assert time.monotonic() - started < 60
    assert "it ran out of its 1 s and was killed" in result.stderr
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child)
    repo.ps("refresh", "--abort")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_packet_follows_its_schema(tmp_path) -> None:
    repo = drift(tmp_path)
    seen = tmp_path / "seen"
    body = (
        f"seen = {str(seen)!r}\n"
        "os.makedirs(seen)\n"
        "open(os.path.join(seen, 'stdin.json'), 'w').write(sys.stdin.read())\n"
        "open(os.path.join(seen, 'arg.json'), 'w').write(open(sys.argv[-1]).read())\n"
        "open(os.path.join(seen, 'cwd.txt'), 'w').write(os.getcwd())\n"
        "for side in ('base', 'ours', 'theirs', 'result'):\n"
        "    open(os.path.join(seen, side), 'w').write(open(side + '/a.py').read())\n"
        "open(os.path.join(seen, 'env'), 'w').write(os.environ.get('GIT_DIR', '-'))\n" + WRITES_GOOD
    )
    up = repo.git("rev-parse", "up").strip()
    repo.ps("refresh", "--onto", "up", "--resolver", resolver(tmp_path, "spy", body))
    text = (seen / "stdin.json").read_text()
    assert text == (seen / "arg.json").read_text()
    packet = json.loads(text)
    errors = list(schemas.validator("resolver").iter_errors(packet))
    assert not errors, errors
    assert packet["scratch"] == (seen / "cwd.txt").read_text()
    assert not os.path.exists(packet["scratch"])  # removed afterwards
    assert packet["patch"]["name"] == "p1.patch" and "+a 10 mine" in packet["patch"]["diff"]
    (f,) = packet["files"]
    assert f["path"] == "a.py" and "a 10 mine" in f["theirs"] and "a 10 upstream" in f["ours"]
    assert (seen / "base").read_text() == f["base"] == numbered(40, "a")
    assert "<<<<<<<" in (seen / "result").read_text()
    (hunk,) = packet["hunks"]
    assert hunk["now"] == ["a 10 upstream"] and hunk["wanted"] == ["a 10 mine"]
    assert [u["commit"] for u in hunk["upstream"]] == [up]
    (culprit,) = packet["culprits"]
    assert culprit["commit"] == up and "+a 10 upstream" in culprit["diff"]
    assert packet["limits"] == {"seconds": 300.0, "files": ["a.py", "new.py"]}
    assert (seen / "env").read_text() == "-"  # git's repository variables removed


def test_nothing_in_the_series_folder_sets_the_resolver(tmp_path) -> None:
    """The series folder arrives through pull requests: no file there, no patch header, makes
    patchstack run a program; the user's configuration does."""
    repo = drift(tmp_path)
    ran = tmp_path / "ran"
    cmd = resolver(tmp_path, "good", f"open({str(ran)!r}, 'w').write('ran')\n" + WRITES_GOOD)
    config = f"[patchstack]\n\tresolver = {cmd}\n"
    for name in ("config", ".gitconfig", ".patchstack", "patchstack.cfg"):
        (repo.path / "patches" / name).write_text(config)
    (repo.path / ".gitconfig").write_text(config)
    field = f"\n\nPatchstack-Resolver: {cmd}\n---\n"
    header = repo.read("patches/p1.patch").replace("\n---\n", field, 1)
    (repo.path / "patches" / "p1.patch").write_text(header)
    repo.ps("refresh", "--onto", "up", code=1)
    assert not ran.exists()
    repo.ps("refresh", "--abort")
    repo.git("config", "patchstack.resolver", cmd)  # the repository's own configuration
    repo.ps("refresh", "--onto", "up", "--resolver", "", code=1)  # '' turns it off
    assert not ran.exists()
    repo.ps("refresh", "--abort")
    result = repo.ps("refresh", "--onto", "up")
    assert ran.exists() and f"resolved by {cmd}" in result.stdout
    assert repo.read("a.py") == GOOD


def test_a_knock_on_is_not_handed_to_the_resolver(tmp_path) -> None:
    """p2 conflicts only because p1 is left out: a knock-on, deferred with p1 as without a
    resolver, never a proposal (a resolution there would bake p1's absence into p2)."""
    repo = drift(tmp_path)
    asked = tmp_path / "asked"
    body = f"open({str(asked)!r}, 'a').write(json.load(sys.stdin)['patch']['name'] + '\\n')\n"
    cmd = resolver(tmp_path, "declines", body + "sys.exit(3)\n")
    args = ("refresh", "--onto", "up", "--defer-conflicts", "--resolver", cmd, "--json")
    doc = json.loads(repo.ps(*args).stdout)
    assert asked.read_text() == "p1.patch\n"
    assert [(c["patch"], c["kind"]) for c in doc["deferred"]] == [
        ("p1.patch", "primary"),
        ("p2.patch", "knock-on"),
    ]
    (p,) = doc["proposals"]
    assert p["patch"] == "p1.patch" and p["why"] == "it exited with status 3"


def test_continue_goes_on_with_the_resolver_the_refresh_started_with(tmp_path) -> None:
    """p1 and p3 conflict; the resolver declines p1 (the user resolves it) and resolves p3
    after --continue; `resolutions` names the machine-made record."""
    repo = drift(tmp_path)
    repo.git("checkout", "-q", "up")
    repo.write("b.py", numbered(40, "b").replace("b 20\n", "b 20 upstream\n"))
    repo.commit_all("upstream reworks b.py line 20")
    repo.git("checkout", "-q", "main")
    b_good = numbered(40, "b").replace("b 20\n", "b 20 upstream and mine\n")
    body = (
        "if json.load(sys.stdin)['patch']['name'] != 'p3.patch':\n"
        "    sys.exit('not mine')\n"
        f"open('result/b.py', 'w').write({b_good!r})\n"
    )
    cmd = resolver(tmp_path, "p3-only", body)
    stopped = repo.ps("refresh", "--onto", "up", "--resolver", cmd, code=1)
    assert "was refused: it exited with status 1: not mine" in stopped.stderr
    repo.write("a.py", GOOD)
    result = repo.ps("refresh", "--continue")
    assert f"p3.patch  (resolved by {cmd}: machine-made" in result.stdout
    assert repo.read("b.py") == b_good and repo.read("a.py") == GOOD
    listing = repo.ps("resolutions").stdout
    assert f"machine-made: resolved by {cmd})" in listing
    assert listing.count("machine-made") == 1  # p1's is the user's
    rows = json.loads(repo.ps("resolutions", "--json").stdout)["resolutions"]
    assert sorted((r["patch"], r["by"]) for r in rows) == [("p1.patch", ""), ("p3.patch", cmd)]
