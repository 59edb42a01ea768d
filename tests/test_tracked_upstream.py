"""Which upstream a series is compared with (`commands.tracked`): a team's branch tracks its
own published branch (``git checkout -B work origin/me/feature``) while its series tracks the
upstream (``# base: ID origin/main``). status's drift, check and the hints take the series'
branch, never the fork's own commits for upstream's; @{upstream} only where the series names
no branch that exists. Real git: a bare "origin" with ``main`` and the engineer's branch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, make_repo, numbered

FEATURE = "origin/me/feature"


def team(tmp_path: Path, upstream: str = "origin/main") -> tuple[Repo, Repo, str]:
    """(the engineer's clone on ``work``, tracking origin/me/feature, its series imported
    against origin/main; the developer's repository that pushes to origin). The branch has
    three commits; upstream's main then took the second one's change (and moved elsewhere).
    And what the import printed."""
    dev = make_repo(tmp_path / "dev", {"a.py": numbered(40, "a"), "b.py": numbered(20, "b")})
    Repo(tmp_path).git("init", "-q", "--bare", "-b", "main", "origin.git")
    dev.git("remote", "add", "origin", str(tmp_path / "origin.git"))
    dev.git("push", "-q", "origin", "main")
    dev.git("switch", "-q", "-c", "me/feature")
    dev.commit_steps(
        [
            ("a: line 5", {"a.py": numbered(40, "a").replace("a 5\n", "a 5 mine\n")}),
            ("b: line 10", {"b.py": numbered(20, "b").replace("b 10\n", "b 10 fix\n")}),
            (
                "a: line 30",
                {
                    "a.py": numbered(40, "a")
                    .replace("a 5\n", "a 5 mine\n")
                    .replace("a 30\n", "a 30 mine\n")
                },
            ),
        ]
    )
    dev.git("push", "-q", "origin", "me/feature")
    dev.git("switch", "-q", "main")
    dev.commit_steps(
        [
            (
                "upstream takes the b fix",
                {"b.py": numbered(20, "b").replace("b 10\n", "b 10 fix\n")},
            ),
            ("upstream adds c.py", {"c.py": "c\n"}),
        ]
    )
    dev.git("push", "-q", "origin", "main")
    Repo(tmp_path).git("clone", "-q", str(tmp_path / "origin.git"), "fork")
    fork = Repo(tmp_path / "fork")
    fork.git("checkout", "-q", "-B", "work", FEATURE)  # tracks the engineer's own branch
    assert fork.git("rev-parse", "--abbrev-ref", "@{upstream}").strip() == FEATURE
    if upstream != "origin/main":
        upstream = fork.git("rev-parse", upstream).strip()  # an id: the series names no branch
    args = ("import", "branch", FEATURE, "--upstream", upstream, "--tag", "essential")
    imported = fork.ps(*args).stdout
    fork.ps("push", "--all")
    return fork, dev, imported


def cherry_upstream(fork: Repo) -> set[str]:
    """The oracle: the branch's commits whose change origin/main has (``git cherry``'s '-'),
    by subject."""
    out = fork.git("cherry", "-v", "origin/main", FEATURE).splitlines()
    return {ln.split(" ", 2)[2] for ln in out if ln.startswith("- ")}


def subjects(fork: Repo) -> dict[str, str]:
    """Each patch's name -> its Subject line."""
    series = json.loads(fork.ps("series", "--json").stdout)
    out = {}
    for p in series["patches"]:
        text = fork.read(f"patches/{p['name']}")
        line = next(ln for ln in text.splitlines() if ln.startswith("Subject: "))
        out[p["name"]] = line.removeprefix("Subject: ").removeprefix("[PATCH] ")
    return out


