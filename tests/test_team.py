"""Two maintainers on one series (issue 37): each has a clone of the fork and of the series'
own repository (``patches/``), installs the merge driver once, edits, renames, retags and adds
patches, and merges the other's work with ``git pull``. Every merge is either clean and right
(``push --all`` gives both sides' changes combined) or a conflict that git and patchstack both
name."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line

FILES = ("a.py", "b.py", "c.py", "d.py")


class Team:
    def __init__(self, tmp_path: Path, install: bool = True) -> None:
        self.upstream = make_repo(
            tmp_path / "upstream", {f: numbered(40, f.split(".")[0]) for f in FILES}
        )
        self.origin = tmp_path / "series.git"
        alice = self.alice = self._clone(tmp_path / "alice")
        alice.ps("init")
        for name, path, tag in (
            ("one", "a.py", "essential"),
            ("two", "b.py", "diagnostic"),
            ("three", "c.py", "optimization"),
        ):
            stem = path.split(".")[0]
            replace_line(alice, path, f"{stem} 5\n", f"{stem} 5 {name}\n")
            alice.ps("new", name, "--tag", tag, "-m", f"Patch {name}\n\nWhy {name} exists.", path)
        self.series(alice, "init", "-q", "-b", "main")
        if install:
            alice.ps("merge-driver", "--install")
        self.commit(alice, "the series")
        self.series(alice, "clone", "-q", "--bare", ".", str(self.origin))
        self.series(alice, "remote", "add", "origin", str(self.origin))
        self.series(alice, "fetch", "-q", "origin")
        self.series(alice, "branch", "-q", "-u", "origin/main")
        bob = self.bob = self._clone(tmp_path / "bob")
        bob.git("clone", "-q", str(self.origin), "patches")
        if install:
            bob.ps("merge-driver", "--install")
        bob.ps("push", "--all")

    def _clone(self, path: Path) -> Repo:
        subprocess.run(["git", "clone", "-q", str(self.upstream.path), str(path)], check=True)
        return Repo(path)

    @staticmethod
    def series(repo: Repo, *args: str, check: bool = True) -> str:
        return repo.git("-C", "patches", *args, check=check)

    def commit(self, repo: Repo, message: str) -> None:
        self.series(repo, "add", "-A")
        self.series(repo, "commit", "-q", "-m", message)

    def publish(self, repo: Repo, message: str) -> None:
        self.commit(repo, message)
        self.series(repo, "push", "-q", "origin", "HEAD:main")

    def pull(self, repo: Repo, message: str) -> subprocess.CompletedProcess[str]:
        """Commit ``repo``'s series and merge the other's into it (``git pull``)."""
        self.commit(repo, message)
        return subprocess.run(
            ["git", "-C", "patches", "pull", "--no-rebase", "--no-edit"],
            cwd=repo.path,
            capture_output=True,
            text=True,
        )


@built_once
def built_team(tmp_path: Path, install: bool = True) -> Team:
    return Team(tmp_path, install)


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return built_team(tmp_path)


def _lines(repo: Repo, path: str) -> list[str]:
    return [ln for ln in repo.read(path).splitlines() if not ln.startswith(path[0] + " ")]


def test_appends_retags_reorders_and_marks_on_both_sides_merge(team: Team) -> None:
    alice, bob = team.alice, team.bob
    # Alice: a new patch at the end, and a retag.
    replace_line(alice, "d.py", "d 9\n", "d 9 alice\n")
    alice.ps("new", "four", "--tag", "essential", "-m", "Four", "d.py")
    alice.ps("tag", "two", "essential,nvidia")
    team.publish(alice, "alice: four, two is essential")
    # Bob: another new patch, 'three' moved first.
    replace_line(bob, "d.py", "d 30\n", "d 30 bob\n")
    bob.ps("new", "five", "--tag", "diagnostic", "-m", "Five", "d.py")
    bob.ps("move", "three", "--before", "one")
    pulled = team.pull(bob, "bob: five, three first")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    text = bob.read("patches/series")
    entries = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert entries == [
        "three.patch # optimization",
        "one.patch # essential",
        "two.patch # essential, nvidia",
        "five.patch # diagnostic",  # ours (bob's) first, as git orders
        "four.patch # essential",
    ]
    bob.ps("pop", "--all")
    bob.ps("push", "--all")
    assert "d 9 alice" in bob.read("d.py") and "d 30 bob" in bob.read("d.py")
    for stem in ("a", "b", "c"):
        assert f"{stem} 5 " in bob.read(f"{stem}.py")
    assert bob.ps("status", code=None).exit_code == 0


def test_a_description_edited_here_and_the_diff_changed_there_merge(team: Team) -> None:
    alice, bob = team.alice, team.bob
    alice.ps("edit", "one", "-m", "Patch one, reworded\n\nAlice says why.")
    team.publish(alice, "alice: one reworded")
    replace_line(bob, "a.py", "a 20\n", "a 20 bob\n")
    bob.ps("refresh", "--patch", "one")
    pulled = team.pull(bob, "bob: one grows")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    patch = bob.read("patches/one.patch")
    assert "Alice says why." in patch and "+a 20 bob" in patch
    bob.ps("pop", "--all")
    bob.ps("push", "--all")
    assert "a 20 bob" in bob.read("a.py") and "a 5 one" in bob.read("a.py")
    assert "Alice says why." in bob.git("log", "--format=%B", "-n", "3")


def test_the_same_lines_changed_on_both_sides_is_a_conflict_both_tools_name(team: Team) -> None:
    alice, bob = team.alice, team.bob
    replace_line(alice, "a.py", "a 5 one\n", "a 5 one by alice\n")
    alice.ps("refresh", "--patch", "one")
    team.publish(alice, "alice: one changed")
    replace_line(bob, "a.py", "a 5 one\n", "a 5 one by bob\n")
    bob.ps("refresh", "--patch", "one")
    pulled = team.pull(bob, "bob: one changed")
    assert pulled.returncode != 0
    said = pulled.stdout + pulled.stderr
    assert "CONFLICT" in said and "one.patch" in said
    assert "patchstack merge-driver: conflict in one.patch: the diff was changed" in said
    status = bob.ps("status", code=2)
    assert "unresolved merge conflict in patches/one.patch:" in status.stderr


def test_a_series_clash_is_a_conflict_both_tools_name(team: Team) -> None:
    alice, bob = team.alice, team.bob
    alice.ps("tag", "two", "essential")
    team.publish(alice, "alice: two is essential")
    bob.ps("tag", "two", "optimization")
    pulled = team.pull(bob, "bob: two is an optimization")
    assert pulled.returncode != 0
    said = pulled.stdout + pulled.stderr
    assert "CONFLICT" in said and "series" in said
    assert "two.patch: changed on both sides" in said
    status = bob.ps("status", code=2)
    assert "unresolved merge conflict in patches/series:" in status.stderr


def test_a_teammates_rename_is_followed(team: Team) -> None:
    alice, bob = team.alice, team.bob
    alice.ps("rename", "two", "two-renamed")
    team.publish(alice, "alice: two renamed")
    bob.ps("tag", "two", "essential")  # bob retags it meanwhile
    pulled = team.pull(bob, "bob: two is essential")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "two-renamed.patch # essential" in bob.read("patches/series")
    status = bob.ps("status", code=None)
    assert "two-renamed" in status.stdout
    assert "patchstack log" not in status.stdout and "undo" not in status.stdout
    assert "not in the series" not in status.stdout
    assert "'patchstack push --all' gives the applied commits their patches' new names" in (
        status.stdout
    )
    bob.ps("pop", "two-renamed")
    listed = bob.ps("series").stdout
    assert "two-renamed" in listed and "two.patch" not in listed
    bob.ps("push", "--all")
    log = bob.git("log", "--format=%B", "-n", "3")
    assert "Patchstack-Patch: two-renamed" in log
    assert bob.ps("status", code=None).exit_code == 0


def test_install_is_idempotent_and_refuses_another_driver(tmp_path: Path) -> None:
    team = built_team(tmp_path, install=False)
    bob = team.bob
    first = bob.ps("merge-driver", "--install").stdout
    assert "wrote" in first
    attributes = bob.read("patches/.gitattributes")
    assert "series merge=patchstack" in attributes and "*.patch merge=patchstack" in attributes
    again = bob.ps("merge-driver", "--install").stdout
    assert "wrote" not in again and "installed" in again
    assert bob.read("patches/.gitattributes") == attributes
    other = Repo(tmp_path / "other")
    subprocess.run(["git", "clone", "-q", str(team.upstream.path), str(other.path)], check=True)
    other.git("clone", "-q", str(team.origin), "patches")
    other.git("-C", "patches", "config", "merge.patchstack.driver", "my-merger %O %A %B")
    refused = other.ps("merge-driver", "--install", code=2)
    assert "merge.patchstack.driver is already set to 'my-merger %O %A %B'" in refused.stderr
    assert not (other.path / "patches" / ".gitattributes").exists()


def test_without_install_a_committed_gitattributes_runs_nothing(tmp_path: Path) -> None:
    """The series folder is a trust boundary: a teammate's .gitattributes names the driver,
    but git runs only what this clone's own configuration defines."""
    team = built_team(tmp_path, install=False)
    alice, bob = team.alice, team.bob
    (alice.path / "patches" / ".gitattributes").write_text("series merge=patchstack\n")
    alice.ps("tag", "two", "essential")
    team.publish(alice, "alice: attributes, two is essential")
    replace_line(bob, "d.py", "d 30\n", "d 30 bob\n")
    bob.ps("new", "five", "--tag", "diagnostic", "-m", "Five", "d.py")
    pulled = team.pull(bob, "bob: five")
    # git's own text merge, no driver: the append next to the retag still merges as text.
    assert "merge-driver" not in pulled.stdout + pulled.stderr
    assert bob.git("-C", "patches", "config", "--get", "merge.patchstack.driver", check=False) == ""


