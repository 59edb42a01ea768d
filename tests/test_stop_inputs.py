"""What decides a merge (`git.attributes.merge_inputs`), digested once per command of a
refresh stop by stop: the replay's digest serves the verdicts (and the culprit walks kept,
`kept.KeptLines`) after the stop is published,
unless the publish moved a ``.gitattributes`` (a patch placed since the last stop adds one).
Each verdict is judged under the digest of the repository as it is then."""

from __future__ import annotations

from patchstack.commands.refresh import kept, knockons, taken
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
    monkeypatch.setattr(kept, "merge_inputs", counted)  # (the culprit walk's key: the same one)
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


def test_a_stop_parses_each_conflicted_file_once(tmp_path, monkeypatch) -> None:
    """The replay's triage parsed the stopped merge's files: the stop's report takes its
    regions (the same ones: the stops print the same as without a triage to take them
    from), and parses again only the files it traces, printed (their regions' ends)."""
    from patchstack.engine import culprits
    from patchstack.model import conflict

    parsed: list[str] = []
    real = conflict.marked_regions

    def counted(path, text):  # type: ignore[no-untyped-def]
        parsed.append(path)
        return real(path, text)

    monkeypatch.setattr(conflict, "marked_regions", counted)
    monkeypatch.setattr(culprits, "marked_regions", counted)
    repo = kv._fork(tmp_path)
    plain = kv.copy_repo(repo.path, tmp_path / "plain")
    first = repo.ps("refresh", "--onto", "up", code=1)
    assert parsed == ["f.py"] * 2, parsed  # A's stop: f.py, triaged and traced
    parsed.clear()
    second = repo.ps("refresh", "--skip", code=1)
    assert sorted(parsed) == ["f.py", "f.py", "g.py", "g.py"], parsed  # B's: f.py and g.py
    monkeypatch.setattr(conflict, "marked_regions", real)
    monkeypatch.setattr(culprits, "marked_regions", real)
    assert plain.ps("refresh", "--onto", "up", code=1).stderr == first.stderr
    assert plain.ps("refresh", "--skip", code=1).stderr == second.stderr


def test_a_stop_learns_whether_a_gitattributes_moved_from_the_diffs_it_made(
    tmp_path, monkeypatch
) -> None:
    """Whether the publish moved a ``.gitattributes`` is read off the diffs the stop made
    already (what the work tree and the shown merge change): the move's whole diff, old
    HEAD to the stop's (on a real drift thousands of paths), is never walked for it."""
    from patchstack.git.repo import Git

    repo = kv._fork(tmp_path)
    old = repo.git("rev-parse", "HEAD^{tree}").strip()
    pairs: list[tuple[str, str]] = []
    real = Git.changed_entries

    def spied(self, a, b):  # type: ignore[no-untyped-def]
        pairs.append((a, b))
        return real(self, a, b)

    monkeypatch.setattr(Git, "changed_entries", spied)
    repo.ps("refresh", "--onto", "up", code=1)
    new = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert old != new
    assert (old, new) not in pairs, pairs
