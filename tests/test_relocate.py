"""Following the code (issue 36, item 3): a patch whose file upstream deleted has each hunk
carried to where its lines went, as a proposal, only where its old lines are found exactly
once. A generated corpus of moves and splits with a known right answer: the upstream layout
built again from the *patched* functions, for the hunks that can be followed; a hunk carried
anywhere else, or one carried that should not be, fails the test."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from patchstack.model.relocation import locate

from .conftest import Repo, built_once, make_repo, slow_after

N = 8  # functions f1..f8, then fend, in the old a.c


def func(k: int, edits: frozenset[tuple[int, str]] = frozenset(), moved: str = "") -> str:
    """Function ``k`` as the old a.c has it, with the patch's edits to it made; ``moved``:
    upstream's own change to its first statement (the code moved *and* changed)."""
    if k == 0:  # fend: the last function of a.c, no blank line after it
        body = "    return 43;" if (0, "last") in edits else "    return 42;"
        return f"int fend(void)\n{{\n{body}\n}}\n"
    head = f"static int f{k}(int x)" if (k, "first") in edits else f"int f{k}(int x)"
    stmt = f"    int y = x + {k}{moved};"
    if (k, "mid") in edits:
        stmt = f"    int y = x + {k}{moved} * 2;"
    brace = "    /* checked */\n" if (k, "brace") in edits else ""
    return (
        f"{head}\n{{\n{stmt}\n    if (y > 0) {{\n        return y;\n    }}\n{brace}"
        "    return 0;\n}\n\n"
    )


def filler(tag: str, n: int) -> str:
    return "".join(f"int {tag}_{i}(void) {{ return {i * 7 + len(tag)}; }}\n" for i in range(n))


def build(layout: dict[str, list[object]], edits: frozenset[tuple[int, str]]) -> dict[str, str]:
    """The files of a layout: each a list of function numbers (0: fend), strings, and
    ("changed", k) for f{k} as upstream changed it."""
    files = {}
    for path, parts in layout.items():
        text = ""
        for part in parts:
            if isinstance(part, int):
                text += func(part, edits)
            elif isinstance(part, tuple):
                text += func(part[1], edits, moved=" + 0")
            else:
                text += str(part)
        files[path] = text
    return files


OLD = {"a.c": [*range(1, N + 1), 0], "b.c": ["int b_main(void) { return 0; }\n"]}


@dataclass
class Case:
    name: str
    new: dict[str, list[object]]  # upstream's layout (a.c deleted)
    edits: frozenset[tuple[int, str]]  # the patch: (function, kind)
    followed: frozenset[tuple[int, str]]  # the edits whose hunk can be followed
    dests: set[str] = field(default_factory=set)  # where the followed hunks go


CASES = [
    Case(
        "moved",  # moved with much new code: git's rename detection does not pair it
        {"lib/impl.c": [filler("impl", 120), *range(1, N + 1), 0], **{"b.c": OLD["b.c"]}},
        frozenset({(2, "mid"), (5, "mid")}),
        frozenset({(2, "mid"), (5, "mid")}),
        {"lib/impl.c"},
    ),
    Case(
        "split",  # one file into three, each with a header of its own
        {
            "x.c": ["#include <x.h>\n\n", 1, 2, 3],
            "y.c": ["#include <y.h>\n\n", 4, 5, 6],
            "z.c": ["#include <z.h>\n\n", 7, 8, 0, filler("z", 3)],
            "b.c": OLD["b.c"],
        },
        frozenset({(1, "first"), (5, "mid"), (0, "last")}),  # both edges and the middle
        frozenset({(1, "first"), (5, "mid"), (0, "last")}),
        {"x.c", "y.c", "z.c"},
    ),
    Case(
        "function-moved",  # f3 moved to b.c (which grew), the rest deleted for good
        {"b.c": [*OLD["b.c"], "\n", 3, filler("b", 2)]},
        frozenset({(3, "mid"), (6, "mid")}),
        frozenset({(3, "mid")}),
        {"b.c"},
    ),
    Case(
        "deleted",  # the code is gone for good: nothing to follow
        {"b.c": OLD["b.c"]},
        frozenset({(2, "mid"), (7, "mid")}),
        frozenset(),
    ),
    Case(
        "braces",  # a hunk whose lines are braces and repeated statements: ambiguous
        {"lib/impl.c": [filler("impl", 120), *range(1, N + 1), 0], "b.c": OLD["b.c"]},
        frozenset({(4, "brace"), (6, "mid")}),
        frozenset({(6, "mid")}),
        {"lib/impl.c"},
    ),
    Case(
        "copied-twice",  # f2 now in two files: found twice, not followed
        {
            "x.c": [filler("x", 30), 2, 3],
            "y.c": [filler("y", 30), 2, 4],
            "b.c": OLD["b.c"],
        },
        frozenset({(2, "mid"), (4, "mid")}),
        frozenset({(4, "mid")}),
        {"y.c"},
    ),
    Case(
        "moved-and-changed",  # upstream changed f4's lines as it moved them
        {
            "lib/impl.c": [filler("impl", 120), 1, 2, 3, ("changed", 4), 5, 6, 7, 8, 0],
            "b.c": OLD["b.c"],
        },
        frozenset({(4, "mid"), (7, "mid")}),
        frozenset({(7, "mid")}),
        {"lib/impl.c"},
    ),
]


