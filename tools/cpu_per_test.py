"""The CPU each test costs, in the pytest process and in the processes it started (git, the
CLI), measured with getrusage around each test's set-up, call and tear-down: unlike
``--durations``, it does not grow with the machine's load (the project's machine is shared,
and a wall-clock duration there says more about the neighbours than about the test).

As a pytest plugin (xdist's workers load it too), then the report::

    PYTHONPATH=tools PATCHSTACK_TEST_CPU=/tmp/cpu python -m pytest -p cpu_per_test
    python tools/cpu_per_test.py /tmp/cpu            # by file, then the tests over 2 CPU s

A module-scoped fixture is counted in the first test that uses it. A child process is counted
once it is waited for (every git and CLI process a test runs is); one left running is not.
The tests over ~5 s on a quiet machine belong under ``-m slow`` (pyproject's marker): a
serial test's quiet wall time is about its CPU time here.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

OUT = "PATCHSTACK_TEST_CPU"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


try:
    import pytest
except ImportError:  # the report alone needs no pytest
    pytest = None  # type: ignore[assignment]
else:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: Any, nextitem: Any) -> Generator[None, None, None]:
        folder = os.environ.get(OUT)
        if not folder:
            yield
            return
        own, kids = _cpu()
        start = time.monotonic()
        yield
        own2, kids2 = _cpu()
        row = [item.nodeid, own2 - own, kids2 - kids, time.monotonic() - start]
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a") as out:
            out.write(json.dumps(row) + "\n")


def report(folder: Path, over: float = 2.0, files: int = 40) -> str:
    rows = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open()]
    lines = [
        f"{len(rows)} tests: {sum(r[1] for r in rows):.0f} CPU s in pytest, "
        f"{sum(r[2] for r in rows):.0f} in the processes they started "
        f"({len(list(folder.glob('*.jsonl')))} processes ran tests)"
    ]
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for nodeid, own, kids, _wall in rows:
        total = by_file[nodeid.split("::")[0]]
        total[0] += own
        total[1] += kids
        total[2] += 1
    lines.append("   CPU s  pytest  children  tests  file")
    ranked = sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for name, (own, kids, n) in ranked[:files]:
        lines.append(f"{own + kids:8.1f} {own:7.1f} {kids:9.1f} {int(n):6d}  {name}")
    lines.append(f"tests over {over} CPU s:")
    for nodeid, own, kids, _wall in sorted(rows, key=lambda r: -(r[1] + r[2])):
        if own + kids < over:
            break
        lines.append(f"{own + kids:8.2f} {own:7.2f} {kids:9.2f}  {nodeid}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} FOLDER (the {OUT} folder of a run)")
    print(report(Path(sys.argv[1])))