def test_a_rename_there_and_a_refresh_with_a_recorded_resolution_here(team: Team) -> None:
    alice, bob, upstream = team.alice, team.bob, team.upstream
    alice.ps("rename", "two", "two-renamed")
    team.publish(alice, "alice: two renamed")
    replace_line(upstream, "b.py", "b 5\n", "b 5 upstream\n")
    upstream.git("commit", "-qam", "upstream changes b 5 its way")
    new_base = upstream.head()
    bob.git("fetch", "-q", "origin")
    bob.ps("refresh", "--onto", "origin/main", code=1)
    resolved = upstream.read("b.py").replace("b 5 upstream\n", "b 5 upstream two\n")
    bob.write("b.py", resolved)
    bob.ps("refresh", "--continue")
    records = list((bob.path / "patches" / "resolutions").iterdir())
    assert len(records) == 1 and "patch: two.patch" in records[0].read_text()
    pulled = team.pull(bob, "bob: refreshed onto upstream")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    series = bob.read("patches/series")
    assert "two-renamed.patch # diagnostic" in series and f"# base: {new_base}" in series
    assert "+b 5 upstream two" in bob.read("patches/two-renamed.patch")
    listed = bob.ps("resolutions", "two-renamed").stdout
    assert "1 recorded resolution(s)" in listed
    assert "'patchstack push --all' gives the applied commits" in bob.ps("status").stdout
    bob.ps("push", "--all")
    assert "patch: two-renamed.patch" in records[0].read_text()
    assert "Patchstack-Patch: two-renamed" in bob.git("log", "--format=%B", "-n", "3")
    assert bob.read("b.py") == resolved
    # Alice takes Bob's merge: a fast-forward of the series; her stack is on the old base.
    team.series(bob, "push", "-q", "origin", "HEAD:main")
    team.series(alice, "pull", "-q", "--ff-only")
    alice.git("fetch", "-q", "origin")
    alice.ps("refresh", "--onto", "origin/main")
    assert alice.read("b.py") == resolved


