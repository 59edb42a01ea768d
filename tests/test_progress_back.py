"""The progress line never goes back (issue 35: `check`'s bar went from 97 % to 58 % when the
knock-ons' reports were counted): within a step, every percentage drawn is at least the one
before, whatever (done, total) the command reports; the step's end draws 100 %."""

from __future__ import annotations

import io
import re

import pytest

from patchstack.cli import progress

from .conftest import Repo


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _shares(text: str) -> list[list[int]]:
    """The percentages drawn, one list a step (a step's line ends with ', done.')."""
    steps: list[list[int]] = [[]]
    for part in re.split(r"[\r\n]", text):
        found = re.search(r": (\d+)% \(\d+/\d+\)", part)
        if found:
            steps[-1].append(int(found[1]))
        if ", done." in part:
            steps.append([])
    return [s for s in steps if s]


@pytest.fixture
def drawn_at_once(monkeypatch) -> None:
    monkeypatch.setenv("PATCHSTACK_PROGRESS_DELAY", "0")
    monkeypatch.setattr(progress, "REDRAW", 0.0)
    monkeypatch.setattr(progress, "TICK", 60.0)  # no ticker redraws between the calls


def test_a_total_that_grows_faster_than_the_count_holds_the_line(drawn_at_once) -> None:
    stream = _Terminal()
    bar = progress.TerminalProgress("check", stream)
    bar.step("replaying the series")
    for done, total in [(10, 88), (50, 88), (86, 88), (51, 88), (70, 120), (117, 120), (119, 120)]:
        bar(done, total)
    bar.step("writing")
    bar(1, 4)
    bar(0, 8)
    bar.close()
    shares = _shares(stream.getvalue())
    assert shares[0][:3] == [11, 56, 97], shares
    assert all(s == sorted(s) for s in shares), shares
    assert shares[0][-1] == 100 and "(119/120)" in stream.getvalue()  # it caught up
    assert shares[1][0] == 25 and shares[1][-1] == 100  # a new step starts from its own count


def test_checks_bar_on_a_terminal_never_goes_back(repo: Repo, drawn_at_once, monkeypatch) -> None:
    """`check --onto` of knock-ons (their reports counted after the replay), its progress
    drawn as on a terminal: every step's percentages rise."""
    from .test_speed import _knock_ons

    _knock_ons(repo)
    monkeypatch.setattr(progress, "_isatty", lambda stream: True)
    result = repo.ps("check", "--onto", "up", code=1)
    shares = _shares(result.stderr)
    assert shares and all(s == sorted(s) for s in shares), shares
