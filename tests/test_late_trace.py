"""``refresh --defer-conflicts`` (the short output) begins the culprit walk of the files its
deferred reports print first as soon as the reports are triaged (`KeptLines.start`), and
takes it last, before it publishes (`settle.finish`): git walks while the refresh
regenerates its patch files and judges its verdicts. Differential: the same output, HEAD,
series folder and cache-free rerun with the walk begun early and without
(``PATCHSTACK_NO_EARLY_WALK=1``: walked when traced), and as tracing every hunk prints
(``PATCHSTACK_TRACE_ALL=1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.commands.refresh import settle
from patchstack.git import Git

from .conftest import Repo, copy_repo
from .test_check_printed import _drift


def _observed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What happens, in order: a walk begun ("begun"), its answer read ("answered"), a walk
    made when asked ("walked"), the verdicts classified ("classify"), the publish."""
    seen: list[str] = []
    plain, early = Git.line_changes, Git.start_line_changes
    classify, publish = settle.classify, settle.publish

    def walked(self, rng, paths, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("walked")
        return plain(self, rng, paths, *args, **kwargs)

    def begun(self, rng, paths, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("begun")
        answer = early(self, rng, paths, *args, **kwargs)

        def answered():  # type: ignore[no-untyped-def]
            seen.append("answered")
            return answer()

        return answered

    def classified(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("classify")
        return classify(*args, **kwargs)

    def published(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("publish")
        return publish(*args, **kwargs)

    monkeypatch.setattr(Git, "line_changes", walked)
    monkeypatch.setattr(Git, "start_line_changes", begun)
    monkeypatch.setattr(settle, "classify", classified)
    monkeypatch.setattr(settle, "publish", published)
    return seen


def _left(repo: Repo) -> tuple[str, str, dict[str, str]]:
    folder = repo.path / "patches"
    files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    return repo.git("rev-parse", "HEAD^{tree}").strip(), repo.git("log", "--format=%s %T"), files


@pytest.mark.parametrize("seed", [4, 5])
def test_a_deferring_refresh_walks_while_it_regenerates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    repo = _drift(tmp_path, seed)
    late = copy_repo(repo.path, tmp_path / "late")
    every = copy_repo(repo.path, tmp_path / "every")
    monkeypatch.delenv("PATCHSTACK_TRACE_ALL", raising=False)
    seen = _observed(monkeypatch)
    got = repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    assert "deferred: 3 primary" in got
    # begun before the patch files are regenerated, read after, before the publish
    assert seen.index("begun") < seen.index("classify") < seen.index("answered")
    assert seen.index("answered") < seen.index("publish")
    assert "walked" not in seen[: seen.index("classify")]
    seen.clear()
    monkeypatch.setenv("PATCHSTACK_NO_EARLY_WALK", "1")
    assert late.ps("refresh", "--onto", "up", "--defer-conflicts").stdout == got
    assert "begun" not in seen and "walked" in seen
    assert _left(late) == _left(repo)
    monkeypatch.delenv("PATCHSTACK_NO_EARLY_WALK")
    monkeypatch.setenv("PATCHSTACK_TRACE_ALL", "1")
    assert every.ps("refresh", "--onto", "up", "--defer-conflicts").stdout == got
    assert _left(every) == _left(repo)
