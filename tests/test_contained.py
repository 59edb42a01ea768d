"""The built-in rule of a stop (issue 36, item 1): a conflict hunk whose one side already holds
the other side's change is shown resolved by the bigger side, named, for the person to confirm;
every other hunk keeps its markers. Generated cases with a known answer, and the cases where the
rule must refuse."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from patchstack.commands.refresh.contained import UPSTREAM_HOLDS, resolve
from patchstack.commands.refresh.hunks import Hunk

from .conftest import make_repo, numbered


def hunk(ours: str, base: str, theirs: str) -> Hunk:
    return Hunk(ours.encode(), base.encode(), theirs.encode(), 1)


def test_upstream_took_the_patch_then_extended_it() -> None:
    base = "x = f(a)\n"
    mine = "x = f(a, b)\nlog(x)\n"
    theirs_upstream = "x = f(a, b)\ncheck(x)\nlog(x)\n"
    assert resolve(hunk(theirs_upstream, base, mine)) == (theirs_upstream.encode(), UPSTREAM_HOLDS)


def test_the_patch_side_holding_upstreams_change_is_left_to_the_person() -> None:
    """The other direction: refuted once by the engineers' own merges (the bigger side kept
    a line using what the other side had removed elsewhere): never proposed."""
    base = "a\n"
    up = "a\nb\n"
    mine = "a\nb\nc\n"
    assert resolve(hunk(up, base, mine)) is None


def test_both_added_at_one_place_one_a_part_of_the_other() -> None:
    assert resolve(hunk("import a\nimport b\n", "", "import a\n")) == (
        b"import a\nimport b\n",
        UPSTREAM_HOLDS,
    )


@pytest.mark.parametrize(
    "ours, base, theirs, why",
    [
        ("x = 2\n", "x = 1\n", "x = 3\n", "both edited the same line otherwise"),
        ("b\na\n", "", "a\nb\n", "the same lines in another order"),
        ("", "a\nb\n", "a\nB\n", "a deletion against an edit is a choice"),
        ("a\n\n", "a\nb\n", "\n", "the smaller side holds only blank lines"),
        # the patch took out 'old'; upstream's bigger side has it back: not a union
        ("new\nold\n", "old\n", "new\n", "it would bring back a line the patch removed"),
        ("a\nold\nold\n", "old\nold\n", "a\nold\n", "...one copy of two the patch removed"),
    ],
)
def test_the_rule_refuses(ours: str, base: str, theirs: str, why: str) -> None:
    assert resolve(hunk(ours, base, theirs)) is None, why


def _edit(rng: random.Random, lines: list[str], fresh: list[str]) -> list[str]:
    out = []
    for line in lines:
        roll = rng.random()
        if roll < 0.2:
            continue  # removed
        if roll < 0.4:
            out.append(fresh.pop())  # replaced
            continue
        out.append(line)
        if rng.random() < 0.2:
            out.append(fresh.pop())  # inserted after it
    return out


def test_generated_hunks_the_rule_settles_as_the_union_of_both_changes() -> None:
    """small = the patch's side, an edit of the base; big = upstream's side, small with fresh
    lines inserted: the rule gives big; never the patch's side when it is the bigger one; big
    with a line small removed put back is refused (200 seeds, in one test: each is a few
    microseconds)."""
    for seed in range(200):
        _check_generated(seed)


def _check_generated(seed: int) -> None:
    rng = random.Random(seed)
    fresh = [f"new {seed} {n}\n" for n in range(200)]
    base = [f"base {n}\n" for n in range(rng.randint(1, 8))]
    small = _edit(rng, base, fresh) or [fresh.pop()]
    big = list(small)
    for _ in range(rng.randint(1, 4)):
        big.insert(rng.randint(0, len(big)), fresh.pop())
    b, s, g = ("".join(x).encode() for x in (base, small, big))
    assert resolve(Hunk(g, b, s, 1)) == (g, UPSTREAM_HOLDS), seed
    assert resolve(Hunk(s, b, g, 1)) is None, seed
    gone = list((Counter(base) - Counter(small)).elements())
    if gone:
        back = list(big)
        back.insert(rng.randint(0, len(back)), rng.choice(gone))
        bk = "".join(back).encode()
        assert resolve(Hunk(bk, b, s, 1)) is None, seed


def _fork(tmp_path):  # type: ignore[no-untyped-def]
    """p1 adds 'mine 1' after line 10 of a.py and changes line 30; upstream (``up``) took
    the first and added 'theirs 2' after it, and changed line 30 otherwise."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    text = repo.read("a.py")
    repo.write("a.py", text.replace("a 10\n", "a 10\nmine 1\n").replace("a 30\n", "a 30 mine\n"))
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    up = text.replace("a 10\n", "a 10\nmine 1\ntheirs 2\n").replace("a 30\n", "a 30 up\n")
    repo.write("a.py", up)
    repo.commit_all("upstream takes the patch's line, adds one, reworks line 30")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_stop_shows_the_hunk_the_rule_resolves_and_names_the_rule(tmp_path) -> None:
    repo = _fork(tmp_path)
    result = repo.ps("refresh", "--onto", "up", code=1)
    text = repo.read("a.py")
    assert text.count("<<<<<<<") == 1 and "a 30 up" in text and "a 30 mine" in text
    assert "mine 1\ntheirs 2\na 11\n" in text  # the proposal, in place
    said = (
        "proposed by a built-in rule, as upstream's side already holds the patch's change:"
        " the conflict hunk of a.py (a.py:11), shown resolved; check before --continue"
    )
    assert said in " ".join(result.stderr.split()), result.stderr
    repo.write(
        "a.py",
        text.split("<<<<<<<")[0] + "a 30 both\n" + text.split(">>>>>>> ")[1].split("\n", 1)[1],
    )
    repo.ps("refresh", "--continue")
    assert "mine 1\ntheirs 2\na 11\n" in repo.read("a.py") and "a 30 both" in repo.read("a.py")