@built_once
def scenario(tmp_path: Path, case: Case) -> Repo:
    """A fork with the patch on the old a.c, and upstream's branch ``upstream`` that moved
    the code (``case.new``) in one commit."""
    repo = make_repo(tmp_path / "fork", build(OLD, frozenset()))
    repo.git("checkout", "-q", "-b", "upstream")
    repo.git("rm", "-q", "a.c")
    for path, text in build(case.new, frozenset()).items():
        repo.write(path, text)
    repo.commit_all("Move the code around")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.write("a.c", build(OLD, case.edits)["a.c"])
    repo.ps("new", "p1", "--tag", "essential", "-m", "Tune the functions")
    return repo


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_refresh_stops_with_the_right_proposal(tmp_path: Path, case: Case) -> None:
    repo = scenario(tmp_path, case)
    result = repo.ps("refresh", "--onto", "upstream", "--json", code=1)
    data = json.loads(result.stdout)
    stopped = data["stopped"]
    assert stopped["patch"] == "p1.patch"
    [relocation] = stopped["relocations"]
    assert relocation["path"] == "a.c"
    assert relocation["commit"] == repo.git("rev-parse", "upstream").strip()
    carried = [h for h in relocation["hunks"] if h["dest"]]
    assert len(carried) == len(case.followed)
    assert {h["dest"] for h in carried} == case.dests
    assert len(relocation["hunks"]) == len(case.edits)
    for h in relocation["hunks"]:
        assert bool(h["dest"]) != bool(h["reason"]), h
    verdict = {p["name"]: p["verdict"] for p in data["patches"]}["p1.patch"]
    assert verdict == ("relocated" if case.followed else "conflict")
    # the right answer: upstream's layout made of the patched functions, where followed
    want = build(case.new, case.followed)
    for path, text in want.items():
        assert repo.read(path) == text, path
    whole = case.followed == case.edits
    assert (repo.path / "a.c").exists() == (not whole)
    if not whole:  # the patch's version stays, for the user to finish
        assert repo.read("a.c") == build(OLD, case.edits)["a.c"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_check_reports_the_proposal(tmp_path: Path, case: Case) -> None:
    repo = scenario(tmp_path, case)
    before = repo.state()
    out = repo.ps("check", "--onto", "upstream", "--patch", "p1", code=1).stdout
    assert repo.state() == before  # check writes nothing: a proposal is only reported
    n, total = len(case.followed), len(case.edits)
    short = repo.git("rev-parse", "--short=12", "upstream").strip()
    if n:
        dests = ", ".join(sorted(case.dests))
        assert f"relocated a.c -> {dests} by {short} ({n} of {total} hunks)" in out
        assert "1 relocated" in out
    else:
        assert f"a.c: deleted upstream by {short}; no hunk relocated" in out
        assert "relocated a.c" not in out
    # Short: one line per reason a hunk was not carried, with its count; --verbose: each hunk.
    said = re.findall(r"    (\d+) hunk\(s\) not relocated, each for this reason: ", out)
    assert sum(map(int, said)) == total - n
    full = repo.ps("check", "--onto", "upstream", "--patch", "p1", "--verbose", code=1).stdout
    assert full.count("not relocated:") == total - n


def test_continue_takes_the_proposal(tmp_path: Path) -> None:
    case = CASES[1]  # split: every hunk followed
    repo = scenario(tmp_path, case)
    out = repo.ps("refresh", "--onto", "upstream", code=1).stderr
    assert "a proposal" in out and "refresh --continue' makes them the patch" in out
    repo.ps("refresh", "--continue")
    patch = repo.read("patches/p1.patch")
    assert "a/a.c" not in patch
    assert {"a/x.c", "a/y.c", "a/z.c"} <= {w for w in patch.split() if w.startswith("a/")}
    want = build(case.new, case.edits)
    for path, text in want.items():
        assert repo.git("show", f"HEAD:{path}") == text
    assert repo.git("ls-tree", "HEAD", "a.c") == ""
    # the rewritten series applies on upstream as it is now
    assert "all patches apply" in repo.ps("check", "--onto", "upstream").stdout


def test_partial_proposal_continue_after_the_user_deletes_the_rest(tmp_path: Path) -> None:
    case = CASES[2]  # f3 followed into b.c, f6 deleted for good
    repo = scenario(tmp_path, case)
    repo.ps("refresh", "--onto", "upstream", code=1)
    (repo.path / "a.c").unlink()  # the user drops what could not be followed
    repo.ps("refresh", "--continue")
    assert repo.git("show", "HEAD:b.c") == build(case.new, case.followed)["b.c"]
    assert repo.git("ls-tree", "HEAD", "a.c") == ""


def test_abort_after_a_proposal_gives_everything_back(tmp_path: Path) -> None:
    repo = scenario(tmp_path, CASES[0])
    before = repo.state()
    repo.ps("refresh", "--onto", "upstream", code=1)
    repo.ps("refresh", "--abort")
    assert repo.state() == before


def test_the_proposal_merges_with_the_patchs_own_change_to_the_destination(
    tmp_path: Path,
) -> None:
    """The patch edits b.c too; upstream moved f3 into b.c: both changes in b.c."""
    b_old = "int b_main(void) { return 0; }\n" + filler("pre", 5)
    old = {**build(OLD, frozenset()), "b.c": b_old}
    repo = make_repo(tmp_path / "fork", old)
    repo.git("checkout", "-q", "-b", "upstream")
    repo.git("rm", "-q", "a.c")
    repo.write("b.c", b_old + "\n" + func(3))
    repo.commit_all("Move f3 to b.c")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.write("a.c", build(OLD, frozenset({(3, "mid")}))["a.c"])
    repo.write("b.c", b_old.replace("return 0;", "return 1;"))
    repo.ps("new", "p1", "--tag", "essential", "-m", "Both files")
    repo.ps("refresh", "--onto", "upstream", code=1)
    want = b_old.replace("return 0;", "return 1;") + "\n" + func(3, frozenset({(3, "mid")}))
    assert repo.read("b.c") == want
    assert not (repo.path / "a.c").exists()


@pytest.mark.parametrize(
    ("block", "files", "found"),
    [
        (["int f(void)", "{"], {"x.c": ["int f(void)", "{", "}"]}, ("x.c", 0)),
        (["}", ""], {"x.c": ["}", "", "z", "}", ""]}, "no letter or digit"),
        (["{", "}"], {"x.c": ["a", "{", "}"]}, "no letter or digit"),
        (["a", "b"], {"x.c": ["a", "b"], "y.c": ["c", "a", "b"]}, "occur 2 times"),
        (["a", "b"], {"x.c": ["a", "b", "a", "b"]}, "occur 2 times"),
        (["a", "b"], {"x.c": ["a", " b"]}, "in no file"),  # indentation counts
        (["a", "b"], {"x.c": ["a"]}, "in no file"),
    ],
)
def test_locate_takes_only_one_exact_place(block, files, found) -> None:
    got = locate(block, files)
    if isinstance(found, tuple):
        assert got == found
    else:
        assert isinstance(got, str) and found in got


def random_case(seed: int) -> Case:
    """Upstream deals a.c's functions out among one to three new files (some kept in a.c's
    successor twice, some changed as they moved, some dropped for good); the patch edits a
    few functions' first statements. An edit is followed exactly when its function lands
    once, unchanged."""
    import random

    rnd = random.Random(seed)
    names = [f"lib/part{i}.c" for i in range(rnd.randint(1, 3))]
    layout: dict[str, list[object]] = {n: [f"/* {n} */\n\n"] for n in names}
    layout["b.c"] = list(OLD["b.c"])
    fate: dict[int, str] = {}
    for k in range(1, N + 1):
        fate[k] = rnd.choice(["moved", "moved", "moved", "twice", "changed", "dropped"])
        if fate[k] == "dropped":
            continue
        places = [rnd.choice(names)]
        if fate[k] == "twice":
            places = rnd.sample(names, 2) if len(names) > 1 else [names[0], names[0]]
        for place in places:
            layout[place].append(("changed", k) if fate[k] == "changed" else k)
    for n in names:  # much new code, so that no part pairs with a.c as a rename
        layout[n].append(filler(n.replace("/", "_").removesuffix(".c"), 70))
    edited = sorted(rnd.sample(range(1, N + 1), 3))
    edits = frozenset((k, "mid") for k in edited)
    followed = frozenset((k, "mid") for k in edited if fate[k] == "moved")
    dests = {n for n in names for k, _m in followed if k in layout[n]}
    return Case(f"seed{seed}", layout, edits, followed, dests)


@pytest.mark.parametrize("seed", slow_after(range(12), 4))
def test_random_corpus_never_relocates_wrongly(tmp_path: Path, seed: int) -> None:
    case = random_case(seed)
    repo = scenario(tmp_path, case)
    result = repo.ps("refresh", "--onto", "upstream", "--json", code=1)
    [relocation] = json.loads(result.stdout)["stopped"]["relocations"]
    carried = {h["dest"] for h in relocation["hunks"] if h["dest"]}
    assert carried == case.dests
    assert sum(1 for h in relocation["hunks"] if h["dest"]) == len(case.followed)
    for path, text in build(case.new, case.followed).items():
        assert repo.read(path) == text, (seed, path)
    assert (repo.path / "a.c").exists() == (case.followed != case.edits)


def test_a_taken_proposal_is_recorded_and_reused(tmp_path: Path) -> None:
    """--continue records the relocation as the conflict's resolution (every file of it):
    the same refresh again, after two undos, takes it without a stop, to the same tree."""
    repo = scenario(tmp_path, CASES[1])
    repo.ps("refresh", "--onto", "upstream", code=1)
    repo.ps("refresh", "--continue")
    tree = repo.tree()
    repo.ps("undo")
    repo.ps("undo")
    out = repo.ps("refresh", "--onto", "upstream").stdout
    assert "recorded resolution" in out
    assert repo.tree() == tree


# Passes with the patch followed into the split files, fails without it (and on a.c's absence).
SPLIT_PROBE = "grep -q 'static int f1' x.c && grep -q 'return 43' z.c"


def test_with_probes_a_whole_relocation_the_probe_proves_is_taken(tmp_path: Path) -> None:
    case = CASES[1]  # split: every hunk followed
    repo = scenario(tmp_path, case)
    repo.ps("edit", "p1", "--probe", SPLIT_PROBE)
    before = repo.state()
    # Without --probes nothing of the series folder runs: the proposal stops the refresh.
    repo.ps("refresh", "--onto", "upstream", code=1)
    repo.ps("refresh", "--abort")
    assert repo.state() == before
    out = repo.ps("refresh", "--onto", "upstream", "--probes").stdout
    short = repo.git("rev-parse", "--short=12", "upstream").strip()
    assert (
        f"p1.patch  (resolved by patchstack relocation: machine-made, relocated a.c -> x.c, y.c,"
        f" z.c by {short} (3 of 3 hunks); its probe passes on it and fails without the patch)"
    ) in out, out
    for path, text in build(case.new, case.edits).items():
        assert repo.git("show", f"HEAD:{path}") == text
    assert repo.git("ls-tree", "HEAD", "a.c") == "" and "a/a.c" not in repo.read("patches/p1.patch")
    records = list((repo.path / "patches" / "resolutions").iterdir())
    assert records and all("by: patchstack relocation\n" in r.read_text() for r in records)
    repo.ps("undo")
    assert repo.state() == before


def test_with_probes_a_relocation_the_probe_refutes_stops_as_before(tmp_path: Path) -> None:
    repo = scenario(tmp_path, CASES[1])
    repo.ps("edit", "p1", "--probe", "grep -q 'static int f1' a.c")  # wants the file kept
    r = repo.ps("refresh", "--onto", "upstream", "--probes", "--json", code=1)
    data = json.loads(r.stdout)
    assert data["stopped"]["patch"] == "p1.patch"
    (p,) = data["proposals"]
    assert (p["command"], p["accepted"]) == ("patchstack relocation", False)
    assert p["why"].endswith("the patch's probe fails on the proposal (exit 2)"), p
    assert not (repo.path / "patches" / "resolutions").exists()


# Upstream kept a.c but moved part of its code out (a content conflict, not modify/delete).
SPLIT_KEPT = {"a.c": [1, 2, 3, 4], "b.c": OLD["b.c"]}
MOVED_OUT = [
    Case(
        "moved-out",  # f5..fend moved to lib/more.c; the patch edits f2 (stays) and f6 (moved)
        {**SPLIT_KEPT, "lib/more.c": [filler("more", 30), 5, 6, 7, 8, 0]},
        frozenset({(2, "mid"), (6, "mid")}),
        frozenset({(6, "mid")}),
        {"lib/more.c"},
    ),
    Case(
        "moved-out-and-changed",  # f6 moved *and* its statement changed: not followed
        {**SPLIT_KEPT, "lib/more.c": [filler("more", 30), 5, ("changed", 6), 7, 8, 0]},
        frozenset({(2, "mid"), (6, "mid")}),
        frozenset(),
    ),
    Case(
        "moved-out-twice",  # f6 now in two files: no one place to carry the hunk to
        {
            **SPLIT_KEPT,
            "lib/more.c": [filler("more", 30), 5, 6, 7, 8, 0],
            "lib/copy.c": [filler("copy", 3), "\n", 6],
        },
        frozenset({(2, "mid"), (6, "mid")}),
        frozenset(),
    ),
]


# Every case with the walk side by side; with it walked when asked, moved-out by default and
# the other two under -m slow.
DRAINED = [(c, d) for d in ("", "1") for c in MOVED_OUT]
DRAIN_IDS = {"": "walks-side-by-side", "1": "walked-when-asked"}


@pytest.mark.parametrize(
    ("case", "drain"),
    [
        *[pytest.param(c, d, id=f"{c.name}-{DRAIN_IDS[d]}") for c, d in DRAINED[:4]],
        *slow_after([pytest.param(c, d, id=f"{c.name}-{DRAIN_IDS[d]}") for c, d in DRAINED[4:]], 0),
    ],
)
def test_code_moved_out_of_a_file_upstream_kept(
    tmp_path: Path, case: Case, drain: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(the commit named is the one ``log -S`` finds, whether its walk begins beside the
    deletion walk or when asked: ``PATCHSTACK_NO_WALK_DRAIN=1``)"""
    monkeypatch.setenv("PATCHSTACK_NO_WALK_DRAIN", drain)
    repo = scenario(tmp_path, case)
    data = json.loads(repo.ps("refresh", "--onto", "upstream", "--json", code=1).stdout)
    stopped = data["stopped"]
    verdict = {p["name"]: p["verdict"] for p in data["patches"]}["p1.patch"]
    if not case.followed:  # git's own conflict stands, nothing proposed
        assert verdict == "conflict" and stopped["relocations"] == []
        assert "<<<<<<<" in repo.read("a.c")
        return
    [relocation] = stopped["relocations"]
    assert relocation["path"] == "a.c"
    assert relocation["commit"] == repo.git("rev-parse", "upstream").strip()
    assert [h["dest"] for h in relocation["hunks"]] == sorted(case.dests)
    assert verdict == "relocated"
    want = build(case.new, case.edits)  # every edit where upstream has its function now
    for path, text in want.items():
        assert repo.read(path) == text, path
    repo.ps("refresh", "--continue")
    for path, text in want.items():
        assert repo.git("show", f"HEAD:{path}") == text, path
    assert "all patches apply" in repo.ps("check", "--onto", "upstream").stdout


def test_a_verdicts_note_names_three_relocations_and_counts_the_rest() -> None:
    """A stop that followed a dozen files says three on the verdict's line and counts the
    rest (the report and --json name every one)."""
    from patchstack.model.relocation import Relocation, relocations_said

    many = [Relocation(f"f{i}.c", "1a2b" * 10, ()) for i in range(12)]
    said = relocations_said(many)
    assert said.count("deleted upstream") == 3
    assert said.endswith("; and 9 more file(s) (the report names each)")
    assert relocations_said(many[:4]).count("deleted upstream") == 4  # one more: named
    # no upstream commit deleted it (an older upstream never had it): not "deleted upstream"
    assert Relocation("f.c", "", ()).summary() == "f.c: not in the new base; no hunk relocated"


def test_a_hunks_line_names_no_path_its_files_summary_names() -> None:
    """Under ``relocated a.c -> b.c``, a hunk says its lines only ("hunk 2 (line 40) -> line
    12": kernel-timers' stop named both paths again on every hunk); the destination's path
    only when the file's hunks went to more than one file."""
    from patchstack.model.relocation import Moved, Relocation

    one = Relocation("a.c", "", (Moved(1, 3, "b.c", 7), Moved(2, 40, None, 0, "edited")))
    assert [one.hunk_said(m) for m in one.hunks] == [
        "hunk 1 (line 3) -> line 7",
        "hunk 2 (line 40) not relocated: edited",
    ]
    two = Relocation("a.c", "", (Moved(1, 3, "b.c", 7), Moved(2, 40, "c.c", 12)))
    assert [two.hunk_said(m) for m in two.hunks] == [
        "hunk 1 (line 3) -> b.c:7",
        "hunk 2 (line 40) -> c.c:12",
    ]


@pytest.mark.parametrize("drain", ["", "1"], ids=["named-later", "named-at-once"])
def test_a_stops_proposal_is_named_after_its_tree_is_known(
    tmp_path: Path, drain: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(issue 35) `Relocator.propose_later` gives the proposal's tree and paths with the
    ``log -S`` walk for the commit it names still unanswered (a stop publishes meanwhile);
    named, it is the proposal `propose` makes, and no walk is left. With
    ``PATCHSTACK_NO_WALK_DRAIN=1`` it is named before it is returned (the plain order)."""
    from patchstack.engine.relocate import Relocator
    from patchstack.git import find_repo

    monkeypatch.setenv("PATCHSTACK_NO_WALK_DRAIN", drain)
    repo = scenario(tmp_path, MOVED_OUT[0])
    base, up = (repo.git("rev-parse", r).strip() for r in ("HEAD", "upstream"))
    repo.ps("push", "--all")
    after, before = (repo.git("rev-parse", f"HEAD{s}^{{tree}}").strip() for s in ("", "^"))
    git = find_repo(str(repo.path))
    onto = git.tree_of(up)
    merged = git.merge_trees(before, onto, after, ("ours", "theirs"))
    later = Relocator(git, base, up, None).propose_later(before, after, onto, merged)
    assert later is not None
    walking = [p for p in git._background if any(a.startswith("-S") for a in p.args)]
    assert len(walking) == (0 if drain else 1)
    plain = Relocator(git, base, up, None).propose(before, after, onto, merged)
    assert plain is not None and (later.tree, later.paths) == (plain.tree, plain.paths)
    assert later.named() == plain and plain.relocations[0].commit == up
    assert git._background == []
    git.close()
