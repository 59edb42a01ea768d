"""tools/cpu_per_test.py counts a test's CPU in its own process and in the children it waited
for, writes one row a test per process, and reports them by file and by test."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "cpu_per_test.py"
BURN = "t = 0\nfor i in range(3_000_000):\n    t += i\n"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cpu_per_test", TOOL)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_childs_cpu_is_counted_apart_and_reported(tmp_path: Path, monkeypatch) -> None:
    tool = _tool()
    folder = tmp_path / "cpu"
    monkeypatch.setenv(tool.OUT, str(folder))
    for nodeid, child in (("tests/test_a.py::test_child", True), ("tests/test_b.py::t", False)):
        wrapped = tool.pytest_runtest_protocol(SimpleNamespace(nodeid=nodeid), None)
        next(wrapped)
        if child:
            subprocess.run([sys.executable, "-c", BURN], check=True)
        with pytest.raises(StopIteration):
            wrapped.send(None)
    rows = [json.loads(line) for f in folder.glob("*.jsonl") for line in f.open()]
    assert [r[0] for r in rows] == ["tests/test_a.py::test_child", "tests/test_b.py::t"]
    assert rows[0][2] > 0.05 and rows[1][2] == 0  # the child's CPU, in the test that ran it
    assert all(r[1] >= 0 and r[3] >= 0 for r in rows)
    said = tool.report(folder, over=0.05).splitlines()
    assert said[0].startswith("2 tests: ") and said[0].endswith("(1 processes ran tests)")
    assert said[2].endswith(" 1  tests/test_a.py") and said[3].endswith(" 1  tests/test_b.py")
    assert said[4:] == [said[4], said[5]] and said[5].endswith("  tests/test_a.py::test_child")


def test_without_the_folder_nothing_is_written(tmp_path: Path, monkeypatch) -> None:
    tool = _tool()
    monkeypatch.delenv(tool.OUT, raising=False)
    monkeypatch.chdir(tmp_path)
    wrapped = tool.pytest_runtest_protocol(SimpleNamespace(nodeid="t"), None)
    next(wrapped)
    with pytest.raises(StopIteration):
        wrapped.send(None)
    assert list(tmp_path.iterdir()) == []
