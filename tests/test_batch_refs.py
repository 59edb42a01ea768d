"""The revisions and the tip messages read from the persistent ``cat-file`` (`Refs.rev_parse`,
`Refs._tip_message`, instead of a ``rev-parse`` and a ``log`` process each). Differential,
against git for odd names: lightweight and annotated tags (a tag of a tag, of a tree, of a
blob), a name that is both a branch and a tag, an abbreviated id two objects share, missing
refs and revisions, a ref moved by another process between two questions; and messages with
trailing blank lines, leading blank lines, no final newline, an empty one, a merge's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from patchstack.git import find_repo

from .conftest import Repo, built_once, make_repo


def _git(repo: Repo, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo.path, input=input, capture_output=True, check=True
    ).stdout


def _commit(repo: Repo, message: bytes, *parents: str) -> str:
    """A commit of HEAD's tree with exactly this message (``commit-tree`` keeps its bytes)."""
    args = ["commit-tree", "HEAD^{tree}"] + [a for p in parents for a in ("-p", p)]
    return _git(repo, *args, input=message).decode().strip()


MESSAGES = {
    "trailing": b"subject\n\nbody\n\n\n\n",
    "no-newline": b"subject without a final newline",
    "leading": b"\n\n\nsubject after blank lines\n",
    "empty": b"",
    "spaces": b"subject   \n \n\t\nbody  \n  ",
    "crlf": b"subject\r\n\r\nbody\r\n",
    "unicode": "s\u00fcbject \u2603\n\nb\u00f6dy\n".encode(),
    "latin1": b"caf\xe9 not utf-8\n",
}


@built_once
def _odd_repo(tmp_path: Path) -> tuple[Repo, list[str]]:
    repo = make_repo(tmp_path / "r", {"a.py": "a\n", "b/c.py": "c\n"})
    repo.write("a.py", "a 2\n")
    repo.commit_all("second\n\nwith a body\n")
    first = repo.head()
    for name, message in MESSAGES.items():
        _git(repo, "update-ref", f"refs/heads/m-{name}", _commit(repo, message, first))
    merge = _commit(repo, b"a merge\n\n\n", first, f"{first}~1")
    _git(repo, "update-ref", "refs/heads/merged", merge)
    repo.git("tag", "light")
    repo.git("tag", "-a", "annotated", "-m", "an annotated tag\n\n\n")
    repo.git("tag", "-a", "nested", "-m", "a tag of a tag", "annotated")
    repo.git("tag", "-a", "of-tree", "-m", "a tag of a tree", "HEAD^{tree}")
    repo.git("tag", "-a", "of-blob", "-m", "a tag of a blob", "HEAD:a.py")
    repo.git("branch", "both", "HEAD~1")
    repo.git("tag", "both", "HEAD")  # refs/tags/both wins (git warns it is ambiguous)
    repo.git("branch", "heads/odd", "HEAD~1")  # refs/heads/heads/odd
    repo.git("pack-refs", "--all")
    repo.git("branch", "loose", "HEAD~1")  # a loose ref beside the packed ones
    # Enough objects that two share an abbreviated id of four digits.
    for n in range(400):
        _git(repo, "hash-object", "-w", "--stdin", input=f"blob {n}\n".encode())
    seen: dict[str, str] = {}
    shared = None
    for line in _git(repo, "cat-file", "--batch-all-objects", "--batch-check").splitlines():
        oid = line.split()[0].decode()
        if oid[:4] in seen:
            shared = oid[:4]
            break
        seen[oid[:4]] = oid
    assert shared is not None
    head = repo.head()
    names = [
        "HEAD", "main", "refs/heads/main", "heads/main", "HEAD~1", "HEAD^", "HEAD^2", "HEAD~9",
        "light", "annotated", "nested", "of-tree", "of-blob", "annotated^{}", "nested^{commit}",
        "both", "heads/both", "tags/both", "heads/odd", "odd", "loose", "refs/heads/loose",
        "merged", "merged^2", "merged^{tree}", "HEAD:a.py", "HEAD:b", ":/second", ":/nothing",
        "main@{0}", "@{-1}", "nope", "refs/heads/nope", "origin/main", "0" * 40, head,
        head[:7], head[:4], head.upper(), shared, "-x", "a b", "main..HEAD", "main...HEAD",
        "^main", "HEAD@{upstream}", "m-trailing", *[f"m-{n}" for n in MESSAGES],
    ]  # fmt: skip
    return repo, names