def test_the_series_branch_is_upstream_not_the_branch_head_tracks(tmp_path: Path) -> None:
    fork, _dev, _out = team(tmp_path)
    assert "# base: " in fork.read("patches/series") and " origin/main\n" in fork.read(
        "patches/series"
    )
    text = fork.ps("status").stdout
    main = fork.git("rev-parse", "origin/main").strip()
    assert f"upstream moved: 2 commits since the series base, to origin/main ({main[:12]})" in text
    assert FEATURE not in text.replace(
        f"not with HEAD's @{{upstream}} {FEATURE}", ""
    )  # named once, as the branch passed over
    assert (
        f"  (compared with origin/main, the branch the series tracks (# base:), not with HEAD's"
        f" @{{upstream}} {FEATURE})"
    ) in text.splitlines()
    assert text.endswith(
        "next: 'patchstack check --onto origin/main', then 'patchstack refresh --onto"
        " origin/main'\n"
    )
    drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
    assert drift["target_name"] == "origin/main" and drift["target"] == main
    assert drift["upstream"] == "series" and drift["passed_over"] == FEATURE
    assert [c["subject"] for c in drift["all"]] == [
        "upstream takes the b fix",
        "upstream adds c.py",
    ]

    # check, no --onto: against origin/main; 'upstream' is what git cherry says main has
    result = json.loads(fork.ps("check", "--json").stdout)
    assert result["target_name"] == "origin/main" and result["target"] == main
    called = {p["name"] for p in result["patches"] if p["verdict"] == "upstream"}
    names = subjects(fork)
    assert {names[n] for n in called} == cherry_upstream(fork) == {"b: line 10"}
    onto = json.loads(fork.ps("check", "--onto", "origin/main", "--json").stdout)
    assert onto["patches"] == result["patches"]
    out = fork.ps("check").stdout
    assert f"check against origin/main ({main[:12]})" in out


def test_refresh_onto_the_hinted_target_then_status_keeps_tracking_it(tmp_path: Path) -> None:
    fork, dev, _out = team(tmp_path)
    before = fork.state()
    # refresh with no --onto follows HEAD, which did not move: nothing replayed, and it names
    # the upstream that did
    out = fork.ps("refresh").stdout
    assert "base " not in out.splitlines()[0]
    assert (
        "upstream origin/main has moved past the series base: 'patchstack refresh --onto"
        " origin/main' carries the series there"
    ) in out
    assert fork.state()[0] == before[0]
    result = json.loads(fork.ps("refresh", "--onto", "origin/main", "--json").stdout)
    verdicts = {p["name"]: p["verdict"] for p in result["patches"]}
    names = subjects(fork)
    assert {names[n] for n, v in verdicts.items() if v == "upstream"} == {"b: line 10"}
    assert "origin/main has moved" not in fork.ps("refresh").stdout
    text = fork.ps("status").stdout
    assert "upstream moved" not in text and "next: 'patchstack refresh --drop-merged'" in text
    # upstream moves on: status and check follow origin/main, not the branch HEAD tracks
    dev.commit_steps(
        [
            (
                "upstream edits a.py far away",
                {"a.py": numbered(40, "a").replace("a 38\n", "a 38 up\n")},
            )
        ]
    )
    dev.git("push", "-q", "origin", "main")
    fork.git("fetch", "-q")
    text = fork.ps("status").stdout
    assert "upstream moved: 1 commit since the series base, to origin/main" in text
    assert json.loads(fork.ps("check", "--json").stdout)["target_name"] == "origin/main"
    # moving to another upstream with --onto: the series tracks it from then on
    dev.git("push", "-q", "origin", "main:release")
    fork.git("fetch", "-q")
    fork.ps("refresh", "--onto", "origin/release")
    assert fork.read("patches/series").splitlines()[1].endswith(" origin/release")
    dev.commit_steps([("release fix", {"d.py": "d\n"})])
    dev.git("push", "-q", "origin", "main:release")
    fork.git("fetch", "-q")
    drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
    assert drift["target_name"] == "origin/release" and drift["commits"] == 1


def test_the_plain_case_tracking_origin_main_is_unchanged(tmp_path: Path) -> None:
    fork, _dev, _out = team(tmp_path)
    fork.git("branch", "-q", "--set-upstream-to", "origin/main")
    text = fork.ps("status").stdout
    assert "upstream moved: 2 commits since the series base, to origin/main" in text
    assert "compared with" not in text
    drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
    assert drift["upstream"] == "series" and drift["passed_over"] is None
    assert json.loads(fork.ps("check", "--json").stdout)["target_name"] == "origin/main"


def test_a_series_naming_no_branch_falls_back_to_head_upstream(tmp_path: Path) -> None:
    fork, _dev, _out = team(tmp_path)
    series = fork.read("patches/series")
    for named in ("", " origin/gone", " HEAD", " origin/main~1", " work"):
        # no ref; a branch that is gone; not a branch; a revision; HEAD's own branch
        fork.write("patches/series", series.replace(" origin/main\n", f"{named}\n", 1))
        drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
        assert (drift["target_name"], drift["upstream"]) == (FEATURE, "tracking"), named
        assert drift["passed_over"] is None
        assert json.loads(fork.ps("check", "--json").stdout)["target_name"] == FEATURE
        assert "compared with" not in fork.ps("status").stdout
    fork.git("branch", "-q", "--unset-upstream")
    fork.write("patches/series", series.replace(" origin/main\n", "\n", 1))
    text = fork.ps("status").stdout  # neither: the remote's default branch, guessed
    assert "HEAD has no @{upstream}: origin/main is the remote's default branch" in text
    assert json.loads(fork.ps("check", "--json").stdout)["target_name"].startswith("HEAD")


