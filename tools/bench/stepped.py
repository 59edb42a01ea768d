"""One patchstack command with clocks (``skip_steps.py`` runs it): read at the interpreter's
start, once the code is imported, at every step the command names and at its exit, and around
each function of FUNCTIONS (inclusive, outermost calls), in wall and CPU time (its own and its
finished children's). Writes ``{"marks": [...], "timed": {...}}`` as JSON to OUT.

    python tools/bench/stepped.py OUT FUNCTIONS_JSON patchstack-args...
"""
# ruff: noqa: E402

import json
import resource
import sys
import time
from typing import Any

marks: list[tuple[str, float, float, float]] = []
timed: dict[str, tuple[float, float]] = {}


def cpu() -> tuple[float, float]:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def clock(label: str) -> None:
    marks.append((label, time.monotonic(), *cpu()))


clock("importing the code")
out, functions = sys.argv[1], json.loads(sys.argv[2])
sys.argv = ["patchstack", *sys.argv[3:]]
import importlib
import runpy

import patchstack.cli.progress as progress
import patchstack.cli.refresh
import patchstack.commands.refresh.resume  # noqa: F401  (what a skip imports)

clock("opening (to the first step)")
step = progress.TerminalProgress.step


def stepped(self: Any, label: str, total: int | None = None) -> None:
    clock(label)
    step(self, label, total)


progress.TerminalProgress.step = stepped  # type: ignore[method-assign]
depth: dict[str, int] = {}


def wrap(f: Any, name: str) -> Any:
    def timed_call(*a: Any, **k: Any) -> Any:
        depth[name] = depth.get(name, 0) + 1
        t0, (own0, kids0) = time.monotonic(), cpu()
        try:
            return f(*a, **k)
        finally:
            depth[name] -= 1
            if not depth[name]:
                own, kids = cpu()
                w, c = timed.get(name, (0.0, 0.0))
                timed[name] = (w + time.monotonic() - t0, c + own + kids - own0 - kids0)

    return timed_call


for spec in functions:
    mod, _, qual = spec.partition(":")
    owner: Any = importlib.import_module(mod)
    *classes, attr = qual.split(".")
    for c in classes:
        owner = getattr(owner, c)
    f = getattr(owner, attr)
    setattr(owner, attr, wrap(f, spec))
    if not classes:  # imported by name elsewhere: wrapped there too
        for m in list(sys.modules.values()):
            if getattr(m, "__name__", "").startswith("patchstack") and getattr(m, attr, None) is f:
                setattr(m, attr, getattr(owner, attr))
code = 0
try:
    runpy.run_module("patchstack", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else int(e.code is not None)
finally:
    clock("exit")
    with open(out, "w") as fh:
        json.dump({"marks": marks, "timed": timed}, fh)
sys.exit(code)
