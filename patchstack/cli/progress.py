"""Progress on a terminal, as git shows it: one line a step on standard error, counted where the
step counts (``push: building commits: 40% (1000/2500)``), timed where it does not
(``pop: writing the work tree: 2.1 s``), and ``, done.`` when the next step begins.

Within a step the share drawn never goes back: a count whose total grew faster than it (a
check that finds more reports to build) leaves the line as it was until the count catches up.

Nothing is drawn until the command has run for a second (``PATCHSTACK_PROGRESS_DELAY``
seconds), nor when standard error is not a terminal; from then on every step and count is
drawn as it comes, and a ticker redraws the current step every fifth of a second, so a step
that is one long git process (the work tree written by ``read-tree``) still shows it is alive.
Any other output first ends the progress line (`pause`), so lines never mix.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from ..progress import Progress

DELAY = 1.0  # seconds before anything is drawn (PATCHSTACK_PROGRESS_DELAY)
TICK = 0.2
REDRAW = 0.05  # seconds between two redraws for counts

_SHOWN: list[TerminalProgress] = []  # the reporters drawing now (one a command)


class TerminalProgress(Progress):
    def __init__(self, command: str, stream: Any = None) -> None:
        self.command = command
        self.stream = stream or sys.stderr
        self.enabled = _isatty(self.stream)
        self.delay = _delay()
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.label = ""
        self.done = 0
        self.total: int | None = None
        self.step_start = self.start
        self.drawn = False  # the current step's line is on the screen, unfinished
        self.paused = False  # other output came: nothing is drawn until the next step
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.clear = "\x1b[K" if os.environ.get("TERM") != "dumb" else ""
        self.width = 0  # of the last line drawn (to blank it out without \x1b[K)
        self._tick()  # a command that names no step still shows its time

    # -- what commands report ---------------------------------------------------------------

    def step(self, label: str, total: int | None = None) -> None:
        with self.lock:
            self._finish(done=True)
            self.label, self.done, self.total = label, 0, total
            self.step_start = time.monotonic()
            self.paused = False
            self._draw_if_due(force=True)
        self._tick()

    def __call__(self, done: int, total: int) -> None:
        with self.lock:
            if self.total and total and done * self.total < self.done * total:
                return  # a total grown faster than the count: the line holds, never goes back
            self.done, self.total = done, total
            self._draw_if_due(force=done >= total)
        self._tick()

    # -- drawing ------------------------------------------------------------------------------

    def _tick(self) -> None:
        if not self.enabled or self.thread is not None:
            return
        self.thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self.thread.start()
        _SHOWN.append(self)

    def _run(self) -> None:
        while not self.stop.wait(TICK):
            with self.lock:
                self._draw_if_due(force=True)

    def _draw_if_due(self, force: bool) -> None:
        now = time.monotonic()
        if not self.enabled or self.paused or now - self.start < self.delay:
            return
        if force or now - self.last_draw >= REDRAW:
            self._draw()

    def _text(self) -> str:
        what = f"{self.command}: {self.label}" if self.label else self.command
        if self.total:
            pct = min(100, self.done * 100 // max(1, self.total))
            return f"{what}: {pct}% ({self.done}/{self.total})"
        return f"{what}: {time.monotonic() - self.step_start:.1f} s"

    def _draw(self, end: str = "") -> None:
        text = self._text() + end
        pad = " " * max(0, self.width - len(text)) if not self.clear else ""
        try:
            self.stream.write("\r" + text + (self.clear or pad))
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self.width = len(text)
        self.drawn = True
        self.last_draw = time.monotonic()

    def _finish(self, done: bool) -> None:
        """End the current step's line: ``, done.`` when it finished, else blank it out."""
        if not self.drawn:
            return
        try:
            if done:
                self.done = self.total or self.done  # a step that ended counted all it had
                self._draw(", done.")
                self.stream.write("\n")
            else:
                self.stream.write("\r" + (self.clear or " " * self.width) + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self.drawn = False
        self.width = 0

    def pause(self) -> None:
        """Before other output: the unfinished line goes, and nothing is drawn again until
        the next step begins (output mostly means the work is done)."""
        with self.lock:
            self._finish(done=False)
            self.paused = True

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        with self.lock:
            self._finish(done=True)
        if self in _SHOWN:
            _SHOWN.remove(self)


def pause() -> None:
    """Every reporter drawing now leaves the line to other output."""
    for shown in list(_SHOWN):
        shown.pause()


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get("PATCHSTACK_PROGRESS_DELAY", DELAY)))
    except ValueError:
        return DELAY


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