def test_import_branch_says_what_status_will_compare_with(tmp_path: Path) -> None:
    _fork, _dev, out = team(tmp_path)
    assert (
        "note: 'patchstack status' and 'check' compare with origin/main, the branch the"
        f" series tracks (# base:), not with HEAD's @{{upstream}} {FEATURE}"
    ) in out
    assert "counts the drift against" not in out


def test_import_branch_against_an_id_says_the_branch_head_tracks_is_compared(
    tmp_path: Path,
) -> None:
    fork, _dev, out = team(tmp_path, upstream="origin/main^0")
    assert fork.read("patches/series").splitlines()[1].count(" ") == 2  # '# base: ID'
    assert (
        f"note: this branch's upstream is {FEATURE}, and the series tracks no branch here, so"
        f" 'patchstack status' and 'check' compare with {FEATURE}; 'patchstack refresh --onto"
        " BRANCH' makes the series track BRANCH"
    ) in out
    drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
    assert (drift["target_name"], drift["upstream"]) == (FEATURE, "tracking")


def base_line(fork: Repo) -> str:
    return next(ln for ln in fork.read("patches/series").splitlines() if ln.startswith("# base:"))


def test_refresh_onto_an_id_follows_what_was_asked(tmp_path: Path) -> None:
    """``refresh --onto ID`` (a commit id, not a branch) wrote the id and kept the old ref on
    the base line: onto a commit of another branch, the series still "tracked" origin/main,
    and status and check compared with it. Now the ref stays only where the branch's history
    holds the new base (an older point of the upstream it follows); a revision of it
    (``origin/main~1``), a tag or a ref that is no branch (``refs/trial/day2``: the trial
    tools' day after wrote it, and the next ``check`` compared with the fork's own branch,
    HEAD's @{upstream}) name the branch too."""
    fork, dev, _out = team(tmp_path)
    main = fork.git("rev-parse", "origin/main").strip()
    fork.ps("refresh", "--onto", fork.git("rev-parse", "origin/main~1").strip())
    assert base_line(fork).endswith(" origin/main")  # on origin/main: it follows it still
    fork.ps("refresh", "--onto", main)
    assert base_line(fork) == f"# base: {main} origin/main"
    # a release branch forked from main, one commit of its own: onto its id
    dev.git("switch", "-q", "-c", "release")
    dev.commit_steps([("release fix", {"d.py": "d\n"})])
    dev.git("push", "-q", "origin", "release")
    dev.git("switch", "-q", "main")
    dev.commit_steps([("main moves on", {"e.py": "e\n"})])
    dev.git("push", "-q", "origin", "main")
    fork.git("fetch", "-q")
    release = fork.git("rev-parse", "origin/release").strip()
    fork.ps("refresh", "--onto", release)
    # git's answer: origin/main does not hold the new base
    gone = subprocess.run(
        ["git", "merge-base", "--is-ancestor", release, "origin/main"], cwd=fork.path
    )
    assert gone.returncode == 1
    assert base_line(fork) == f"# base: {release}"  # no longer "tracks" origin/main
    drift = json.loads(fork.ps("status", "--json").stdout)["drift"]
    assert drift["target_name"] != "origin/main"
    assert "(tracks origin/main)" not in fork.ps("status").stdout
    # a revision of the branch followed, a tag or a ref that is no branch on it: that branch
    fork.ps("refresh", "--onto", "origin/main")
    fork.ps("refresh", "--onto", "origin/main~1")
    assert base_line(fork).endswith(" origin/main")
    fork.git("tag", "v1", "origin/main~1")
    fork.git("update-ref", "refs/trial/day2", "origin/main")
    for onto in ("v1", "refs/trial/day2"):
        fork.ps("refresh", "--onto", onto)
        assert base_line(fork).endswith(" origin/main"), onto
        assert json.loads(fork.ps("check", "--json").stdout)["target_name"] == "origin/main"
    # a tag origin/main does not hold is written as given (a label, no branch to follow)
    fork.git("tag", "r1", "origin/release")
    fork.ps("refresh", "--onto", "r1")
    assert base_line(fork) == f"# base: {release} r1"
