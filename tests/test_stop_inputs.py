"""What decides a merge (`git.attributes.merge_inputs`), digested once per command of a
refresh stop by stop: the replay's digest serves the verdicts after the stop is published,
unless the publish moved a ``.gitattributes`` (a patch placed since the last stop adds one).
Each verdict is judged under the digest of the repository as it is then."""

from __future__ import annotations

from patchstack.commands.refresh import knockons, taken
from patchstack.git.attributes import merge_inputs

from . import test_kept_verdicts as kv

# G, placed once A is skipped, adds a .gitattributes: B's stop publishes it.
SERIES = [*kv.SERIES[:2], ("G", []), *kv.SERIES[2:]]


def test_a_stop_digests_what_decides_a_merge_once_unless_it_moved(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(kv, "SERIES", SERIES)
    real_commit = kv.Repo.commit_all

    def commit_all(self, message):  # type: ignore[no-untyped-def]
        if message.startswith("G\n"):
            (self.path / ".gitattributes").write_text("notes.txt -merge\n")
        return real_commit(self, message)

    monkeypatch.setattr(kv.Repo, "commit_all", commit_all)
    repo = kv._fork(tmp_path)
    monkeypatch.setattr(kv.Repo, "commit_all", real_commit)
    digests: list[int] = []
    used: list[tuple[str, str]] = []

    def counted(git):  # type: ignore[no-untyped-def]
        digests.append(1)
        return merge_inputs(git)

    real_held = taken.held

    def held(git, *args):  # type: ignore[no-untyped-def]
        kept = args[-1]
        if kept is not None:
            used.append((kept[1], merge_inputs(git)))
        return real_held(git, *args)

    monkeypatch.setattr(taken, "merge_inputs", counted)
    monkeypatch.setattr(knockons, "merge_inputs", counted)
    monkeypatch.setattr(taken, "held", held)
    repo.ps("refresh", "--onto", "up", code=1)
    per_command = []
    while True:
        digests.clear()
        step = repo.ps("refresh", "--skip", code=None)
        per_command.append(len(digests))
        if step.exit_code != 1:
            break
    assert step.exit_code == 0, step.stderr
    assert (repo.path / ".gitattributes").exists()
    assert used and all(a == b for a, b in used), used  # each verdict under the digest of now
    # B's stop, published with G's .gitattributes: digested again; the others once.
    assert per_command == [2, 1, 1], per_command