def test_a_deferral_and_new_base_there_an_append_and_retag_here(team: Team) -> None:
    """Alice refreshes onto upstream, which conflicts with 'three': it is deferred (a mark)
    and the base moves; Bob adds a patch and retags one meanwhile. The merge is clean and
    'push --all' gives upstream's change with every patch but the deferred one."""
    alice, bob, upstream = team.alice, team.bob, team.upstream
    replace_line(upstream, "c.py", "c 5\n", "c 5 upstream\n")
    upstream.git("commit", "-qam", "upstream changes c 5")
    alice.git("fetch", "-q", "origin")
    alice.ps("refresh", "--onto", "origin/main", "--defer-conflicts")
    assert "# deferred: three.patch" in alice.read("patches/series")
    team.publish(alice, "alice: refreshed, three deferred")
    replace_line(bob, "d.py", "d 30\n", "d 30 bob\n")
    bob.ps("new", "five", "--tag", "diagnostic", "-m", "Five", "d.py")
    bob.ps("tag", "one", "essential,nvidia")
    pulled = team.pull(bob, "bob: five, one for nvidia")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    series = bob.read("patches/series")
    assert f"# base: {upstream.head()}" in series and "# deferred: three.patch" in series
    assert "one.patch # essential, nvidia" in series and "five.patch # diagnostic" in series
    bob.git("fetch", "-q", "origin")
    bob.ps("pop", "--all")
    bob.git("merge", "-q", "--ff-only", "origin/main")
    bob.ps("push", "--all")
    assert "c 5 upstream" in bob.read("c.py") and "c 5 three" not in bob.read("c.py")
    assert "a 5 one" in bob.read("a.py") and "b 5 two" in bob.read("b.py")
    assert "d 30 bob" in bob.read("d.py")


