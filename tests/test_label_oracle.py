"""The label oracle's own definitions (`label_oracle`, `label_days`), each checked on a case
where the old definition judged wrong: a pure deletion's evidence, a no-op that leans on a
missing patch, and the reference of a deferred patch brought back past a patch marked
upstream."""

from __future__ import annotations

from pathlib import Path

from .label_days import Day, bring_back, stack_of
from .label_oracle import Oracle
from .test_verdicts import debug_line_drift


def test_a_deletion_of_a_line_no_upstream_version_had_is_not_upstreams_doing(
    tmp_path: Path,
) -> None:
    """p3 only deletes p1's DEBUG line: merged onto 'upstream takes p2' it changes nothing,
    onto its parent it conflicts (p2's context is missing), and the commit adds no line p3
    adds (it adds none): the old definition held. No upstream version had DEBUG: that commit
    did not bring p3's change."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base, up = o.git.run("merge-base", "main", "up").strip(), o.git.rev("up")
    commits = dict(stack_of(repo, base))
    o.upstream_evidence("check", "p3.patch", commits["p3.patch"], up, base, up)
    assert len(o.findings) == 1 and "DEBUG" in o.findings[0], o.findings
    assert o.judged == {"evidence": 1}


def test_a_follow_up_conflicting_without_the_patch_it_leans_on_is_a_no_op(
    tmp_path: Path,
) -> None:
    """Without p1 and p2, p3 conflicts on the old base (it deletes a line p1 made, next to
    p2's change): it leans on them, and no upstream commit brought its change, so git calls
    it a no-op (the old reference only took a patch empty there)."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base = o.git.run("merge-base", "main", "up").strip()
    day = Day(o, "day one", base, o.git.rev("up"), "up")
    assert "p3.patch" in day.ref.empty and "p3.patch" in day.self_noop


def test_a_patch_marked_upstream_is_picked_again_in_the_bring_back_reference(
    tmp_path: Path,
) -> None:
    """A series that marks p3 upstream (as an earlier patchstack wrote it, 'in' the commit
    that took p2): ``push p1`` places p3's change again after p1, which removes p1's DEBUG,
    as git rebase of the branch as written does (the old reference left p3 out)."""
    repo = debug_line_drift(tmp_path)
    o = Oracle(repo)
    base, up = o.git.run("merge-base", "main", "up").strip(), o.git.rev("up")
    original = dict(stack_of(repo, base))
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    lines = repo.read("patches/series").splitlines(keepends=True)
    deferral = next(ln for ln in lines if ln.startswith("# deferred: p3.patch "))
    marked = f"# upstream: p3.patch {deferral.split()[3]} in {up}\n"
    repo.write("patches/series", "".join(marked if ln == deferral else ln for ln in lines))
    assert "(the base holds it" in repo.ps("status").stdout
    bring_back(o, "p1.patch", up, original)
    assert o.judged == {"push": 1} and o.brought == {"p1.patch"}
    assert not o.findings, o.findings
    assert "DEBUG" not in repo.read("b.txt")
