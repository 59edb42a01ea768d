"""Every label patchstack prints is checked against its definition with git as the oracle
(`labels`): ``upstream`` and its commit, ``no-op``, knock-on and its root, a primary conflict's
upstream commits, ``superseded by``, ``deferred``, over two days of refreshes with deferred
patches brought back, and every refresh's tree against ``git rebase``'s.

The fixed seeds run with the suite; those marked `known` find bugs of issue 33 that are being
fixed (strict: when the fixes land, the seed passes and the mark must go; a wrong label of any
other kind fails it still). The soak run tries random seeds, the odd ones with the shortcuts
off (`differential.SWITCHES`): ``PATCHSTACK_LABEL_SOAK=200 python -m pytest -m soak -k labels
-n 0 -s``; it fails on a wrong label of a kind not in `OPEN_ITEMS` and prints the seeds that
found open items (``PATCHSTACK_LABEL_STRICT=1``: it fails on those too;
``PATCHSTACK_LABEL_START=5000``: its first seed, else a random one). A failure prints the
case and each wrong label; ``PATCHSTACK_LABEL_SEEDS=21,25`` runs those seeds.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess

import pytest

from . import label_oracle, labels
from .conftest import Repo, slow_after
from .label_days import stack_of
from .label_oracle import resolve_markers


class KnownBug(Exception):
    """Wrong labels, each an instance of a known bug being fixed (`label_oracle.tag`)."""


def known(*items: str) -> pytest.MarkDecorator:
    """The seed finds these known bugs today (`label_oracle.tag`: items of issue 33, or one the
    oracle found); strict: when their fixes land it passes, and the mark must go. A wrong label
    of any other kind still fails it."""
    reason = ", ".join(label_oracle.tag(i) for i in items)
    return pytest.mark.xfail(strict=True, raises=KnownBug, reason=reason)


FIXED = [
    5,  # upstream with its commit, knock-ons, culprits, deferred, a deferred patch brought back
    7,  # deferred patches brought back, culprits, the day after
    # the day after, p1 (marked upstream: up4 took it) conflicts again beside up7's edit: not
    # "superseded by up7", which does not make p1's line (up4 did, before the range; fixed)
    14,
    21,  # p2 deletes what deferred p1 made: no-op, deferred after p1 (item 2, fixed)
    25,  # p4's conflict is missing p3's lines: a knock-on (item 5 and 6, fixed)
    57,  # push p2: p3 after it reverted it (a shortcut; fixed)
    898,  # deferring p1 holds p2 and p3 with it (item 4, fixed): git rebase without all three
    80,  # the day after, p4 (marked upstream) conflicts again; the deferred-leak is gone here
    # the day after, up4 wraps p1's line: its two one-line inserts moved the hunk back two
    # lines too few, so up3's removal of a function below met it (item 6: a neighbour; fixed)
    489931,
    1004,  # up4 takes p4, up5 reverts it: together nothing, neither a culprit (item 6; fixed)
    # p1 marked upstream; the day after, up4 takes p3, which deletes p1's file: placed again,
    # p1 changes something, and is applied again, not left out (fixed)
    1021,
    # p5 needs p2, p3 and p4 (each short of the others): no one of them is its root, primary;
    # a root's own conflict is resolved as it has it when proving a knock-on (item 5; fixed)
    2057,
    # the day after, p2 (marked upstream) conflicts again beside up5's wrap and lacks deferred
    # p1's lines: check proved the knock-on with p2's patch file, not the marked change the
    # replay placed, and called it a knock-on of p1, which alone does not let it apply (item
    # 5; fixed)
    2019,
    # the oracle placed p1's hunk (``}``, up3's wrap) at the ``}`` nearest its line in the
    # merged file, another block's; it now aligns git's merged file with the new base (fixed)
    1053,
    # day one: p3 only deletes deferred p1's line, which up4 (taking p2) never had: a no-op
    # deferred after p1, not "upstream in up4"; push p1 brings it back (item 4, fixed)
    9090795,
    # day one: up3 took p2; placed without deferred p1, p2 adds its function again (git's
    # merge of the repeated tail lines does too); push p1: git's pick of p1 before that
    # refreshed p2 (it commutes with p1), not the one as written (the oracle's reference;
    # fixed)
    2075,
    # up2 took p1; p1 (deferred) resolved as it has it copies a_f0; p5, placed on day one
    # without p1 (its line came from up2), is picked as refreshed, not as written: its
    # insertion lands in git's copy (the oracle's reference; fixed)
    5075,
    # up1 took p2, up4 took p3, which edits p2's line: p3 is upstream in up4 (the line it
    # removes was upstream's), not a no-op of deferred p2 (fixed)
    5223,
    # up2 moved a_f3 from the file's end, where p3's hunk is (its upstream side empty): a
    # culprit; the oracle's span ended at a ``return x;`` of p2's function instead (fixed)
    1098,
    # up1 took p1, deleting a line two above p3's hunk: no culprit, a line stands between
    # (a deletion one line apart met a region of lines; item 6, fixed)
    1106,
    # p5's hunk holds up2's blank line and p1's line (p2, which deletes it, deferred): up2
    # is a culprit; the oracle placed the hunk's lines in the new base with p1's (fixed)
    7038,
    # up1 took p1's deletion of a_f1_v1, next to p4's hunk (a_f1_v0, which up3 edits): p4's
    # base lacks the line too, so the deletion is no line of the hunk; not a culprit (fixed)
    7981786,
    # p4 needs p3's line (it deletes it) and conflicts on its own beside up1's wrap: held for
    # p3, it still conflicts with p3 applied, so it is primary waiting for p3, not a knock-on
    # (item 5; fixed)
    2028,
    1076,  # p2 reverts p1 (held for it) and edits a line up1 wrapped: primary (item 5; fixed)
    1111,  # p2 reverts p1 (held for it) and edits lines up1, up3 edit: primary (item 5; fixed)
    # p3 held for p1 and primary; p4 lacks p1's line and is a knock-on of p3, proven with p3's
    # root p1 in place, as the oracle follows a held patch's root (item 5; fixed)
    2047,
    5031,  # up3's revert took out a ``}`` of p3's hunk's base, beside it: a culprit (oracle fixed)
    5170,  # p2's 2nd region is up3's ``}``, placed by git's merge with diff3 markers (oracle fixed)
    # p6, held for p3, reports its conflict with p3 applied (one hunk): the region is the one
    # with the hunk's sides, not the first of git's merge without p3 (oracle fixed)
    6531759,
    # found by the soak at the end of round eight: p5 deletes p1's line and p1 is deferred; p2
    # (marked upstream, conflicting again) taken as it has it too breaks p5 again, so trying
    # the nearest roots all at once first called p5 primary (item 5; fixed: each alone)
    8200023,
    # p1, taken upstream by up1, brought back after up3 moved a_f2 to the top of a.c: the stop
    # shows one hunk resolved by the built-in rule (upstream holds the patch's change), which
    # the oracle's reference did not apply to git's markers (the oracle's; fixed)
    8200027,
    # day after: p3 (marked upstream) conflicts again beside up5's second copy of its line;
    # p4, which deletes that line, applies once p3 is resolved as it has it: a knock-on. The
    # oracle's proof had taken the stop's proposal (upstream's side) for p3 (the oracle's)
    9100009,
    9200034,  # the same: p2 deletes p1's line, which up4 wrapped; p1 resolved as it has it
    # day one: p2 deletes deferred p1's line; up1 took p1, up2 removed that line (p2's first
    # part), up3 the rest: upstream in up3, not a no-op because neither the old base nor up3's
    # parent has the line (up1 had it: an upstream commit removed it; fixed)
    9200010,
    # found by the lead's soak at the end of round nine: a_f2's body stands twice in a.c (push
    # p1, brought back, copies it into p1_fn1); push p4.patch keeps p2 and p3 as applied (in
    # the first copy, judged so at push p1), where the oracle's reference picked them again as
    # written, into the second; git cherry-pick of p4 onto the applied p3, then p5 and p6,
    # gives our tree (the oracle's; fixed: a patch before the one brought back is kept)
    9600028,
    # found by CI's random soak at the end of round ten: p4 (deleting p1's line, which up2
    # took and up4 edited) is held for p3, which waits for p2; with p2 and p3 in place it
    # conflicts in b.c (up3 moved a_f1 to b.c's end, where p4 adds its functions): primary,
    # waiting for p3. The oracle had tried deferred p1 alone, with which p4 applies, a
    # placement patchstack never makes of a held patch (the oracle's; fixed: a held primary is
    # judged with its root and the roots that one waits for in place)
    5262589,
]


def tagged(finding: str) -> bool:
    return re.search(r" \[(issue 33 item \d|new: [\w-]+)\]$", finding) is not None


# The README's command runs seed 5 (every kind of label); the others run under -m slow.
@pytest.mark.parametrize("seed", slow_after(labels.seeds_from_env(FIXED), 1))
def test_every_label_is_what_git_says(seed: int, tmp_path) -> None:
    case = labels.make_case(seed)
    judged: dict[str, int] = {}
    findings = labels.run(case, tmp_path, judged)
    other = [f for f in findings if not tagged(f)]
    assert not other, case.describe() + "\n" + "\n".join(findings)
    if findings:
        raise KnownBug(case.describe() + "\n" + "\n".join(findings))
    assert judged.keys() - {"unchanged", "offset", "merged"}, judged  # it judged something


# The known bugs being fixed (items of issue 33 on other branches, and one this oracle found): a
# finding of one of them is printed by the soak run, not failed (remove one when its fix lands;
# PATCHSTACK_LABEL_STRICT=1 fails on every finding). Any other wrong label fails the run.
# Items 1, 2 and 4 are fixed (no finding in the fixed seeds nor in 60 random ones); the
# deferred-leak's fix has not landed, though seed 80 no longer shows it. Item 4, found again
# by CI's soak (seeds 9090795, 2075), is fixed: a patch removing a line only a deferred patch
# had is a no-op after it, not "upstream" (9090795); push NAME's reference picks a later patch
# as refreshed unless git proves it is not its own change without the one coming back (2075,
# 5075); no item 4 or 2 finding in seeds 5000..5259. Item 5 is fixed: the neighbour, the
# several-roots and the marked-upstream findings (seeds 2057, 2019), and a patch held for a
# left-out root (`engine.needs`) that also conflicts on its own, now primary (seeds 2028,
# 1076, 1111, 2047; none in 8000..8059). Item 6 is fixed: the neighbour, the
# change-and-revert, a deletion a line apart or beside the hunk that the patch's base made too
# (seeds 489931, 1004, 1106, 7981786), and the oracle's own placing (1098, 7038); in seeds
# 7000..7119 the one culprit finding was the oracle's (7038), in 5516975..5517034 none. The
# last two of item 6 (seeds 5031, 5170) were the oracle's: its span of a hunk's base lines
# stopped short of a ``}`` beside them that a revert took out, and its merge's default markers
# joined two of patchstack's regions into one; with both fixed, no finding in 3141500..3141559,
# 6021000..6021059, 8675300..8675359 (180 random seeds) nor in 5000..5119 (the range that found
# them, with the check of held primaries' marks). CI's soak found 6531759, the oracle's too:
# a held patch's report is its conflict with its root applied, with fewer regions than git's
# merge without the root, and the oracle placed its hunk by the region's rank, not its sides.
# Round nine's soak, 40 seeds from each of 8300000, 8400000, 9100000, 9200000, 9300000,
# 9400000 and 9500000 (the odd ones plain): 9100009 and 9200034 were the oracle's (its proof of
# a knock-on took the stop's proposal for the root), 9200010 the product's (a no-op judged
# from two upstream versions only); with those fixed, none (9100000.. and 9200000.. run again).
# Seed 9600028 (item 4, repeated lines) was the oracle's: its reference for ``push NAME``
# picked the patches applied before NAME again as written, which ``push`` (and ``git rebase
# -i`` with NAME picked again) keeps as applied.
# Seed 5262589 (item 5, CI's soak at the end of round ten) was the oracle's: it judged a held
# primary by each missing patch alone, never with the patch's root in place.
OPEN_ITEMS: set[str] = set()


def unknown_findings(findings: list[str]) -> list[str]:
    if os.environ.get("PATCHSTACK_LABEL_STRICT"):
        return findings
    open_tags = {f"[{label_oracle.tag(i)}]" for i in OPEN_ITEMS}
    return [f for f in findings if not any(f.endswith(t) for t in open_tags)]


@pytest.mark.soak
def test_a_random_campaign_finds_no_wrong_label(tmp_path) -> None:
    count = int(os.environ.get("PATCHSTACK_LABEL_SOAK", "20"))
    start = int(os.environ.get("PATCHSTACK_LABEL_START") or random.randrange(10_000, 10_000_000))
    failures, known_seeds = [], []
    total: dict[str, int] = {}
    for seed in range(start, start + count):
        case = labels.make_case(seed)
        judged: dict[str, int] = {}
        findings = labels.run(case, tmp_path / str(seed), judged, shortcuts=seed % 2 == 0)
        for kind, n in judged.items():
            total[kind] = total.get(kind, 0) + n
        if findings:
            known_seeds.append(seed)
            print(f"seed {seed}:\n" + "\n".join(findings), flush=True)
        if unknown_findings(findings):
            failures.append(case.describe() + "\n" + "\n".join(findings))
    print(f"label oracle: seeds {start}..{start + count - 1}; open items in {known_seeds}")
    print(f"labels judged: {dict(sorted(total.items()))}")
    assert not failures, f"seeds {start}..{start + count - 1}:\n" + "\n\n".join(failures)


def test_a_push_keeps_the_patches_before_it_as_applied(tmp_path) -> None:
    """Seed 9600028 by hand, no oracle: ``push p4.patch`` (deferred on day one, p1 brought
    back before it) gives what ``git cherry-pick`` of p4's commit onto the applied p3, then of
    the applied p5 and p6, gives, each conflict taken as the patch has it. Picking p2 and p3
    again as written puts their edits in the other copy of a_f2's lines (the reference the
    oracle had, which is not what a push does)."""
    repo = labels.write_case(labels.make_case(9600028), tmp_path / "fork")
    repo.ps("import", "commits", "base..work", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    written = dict(stack_of(repo, repo.git("rev-parse", "base").strip()))
    up1 = repo.git("rev-parse", "up1").strip()
    repo.ps("refresh", "--onto", "up1", "--defer-conflicts", code=None)

    def push(name: str) -> None:
        assert repo.ps("push", name, code=None).exit_code == 1  # a stop at its conflict
        for path in json.loads(repo.ps("status", "--json", code=None).stdout)["stopped"][
            "conflicted"
        ]:
            fixed = resolve_markers((repo.path / path).read_text())
            assert fixed is not None, path
            repo.write(path, fixed)
        assert repo.ps("refresh", "--continue", code=None).exit_code == 0

    push("p1.patch")
    before = dict(stack_of(repo, up1))
    assert list(before) == ["p1.patch", "p2.patch", "p3.patch", "p5.patch", "p6.patch"]
    push("p4.patch")
    ours = dict(stack_of(repo, up1))
    assert [ours[n] for n in ("p1.patch", "p2.patch", "p3.patch")] == [
        before[n] for n in ("p1.patch", "p2.patch", "p3.patch")
    ]

    def picked(onto: str, commits: list[str]) -> str:
        side = tmp_path / f"side-{onto[:7]}"
        repo.git("worktree", "add", "-q", "--detach", str(side), onto)
        side_repo = Repo(side)
        for commit in commits:
            done = subprocess.run(
                ["git", "-c", "merge.conflictStyle=diff3", "cherry-pick", commit],
                cwd=side,
                capture_output=True,
            )
            if done.returncode:
                for path in side_repo.git("diff", "--name-only", "--diff-filter=U").split():
                    fixed = resolve_markers((side / path).read_text())
                    assert fixed is not None, path
                    side_repo.write(path, fixed)
                    side_repo.git("add", path)
                side_repo.git("-c", "core.editor=true", "cherry-pick", "--continue")
        return side_repo.tree()

    git = picked(before["p3.patch"], [written["p4.patch"], before["p5.patch"], before["p6.patch"]])
    assert repo.tree() == git
    # as written, p2 and p3 land in the other copy: a different tree, not the push's
    again = picked(before["p1.patch"], [written[n] for n in ("p2.patch", "p3.patch", "p4.patch")])
    assert again != repo.git("rev-parse", f"{ours['p4.patch']}^{{tree}}").strip()