def _refreshed_by_alice(team: Team) -> str:
    """Upstream adds lines at the top of a.py (every patch of it only moves) and Alice
    refreshes onto it and publishes; the new base."""
    alice, upstream = team.alice, team.upstream
    upstream.write("a.py", "# upstream 1\n# upstream 2\n# upstream 3\n" + upstream.read("a.py"))
    replace_line(upstream, "a.py", "a 12\n", "a 12 upstream\n")
    upstream.write("d.py", "# upstream d\n" + upstream.read("d.py"))
    upstream.git("commit", "-qam", "upstream: a header, a 12, d's header")
    alice.git("fetch", "-q", "origin")
    alice.ps("refresh", "--onto", "origin/main")
    team.publish(alice, "alice: refreshed onto upstream")
    return upstream.head()


@built_once
def refreshed_team(tmp_path: Path) -> tuple[Team, str]:
    """`built_team`, then `_refreshed_by_alice`: built once per worker."""
    team = built_team(tmp_path)
    return team, _refreshed_by_alice(team)


@pytest.fixture
def refreshed(tmp_path: Path) -> tuple[Team, str]:
    """The team after Alice's refresh onto upstream, and the new base."""
    return refreshed_team(tmp_path)


def test_the_same_patch_refreshed_there_and_edited_here_is_remade_on_the_new_base(
    refreshed: tuple[Team, str],
) -> None:
    team, new_base = refreshed
    bob, upstream = team.bob, team.upstream
    replace_line(bob, "a.py", "a 30\n", "a 30 bob\n")  # another hunk of 'one', old base
    bob.ps("refresh", "--patch", "one")
    bob.git("fetch", "-q", "origin")  # the new upstream's objects
    pulled = team.pull(bob, "bob: one grows")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    patch = bob.read("patches/one.patch")
    assert "+a 30 bob" in patch and "+a 5 one" in patch
    blob = upstream.git("rev-parse", "HEAD:a.py").strip()
    assert f"index {blob}.." in patch  # made on the new base
    assert f"# base: {new_base}" in bob.read("patches/series")
    bob.ps("pop", "--all")
    bob.git("merge", "-q", "--ff-only", "origin/main")
    bob.ps("push", "--all")
    want = upstream.read("a.py").replace("a 5\n", "a 5 one\n").replace("a 30\n", "a 30 bob\n")
    assert bob.read("a.py") == want
    assert "b 5 two" in bob.read("b.py") and "c 5 three" in bob.read("c.py")
    assert bob.ps("status", code=None).exit_code == 0
    # The same merge the other way round (Alice, who refreshed, merges Bob's edit) gives the
    # same patch file, byte for byte.
    team.series(bob, "branch", "bob-edit", "HEAD^1")
    team.series(team.alice, "fetch", "-q", str(bob.path / "patches"), "bob-edit")
    team.series(team.alice, "merge", "-q", "--no-edit", "FETCH_HEAD")
    assert team.alice.read("patches/one.patch") == patch


