"""Fuzz campaign: mutated patches and series files never crash, hang, escape or half-apply.

Valid patches (written by ``git format-patch``: text, a new file, a mode change, binary data)
and their series file are mutated (truncation, bit flips, swapped or duplicated lines,
duplicated hunks, hunk counts off by one, swapped file headers) and pushed. For every input:
exit status 0, 1 or 2 only; no traceback (the CLI runs with exceptions propagating); bounded
time; nothing written next to the work tree; and nothing on disk changed unless the exit
status is 0 (then ``pop --all`` must work too).

The default run is short and deterministic (``derandomize``, PATCHSTACK_FUZZ_EXAMPLES to
change its size); ``pytest -m soak -k fuzz`` runs a random campaign, 400 examples in CI
(PATCHSTACK_FUZZ_SOAK to change it; 2,000 take about 6 minutes on two cores).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import SEALED, Repo, make_repo, numbered

EXAMPLES = int(os.environ.get("PATCHSTACK_FUZZ_EXAMPLES", "10"))
SOAK_EXAMPLES = int(os.environ.get("PATCHSTACK_FUZZ_SOAK", "400"))
TIME_LIMIT = 10.0


def _two_hunks(work: Path) -> None:
    text = (work / "a.py").read_text()
    (work / "a.py").write_text(text.replace("a 5\n", "a 5 edited\n").replace("a 30\n", "a30\n"))


def _new_file(work: Path) -> None:
    (work / "new.txt").write_text("brand new\nfile\n")
    (work / "b.py").write_text((work / "b.py").read_text().replace("b 2\n", "b 2\nb 2.5\n"))


def _mode_and_binary(work: Path) -> None:
    (work / "script.sh").chmod(0o755)
    (work / "blob.bin").write_bytes(bytes(range(256)) * 3)


STEPS = [("two hunks", _two_hunks), ("new file", _new_file), ("mode and binary", _mode_and_binary)]


@pytest.fixture(scope="module")
def template() -> Path:
    """A repository with a valid three-patch series at its base (made once per module)."""
    old = {k: os.environ.get(k) for k in SEALED}
    os.environ.update(SEALED)
    try:
        root = Path(tempfile.mkdtemp(prefix="patchstack-fuzz-"))
        repo = make_repo(
            root / "fork",
            {"a.py": numbered(40, "a"), "b.py": numbered(20, "b"), "script.sh": "echo hi\n"},
        )
        maker = root / "maker"
        subprocess.run(["git", "clone", "-q", str(repo.path), str(maker)], check=True)
        for subject, step in STEPS:
            step(maker)
            subprocess.run(["git", "add", "-A"], cwd=maker, check=True)
            subprocess.run(["git", "commit", "-q", "-m", subject], cwd=maker, check=True)
        out = root / "formatted"
        subprocess.run(
            ["git", "format-patch", "-q", "--binary", "--full-index", "-o", str(out), "HEAD~3"],
            cwd=maker,
            check=True,
        )
        repo.ps("init")
        series = repo.path / "patches" / "series"
        for k, f in enumerate(sorted(out.iterdir())):
            name = f"p{k}.patch"
            shutil.copy(f, repo.path / "patches" / name)
            with open(series, "a") as s:
                s.write(f"{name} # {('essential', 'diagnostic', 'optimization')[k]}\n")
        repo.write("scratch.txt", "untracked, mine\n")
        shutil.rmtree(maker)
        yield repo.path
        shutil.rmtree(root, ignore_errors=True)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# -- mutations --------------------------------------------------------------------------------

_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def mutate(data: bytes, kind: str, a: int, b: int) -> bytes:
    """One mutation of ``data``; ``a`` and ``b`` are free numbers the mutation picks with."""
    lines = _lines(data)
    if kind == "truncate":
        return data[: a % (len(data) + 1)]
    if kind == "bitflip":
        if not data:
            return data
        pos = a % len(data)
        return data[:pos] + bytes([data[pos] ^ (1 << (b % 8))]) + data[pos + 1 :]
    if kind == "swap-lines":
        i, j = a % len(lines), b % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if kind == "duplicate-line":
        i = a % len(lines)
        return b"\n".join(lines[: i + 1] + lines[i:])
    if kind == "delete-line":
        i = a % len(lines)
        return b"\n".join(lines[:i] + lines[i + 1 :])
    if kind == "duplicate-hunk":
        starts = [i for i, ln in enumerate(lines) if ln.startswith(b"@@")]
        if not starts:
            return data
        s = starts[a % len(starts)]
        e = next(
            (i for i in range(s + 1, len(lines)) if lines[i].startswith((b"@@", b"diff ", b"-- "))),
            len(lines),
        )
        return b"\n".join(lines[:e] + lines[s:e] + lines[e:])
    if kind == "count-off-by-one":
        found = list(_HUNK_RE.finditer(data))
        if not found:
            return data
        m = found[a % len(found)]
        group = 1 + b % 4
        if m.group(group) is None:
            group = 1
        value = int(m.group(group)) + (1 if b % 2 else -1)
        start, end = m.span(group)
        return data[:start] + str(max(value, 0)).encode() + data[end:]
    if kind == "swap-headers":
        heads = [
            i for i, ln in enumerate(lines) if ln.startswith((b"--- ", b"+++ ", b"diff --git"))
        ]
        if len(heads) < 2:
            return data
        i, j = heads[a % len(heads)], heads[b % len(heads)]
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    raise AssertionError(kind)


KINDS = [
    "truncate",
    "bitflip",
    "swap-lines",
    "duplicate-line",
    "delete-line",
    "duplicate-hunk",
    "count-off-by-one",
    "swap-headers",
]
TARGETS = ["p0.patch", "p1.patch", "p2.patch", "series"]
mutation = st.tuples(
    st.sampled_from(TARGETS),
    st.sampled_from(KINDS),
    st.integers(0, 1 << 20),
    st.integers(0, 1 << 20),
)


def on_disk(repo: Repo, outside: Path) -> tuple:
    git_dir = repo.path / ".git"
    return (
        repo.snapshot(),
        (git_dir / "index").read_bytes(),
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("rev-parse", "HEAD"),
        sorted(p.name for p in outside.iterdir()),
    )


FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
mutations_st = st.lists(mutation, min_size=1, max_size=3)


@FUZZ
@given(mutations_st)
def test_mutated_input_exits_0_1_or_2_cleanly(template: Path, mutations) -> None:
    run_case(template, mutations)


@pytest.mark.soak
@settings(FUZZ, max_examples=SOAK_EXAMPLES, derandomize=False)
@given(mutations_st)
def test_fuzz_soak(template: Path, mutations) -> None:
    """The long campaign: ``pytest -m soak -k fuzz`` (random, PATCHSTACK_FUZZ_SOAK examples)."""
    run_case(template, mutations)


def run_case(template: Path, mutations) -> None:
    box = Path(tempfile.mkdtemp(prefix="patchstack-fuzz-case-"))
    try:
        work = box / "fork"
        shutil.copytree(template, work, symlinks=True)
        repo = Repo(work)
        for target, kind, a, b in mutations:
            path = work / "patches" / target
            path.write_bytes(mutate(path.read_bytes(), kind, a, b))
        before = on_disk(repo, box)
        t0 = time.monotonic()
        result = repo.ps("push", "--all", code=None)
        elapsed = time.monotonic() - t0
        assert result.exit_code in (0, 1, 2), (mutations, result.exit_code, result.stderr)
        assert "Traceback" not in result.stdout + result.stderr
        assert elapsed < TIME_LIMIT, (mutations, elapsed)
        assert sorted(p.name for p in box.iterdir()) == ["fork"]
        if result.exit_code != 0:
            assert on_disk(repo, box) == before, (mutations, result.stderr)
            assert result.stderr.strip(), "a refusal says why"
        else:
            repo.ps("pop", "--all")
        other = repo.ps("check", code=None)
        assert other.exit_code in (0, 1, 2), other.stderr
    finally:
        shutil.rmtree(box, ignore_errors=True)