def _rev_parse(repo: Repo, name: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    found = proc.stdout.strip()
    # (``^main`` passes --verify as ``^<id>``: a negative revision, no commit to name)
    return found if proc.returncode == 0 and re.fullmatch("[0-9a-f]{40}", found) else None


def _log_tip(repo: Repo, name: str) -> tuple[str, str] | None:
    """What `Refs.messages` reads without the batch: ``log --format=%H%x01%B -n1``."""
    proc = subprocess.run(
        ["git", "log", "--first-parent", "-z", "--format=%H%x01%B", "-n1", "--end-of-options"]
        + [f"{name}^{{commit}}", "--"],
        cwd=repo.path,
        capture_output=True,
    )
    if proc.returncode != 0:
        return None
    oid, _, message = proc.stdout.decode("utf-8", "surrogateescape").rstrip("\0").partition("\1")
    return oid.lstrip("\n"), message


def test_rev_parse_names_the_commit_git_rev_parse_names(tmp_path) -> None:
    repo, names = _odd_repo(tmp_path)
    git = find_repo(str(repo.path))
    answered = {name: git.rev_parse(name) for name in names}
    assert answered == {name: _rev_parse(repo, name) for name in names}
    assert answered["both"] == repo.head() and answered["heads/both"] != repo.head()
    assert answered["nested"] == repo.head() and answered["of-tree"] is None
    assert answered["nope"] is None and answered[names[-1]] is not None


def test_rev_parse_reads_a_ref_another_process_moved(tmp_path) -> None:
    """The persistent ``cat-file`` reads the refs again at each question: a loose ref, a
    packed one, one made and one deleted meanwhile."""
    repo, _names = _odd_repo(tmp_path)
    git = find_repo(str(repo.path))
    asked = ["loose", "main", "light", "fresh", "both"]
    assert [git.rev_parse(n) for n in asked] == [_rev_parse(repo, n) for n in asked]
    second, first = repo.head(), repo.git("rev-parse", "HEAD~1").strip()
    repo.git("update-ref", "refs/heads/loose", second)
    repo.git("update-ref", "refs/heads/main", first)  # packed: now loose too
    repo.git("tag", "-d", "light")
    repo.git("branch", "fresh", second)
    repo.git("pack-refs", "--all")
    repo.git("tag", "-d", "both")  # the branch alone now
    assert [git.rev_parse(n) for n in asked] == [_rev_parse(repo, n) for n in asked]
    assert git.rev_parse("light") is None and git.rev_parse("fresh") is not None


def test_the_tip_message_is_the_one_git_log_gives(tmp_path) -> None:
    repo, names = _odd_repo(tmp_path)
    git = find_repo(str(repo.path))
    compared = 0
    for name in names:
        tip = git._tip_message(name)
        if tip is not None:  # (None: `messages` asks git log itself)
            compared += 1
            assert tip == _log_tip(repo, name), name
            one = _git(repo, "log", "-1", "--format=%B", "--end-of-options", tip[0], "--")
            assert one.decode("utf-8", "surrogateescape") == tip[1] + "\n", name
        else:
            assert git.rev_parse(name) is None, name
    assert compared >= len(MESSAGES) + 10


@pytest.mark.parametrize("name", [f"m-{n}" for n in MESSAGES] + ["annotated", "both", "merged"])
def test_the_tip_of_messages_is_the_log_of_one_commit(tmp_path, name: str) -> None:
    """`Refs.messages` of one commit (the batch) is its first entry of a longer walk (log)."""
    repo, _names = _odd_repo(tmp_path)
    git = find_repo(str(repo.path))
    one = git.messages(name, 1)
    assert one == find_repo(str(repo.path)).messages(name, 2)[:1]
    assert one == [_log_tip(repo, name)]


def test_an_encoding_header_is_left_to_git_log(tmp_path) -> None:
    """A message git re-encodes (an ``encoding`` header): no tip from the batch, and
    `messages` gives what log gives."""
    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    tree = repo.tree()
    raw = f"tree {tree}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n"
    raw += "encoding ISO-8859-1\n\ncaf\xe9\n"
    oid = _git(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=raw.encode("latin-1"))
    repo.git("update-ref", "refs/heads/latin", oid.decode().strip())
    git = find_repo(str(repo.path))
    assert git._tip_message("latin") is None
    assert git.messages("latin", 1) == [_log_tip(repo, "latin")]
    assert git.messages("latin", 1)[0][1] == "caf\u00e9\n"


def test_a_name_git_cannot_read_is_an_unknown_revision(tmp_path, capfd) -> None:
    """What git says of a name the batch cannot read is not shown (``rev-parse --quiet`` showed
    nothing); a name git dies of (``@{upstream}`` of a branch without one) is asked of
    ``rev-parse``, as before the batch: an unknown revision, not a failed ``cat-file``."""
    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    repo.ps("init")
    capfd.readouterr()
    for name in ("HEAD^{tree}", "@{upstream}", "nope", "HEAD:a.py"):
        result = repo.ps("check", "--onto", name, code=2)
        assert f"unknown revision '{name}'" in result.stderr, result.stderr
        assert capfd.readouterr().err == "", name
    assert repo.ps("check", "--onto", "HEAD").exit_code == 0


def _asked(repo: Repo, names: list[str]) -> tuple[list[object], set[str], set[str]]:
    """Every kind of question a command asks of cat-file, in one order; the name that kills
    cat-file (`rev_parse`'s ``@{upstream}``); a walk of contents interrupted at each answer by
    questions of headers (asked while the walk is in the middle of its answers); and the
    batch processes the command had before that walk and at its end."""
    git = find_repo(str(repo.path))
    try:
        said: list[object] = [git.read_objects(names), git.object_sizes(names)]
        said += [git.has_objects(names), [git.object_type(n) for n in names]]
        said += [git.resolve_blobs(names), [git.rev_parse(n) for n in names]]
        said.append(git.rev_parse("@{upstream}"))  # no upstream: cat-file dies of it
        said.append(git.read_objects(names))  # the next question starts another
        before = set(git._procs)
        walked = []
        for name, found in zip(names * 130, git.each_object(names * 130), strict=True):
            walked.append((found, git.has_objects([name]), git.object_type(name)))
        said += [walked, list(git.each_object(names))[:3]]
        return said, before, set(git._procs)
    finally:
        git.close()


def test_one_batch_command_answers_as_the_two_batch_processes(repo: Repo, monkeypatch) -> None:
    """One ``cat-file --batch-command`` (``info``, ``contents``) answers every question as the
    ``--batch-check`` and ``--batch`` processes it replaces (``PATCHSTACK_NO_BATCH_COMMAND=1``)
    do: headers, contents, missing and abbreviated names, ``REV:PATH`` with spaces, trees,
    refs; across chunks of 256, and with a question asked while another caller is in the
    middle of its answers (then of a process of its own, as before)."""
    repo.write("dir with space/f x.py", "spaced\n")
    repo.commit_all("spaced")
    blob = repo.git("rev-parse", "HEAD:a.py").strip()
    names = [
        "HEAD",
        "HEAD^{tree}",
        "HEAD:a.py",
        "HEAD:dir with space/f x.py",
        "HEAD:dir with space",
        blob[:7],
        "0" * 40,
        "HEAD:nope.py",
        "refs/heads/main",
        "no such ref",
    ]
    shared, before, after = _asked(repo, names)
    assert before == {"--batch-command"}
    assert after == {"--batch-command", "--batch-check"}  # (the walk's questions' own)
    monkeypatch.setenv("PATCHSTACK_NO_BATCH_COMMAND", "1")
    plain, before, after = _asked(repo, names)
    assert after == {"--batch", "--batch-check"}
    assert shared == plain
    assert plain[0][3] == ("blob", b"spaced\n") and plain[0][6] is None


def test_the_branch_head_is_on_is_told_by_the_process_that_found_the_repository(
    tmp_path: Path, monkeypatch
) -> None:
    """`head_ref` from `find_repo`'s one ``rev-parse`` is what ``git symbolic-ref -q HEAD``
    says, and what `head_ref` says asked alone (``PATCHSTACK_NO_HEAD_AT_START=1``): on a
    branch, a branch a tag shares its name with, a file named HEAD in the work tree,
    detached, HEAD on a remote-tracking ref, on an unborn branch (the one rev-parse fails:
    the places are asked alone), and in a linked worktree on another branch."""
    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    repo.write("HEAD", "a file named HEAD\n")
    repo.commit_all("a file named HEAD")
    repo.git("tag", "main")
    repo.git("worktree", "add", "-q", "-b", "other", str(tmp_path / "linked"))

    def told(where: Path) -> tuple[str | None, str | None, bool]:
        git = find_repo(str(where))
        try:
            early = "head_ref" in git._memo
            return git.head_ref(), early and git.head_ref(), early
        finally:
            git.close()

    def states() -> list[tuple[str | None, ...]]:
        said = []
        for state in ("main", "detached", "remote", "unborn", "main"):
            if state == "detached":
                repo.git("checkout", "-q", "--detach")
            elif state == "remote":
                repo.git("update-ref", "refs/remotes/origin/x", "HEAD")
                repo.git("symbolic-ref", "HEAD", "refs/remotes/origin/x")
            elif state == "unborn":
                repo.git("symbolic-ref", "HEAD", "refs/heads/unborn")
            else:
                repo.git("symbolic-ref", "HEAD", "refs/heads/main")
            proc = subprocess.run(
                ["git", "symbolic-ref", "-q", "HEAD"], cwd=repo.path, capture_output=True
            )
            want = proc.stdout.decode().strip() or None
            said.append((state, want, *told(repo.path)))
        linked = subprocess.run(
            ["git", "symbolic-ref", "-q", "HEAD"], cwd=tmp_path / "linked", capture_output=True
        )
        said.append(("linked", linked.stdout.decode().strip(), *told(tmp_path / "linked")))
        return said

    shared = states()
    for state, want, found, early_found, early in shared:
        assert found == want, state
        assert early == (state != "unborn"), state  # told at the start but where it fails
        assert not early or early_found == want, state
    monkeypatch.setenv("PATCHSTACK_NO_HEAD_AT_START", "1")
    plain = states()
    assert [s[:3] for s in plain] == [s[:3] for s in shared]
    assert not any(s[4] for s in plain)
    assert [s[2] for s in shared] == [
        "refs/heads/main",
        None,
        "refs/remotes/origin/x",
        "refs/heads/unborn",
        "refs/heads/main",
        "refs/heads/other",
    ]
