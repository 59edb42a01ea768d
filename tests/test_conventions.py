"""Conventions users expect of a git tool: help with examples, stable JSON, colour rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from patchstack.cli import cli

from .conftest import Repo, pushed_sandbox


def all_commands(group: click.Group = cli, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        found.append((f"{prefix}{name}", cmd))
        if isinstance(cmd, click.Group):
            found += all_commands(cmd, f"{prefix}{name} ")
    return found


@pytest.mark.parametrize(("name", "cmd"), all_commands())
def test_every_help_has_an_example(name: str, cmd: click.Command) -> None:
    assert "Example" in (cmd.help or ""), f"'patchstack {name} --help' shows no example"


@pytest.fixture
def fork(tmp_path) -> Repo:
    return Repo(pushed_sandbox(tmp_path, "essential").fork)


def test_json_shapes_are_stable(fork: Repo) -> None:
    series = json.loads(fork.ps("series", "--json").stdout)
    assert set(series) == {"version", "base", "base_ref", "head", "patches"}
    assert set(series["patches"][0]) == {
        "name",
        "tag",
        "labels",
        "applied",
        "commit",
        "mark",
        "probe",
        "upstream",
    }
    status = json.loads(fork.ps("status", "--json").stdout)
    assert {
        "branch",
        "head",
        "base",
        "base_ref",
        "stack_base",
        "applied",
        "unapplied",
        "patches",
        "edits",
        "edits_in_patches",
        "untracked",
        "differs",
        "drift",
    } <= set(status)
    assert set(status["patches"][0]) == {
        "name",
        "tag",
        "labels",
        "applied",
        "commit",
        "matches",
        "commit_tag",
        "mark",
        "probe",
        "upstream",
    }
    assert set(status["drift"]) >= {"base", "target", "commits", "touching"}
    check = json.loads(fork.ps("check", "--json").stdout)
    assert {"target", "base", "ok", "patches"} <= set(check)
    assert set(check["patches"][0]) >= {"name", "tag", "verdict"}
    assert check["ok"] is True


def test_no_colour_in_pipes_or_with_no_color(fork: Repo) -> None:
    env = dict(os.environ, PAGER="cat")  # the pager is another test's
    env.pop("NO_COLOR", None)
    run = [sys.executable, "-m", "patchstack"]
    piped = subprocess.run([*run, "series"], cwd=fork.path, env=env, capture_output=True, text=True)
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout
    forced = subprocess.run(
        [*run, "--color=always", "series"], cwd=fork.path, env=env, capture_output=True, text=True
    )
    assert "\x1b[" in forced.stdout
    never = subprocess.run(
        [*run, "--color=never", "status"], cwd=fork.path, env=env, capture_output=True, text=True
    )
    assert "\x1b[" not in never.stdout
    # A terminal gets colour, unless NO_COLOR says otherwise.
    script = "import pty, sys; pty.spawn(sys.argv[1:])"
    tty = subprocess.run(
        [sys.executable, "-c", script, *run, "series"],
        cwd=fork.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "\x1b[" in tty.stdout
    tty = subprocess.run(
        [sys.executable, "-c", script, *run, "series"],
        cwd=fork.path,
        env=dict(env, NO_COLOR="1"),
        capture_output=True,
        text=True,
    )
    assert "\x1b[" not in tty.stdout and "essential" in tty.stdout


def test_errors_say_what_to_do_next(fork: Repo) -> None:
    result = fork.ps("push", "nonexistent", code=2)
    assert "hint:" in result.stderr
    result = fork.ps("pop", "--only", "opt", code=2)
    assert "unknown tag 'opt'" in result.stderr and "hint:" in result.stderr