def test_an_edit_that_clashes_with_the_new_base_is_a_conflict_both_tools_name(
    refreshed: tuple[Team, str],
) -> None:
    team = refreshed[0]
    bob = team.bob
    replace_line(bob, "a.py", "a 12\n", "a 12 bob\n")  # the line upstream changed
    bob.ps("refresh", "--patch", "one")
    bob.git("fetch", "-q", "origin")
    pulled = team.pull(bob, "bob: one changes a 12")
    assert pulled.returncode != 0
    said = pulled.stdout + pulled.stderr
    assert "CONFLICT" in said and "one.patch" in said
    assert "patchstack merge-driver: conflict in one.patch: the ours version does not carry" in (
        said
    )
    status = bob.ps("status", code=2)
    assert "unresolved merge conflict in patches/one.patch:" in status.stderr


def test_without_the_new_bases_objects_the_conflict_says_fetch(refreshed: tuple[Team, str]) -> None:
    team = refreshed[0]
    bob = team.bob
    replace_line(bob, "a.py", "a 30\n", "a 30 bob\n")
    bob.ps("refresh", "--patch", "one")
    pulled = team.pull(bob, "bob: one grows")  # no fetch of upstream
    assert pulled.returncode != 0
    assert "fetch the new upstream ('git fetch') and merge again" in pulled.stderr


def test_an_edit_in_a_file_the_refreshed_patch_does_not_touch_lands_on_the_new_base(
    refreshed: tuple[Team, str],
) -> None:
    """Bob's edit adds a file to the patch Alice refreshed: that file's place on the new base
    is read from the refreshed side's series base."""
    team = refreshed[0]
    bob, upstream = team.bob, team.upstream
    replace_line(bob, "d.py", "d 9\n", "d 9 bob\n")
    bob.ps("new", "d-part", "--tag", "essential", "-m", "D part", "d.py")
    bob.ps("fold", "d-part", "--into", "one")
    assert "+d 9 bob" in bob.read("patches/one.patch")
    bob.git("fetch", "-q", "origin")
    pulled = team.pull(bob, "bob: one grows into d.py")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    blob = upstream.git("rev-parse", "HEAD:d.py").strip()
    assert f"index {blob}.." in bob.read("patches/one.patch")
    bob.ps("pop", "--all")
    bob.git("merge", "-q", "--ff-only", "origin/main")
    bob.ps("push", "--all")
    assert bob.read("d.py") == upstream.read("d.py").replace("d 9\n", "d 9 bob\n")
    assert "a 5 one" in bob.read("a.py") and "a 12 upstream" in bob.read("a.py")


def test_a_teammates_deferral_mark_names_a_commit_this_clone_lacks(team: Team) -> None:
    """The '# deferred:' mark Alice's refresh wrote names her clone's commit of the patch;
    Bob's next refresh keeps what the mark names reachable only where he has it."""
    alice, bob, upstream = team.alice, team.bob, team.upstream
    replace_line(upstream, "c.py", "c 5\n", "c 5 upstream\n")
    upstream.git("commit", "-qam", "upstream changes c 5")
    alice.ps("edit", "three", "-m", "Patch three\n\nAlice rewords it.")  # a commit of hers
    alice.git("fetch", "-q", "origin")
    alice.ps("refresh", "--onto", "origin/main", "--defer-conflicts")
    mark = next(ln for ln in alice.read("patches/series").splitlines() if "# deferred:" in ln)
    named = mark.split()[-1]
    lacks = subprocess.run(["git", "cat-file", "-e", f"{named}^{{commit}}"], cwd=bob.path)
    assert lacks.returncode != 0  # Alice's commit, not Bob's
    team.publish(alice, "alice: refreshed, three deferred")
    team.series(bob, "pull", "-q", "--no-rebase", "--no-edit")
    bob.git("fetch", "-q", "origin")
    bob.ps("pop", "--all")
    bob.git("merge", "-q", "--ff-only", "origin/main")
    bob.ps("push", "--all")
    replace_line(bob, "a.py", "a 30\n", "a 30 bob\n")
    bob.ps("refresh", "--patch", "one")
    assert "+a 30 bob" in bob.read("patches/one.patch")
    bob.ps("undo")
    assert "+a 30 bob" not in bob.read("patches/one.patch")