def test_a_hunk_the_rule_refuses_keeps_its_markers(tmp_path) -> None:
    """Upstream put the patch's line back otherwise (edited): nothing is proposed."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    text = repo.read("a.py")
    repo.write("a.py", text.replace("a 10\n", "a 10\nmine 1\n"))
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", text.replace("a 10\n", "a 10\nmine 1 edited\n"))
    repo.commit_all("upstream adds its own line")
    repo.git("checkout", "-q", "main")
    result = repo.ps("refresh", "--onto", "up", code=1)
    assert repo.read("a.py").count("<<<<<<<") == 1
    assert "built-in rule" not in result.stderr


def test_the_review_names_the_rule_of_a_hunk_recorded_as_it_proposed(tmp_path) -> None:
    """The person confirmed the proposal at --continue: its hunk record, in the review, says
    it is what the built-in rule proposes (not 'nothing of the patch kept'): a claim on the
    hunk's content, true whoever wrote it."""
    repo = _fork(tmp_path)
    old = tmp_path / "old"
    old.mkdir()
    repo.ps("refresh", "--onto", "up", code=1)
    text = repo.read("a.py")
    head, rest = text.split("<<<<<<<", 1)
    repo.write("a.py", head + "a 30 both\n" + rest.split(">>>>>>> ", 1)[1].split("\n", 1)[1])
    repo.ps("refresh", "--continue")
    doc = json.loads(repo.ps("review", str(old), str(repo.path / "patches"), "--json").stdout)
    notes = {r["note"] for r in doc["resolutions"] if r["path"] == "a.py"}
    assert len(notes) == 2, notes
    ruled = [n for n in notes if "built-in rule" in n]
    assert ruled == [
        "one conflict hunk of a.py (line 11), reused wherever the same hunk conflicts again,"
        " whatever upstream changed elsewhere in the file; what the built-in rule proposes"
        " (upstream's side already holds the patch's change), so the patch's change is kept"
    ]
