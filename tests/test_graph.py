"""`patchstack graph`: which patch leans on which, checked against what git's merge does."""

from __future__ import annotations

import json
import random

import pytest

from patchstack.model.patchfile import parse_patch
from patchstack.model.series import Entry
from patchstack.review.graph import build, subgraph

from .conftest import Repo, make_repo, numbered, replace_line, slow_after


def test_a_patch_that_rewrites_another_ones_lines_leans_on_it(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"app.py": numbered(40, "app"), "b.py": numbered(9, "b")})
    repo.ps("init")
    replace_line(repo, "app.py", "app 10\n", "app 10\nlog.debug('one')\nlog.debug('two')\n")
    repo.ps("new", "logging", "--tag", "diagnostic", "-m", "Log")
    replace_line(repo, "app.py", "app 30\n", "app 30 fixed\n")
    repo.ps("new", "fix-30", "--tag", "essential", "-m", "Fix 30")
    replace_line(repo, "app.py", "log.debug('two')\n", "log.debug('two', extra=True)\n")
    repo.ps("new", "quiet-two", "--tag", "essential", "-m", "Quieter")
    replace_line(repo, "b.py", "b 4\n", "bee\n")
    repo.ps("new", "fast-b", "--tag", "optimization", "-m", "Faster b")
    text = repo.ps("graph").stdout
    assert text == (
        "   1  logging.patch    [diagnostic]\n"
        "   2  fix-30.patch     [essential]\n"
        "   3  quiet-two.patch  [essential]\n"
        "      leans on logging.patch (app.py)\n"
        "   4  fast-b.patch     [optimization]\n"
    )
    # --only essential draws the diagnostic patch it leans on, as context.
    only = repo.ps("graph", "--only", "essential").stdout
    assert "   1· logging.patch" in only and "fast-b" not in only
    mermaid = repo.ps("graph", "--only", "essential", "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart TD\n")
    assert '  p3["quiet-two.patch"]:::essential\n' in mermaid and "  p1 --> p3\n" in mermaid
    assert "  style p1 stroke-dasharray:4 3,opacity:0.7\n" in mermaid
    dot = repo.ps("graph", "--format", "dot").stdout
    assert dot.startswith("digraph patchstack {") and '  p1 -> p3 [tooltip="app.py"];' in dot
    # Every quoted string closes on its line: the label's line break is DOT's \n escape.
    assert all(line.count('"') % 2 == 0 for line in dot.splitlines()), dot
    assert '  p1 [label="logging.patch\\ndiagnostic", ' in dot
    data = json.loads(repo.ps("graph", "--format", "json").stdout)
    assert data["version"] == 1 and data["edges"] == [
        {"from": "logging.patch", "to": "quiet-two.patch", "files": ["app.py"]}
    ]
    # ...which is what push --only essential runs into.
    repo.ps("pop", "--all")
    res = repo.ps("push", "--only", "essential", code=1)
    assert "conflict in patch quiet-two.patch" in res.stderr and "logging.patch" in res.stderr
    repo.ps("graph", "--only", "nonsense", code=2)


def _random_series(repo: Repo, rng: random.Random, count: int) -> list[str]:
    """Commit ``count`` random edits of two files (each commit one patch); returns the tags."""
    tags = ["essential"] * count
    tags[rng.randrange(count)] = "diagnostic"
    for k in range(count):
        path = rng.choice(["one.py", "two.py"])
        lines = repo.read(path).splitlines(keepends=True)
        at = rng.randrange(len(lines))
        span = rng.randint(1, 2)
        new = [f"patch {k} line {i}\n" for i in range(rng.randint(1, 2))]
        op = rng.choice(["replace", "insert", "delete"] if len(lines) > 4 else ["insert"])
        if op == "replace":
            lines[at : at + span] = new
        elif op == "insert":
            lines[at:at] = new
        else:
            del lines[at : at + span]
        repo.write(path, "".join(lines))
        repo.git("commit", "-q", "-a", "-m", f"Patch {k}\n\nPatchstack-Tag: {tags[k]}")
    return tags


# Seeds 0-3 by default (two conflict, two merge cleanly); 4-7 (the same mix) with -m slow.
@pytest.mark.parametrize("seeds", slow_after([range(4), range(4, 8)], 1), ids=["0-3", "4-7"])
def test_leaving_out_a_patch_conflicts_only_where_the_graph_says(tmp_path, seeds) -> None:
    """Random series with one diagnostic patch: 'push --only essential' carries every other
    patch by three-way merge. With no edge from the left-out patch it must succeed; when it
    conflicts, the conflicting patch leans on the left-out one. (An edge need not conflict:
    a patch that removes exactly the lines the left-out one added merges cleanly.)"""
    outcomes = []
    for seed in seeds:
        rng = random.Random(seed)
        files = {"one.py": numbered(10, "one"), "two.py": numbered(6, "two")}
        repo = make_repo(tmp_path / f"fork{seed}", files)
        base = repo.head()
        tags = _random_series(repo, rng, 6)
        repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
        repo.git("reset", "-q", "--keep", base)
        data = json.loads(repo.ps("graph", "--format", "json").stdout)
        series = json.loads(repo.ps("series", "--json").stdout)["patches"]
        left_out = series[tags.index("diagnostic")]["name"]
        leaning = {e["to"] for e in data["edges"] if e["from"] == left_out}
        res = repo.ps("push", "--only", "essential", code=None)
        assert res.exit_code in (0, 1), res.stderr
        if not leaning:
            assert res.exit_code == 0, (seed, res.stderr)
        if res.exit_code == 1:
            conflicting = res.stderr.split("conflict in patch ", 1)[1].split("\n", 1)[0]
            assert conflicting in leaning, (seed, leaning, res.stderr)
        outcomes.append(res.exit_code)
    assert 0 in outcomes and 1 in outcomes  # the seeds exercise both


def _patch(body: str) -> object:
    return parse_patch(body.encode(), "t.patch")


def test_rename_delete_and_adjacent_changes() -> None:
    def diff(path: str, hunk: str, extra: str = "") -> str:
        return f"diff --git a/{path} b/{path}\n{extra}--- a/{path}\n+++ b/{path}\n{hunk}"

    a = _patch(diff("f.py", "@@ -1,2 +1,3 @@\n x1\n+a\n x2\n"))  # inserts line 2
    b = _patch(diff("f.py", "@@ -3,2 +3,3 @@\n x2\n+b\n x3\n"))  # inserts after a's line+1
    c = _patch(diff("f.py", "@@ -1,2 +1,1 @@\n x1\n-a\n"))  # removes a's line
    d = _patch(  # renames f.py, then e edits the new name right where c removed a
        "diff --git a/f.py b/g.py\nsimilarity index 100%\nrename from f.py\nrename to g.py\n"
    )
    e = _patch(diff("g.py", "@@ -1,2 +1,3 @@\n x1\n+e\n x2\n"))
    entries = [Entry(n, "essential") for n in "abcde"]
    g = build(list(zip(entries, [a, b, c, d, e], strict=True)))  # type: ignore[arg-type]
    assert {(x.earlier, x.later) for x in g.edges} == {("a", "c"), ("c", "e")}
    assert g.leans_on("e") == ("c",)
    sub = subgraph(g, ["e"])
    assert [(n.name, n.context) for n in sub.nodes] == [("c", True), ("e", False)]
