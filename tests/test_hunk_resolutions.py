"""Resolutions keyed by the conflict hunk, as git's rerere keys them (issue 36, item 1): a
resolution recorded at ``--continue`` settles the same conflict hunk again in every later
replay, whatever upstream changed elsewhere in the file; a hunk upstream changed again stops
as before; the whole-file records of the earlier version still work; a tampered record is
refused, and one that does not apply is left with a note."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line

RESOLVED = "a 10 upstream and mine\n"


@built_once
def fork(tmp_path: Path) -> Repo:
    """p1 changes a.py line 10, which upstream (``up``) changes too; p2 changes b.py.
    ``up2``: up, then upstream adds lines at the top of a.py and changes line 30 (elsewhere);
    ``up3``: up, then upstream changes line 10 again (the hunk itself)."""
    repo = make_repo(tmp_path, {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    replace_line(repo, "b.py", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p2", "--tag", "diagnostic")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    repo.commit_all("upstream reworks line 10")
    repo.git("checkout", "-q", "-b", "up2")
    repo.write("a.py", "# header\n# more\n" + repo.read("a.py").replace("a 30\n", "a 30 up\n"))
    repo.commit_all("upstream edits a.py elsewhere")
    repo.git("checkout", "-q", "-b", "up3", "up")
    replace_line(repo, "a.py", "a 10 upstream\n", "a 10 upstream again\n")
    repo.commit_all("upstream reworks line 10 again")
    repo.git("checkout", "-q", "main")
    return repo


def day_one(repo: Repo) -> Path:
    """Refresh onto up, resolve p1's conflict, --continue; then back to before (undo twice:
    the records stay, as git's rerere cache does). The record."""
    repo.ps("refresh", "--onto", "up", code=1)
    text = repo.read("a.py")
    assert "<<<<<<<" in text
    repo.write("a.py", re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", RESOLVED, text, flags=re.S))
    repo.ps("refresh", "--continue")
    repo.ps("undo")
    repo.ps("undo")
    (record,) = (repo.path / "patches" / "resolutions").iterdir()
    return record


@built_once
def after_day_one(tmp_path: Path) -> tuple[Repo, Path]:
    """`fork`, then `day_one`: the repository and its record, built once per worker."""
    repo = fork(tmp_path)
    return repo, day_one(repo)


def by_hand(repo: Repo, stack: list[str], onto: str, tmp: Path) -> str:
    """The tree plain git makes: the stack cherry-picked onto ``onto``, p1's conflict resolved
    by hand by putting the recorded resolution in place of its conflict hunk."""
    clone = Repo(tmp)
    subprocess.run(["git", "clone", "-q", "--shared", str(repo.path), str(tmp)], check=True)
    clone.git("checkout", "-q", "-B", "work", repo.git("rev-parse", onto).strip())
    p1, p2 = stack
    clone.git("-c", "merge.conflictStyle=diff3", "cherry-pick", p1, check=False)
    conflicted = clone.read("a.py")
    assert conflicted.count("<<<<<<<") == 1 and "||||||| " in conflicted
    clone.write("a.py", re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", RESOLVED, conflicted, flags=re.S))
    clone.git("add", "a.py")
    clone.git("-c", "core.editor=true", "cherry-pick", "--continue")
    clone.git("cherry-pick", p2)
    return clone.tree()


def test_a_hunk_resolution_survives_upstream_edits_elsewhere_in_the_file(tmp_path) -> None:
    repo, record = after_day_one(tmp_path / "fork")
    assert record.read_bytes().startswith(b"patchstack-resolution-hunk 1\n")
    stack = repo.git("rev-parse", "HEAD~1", "HEAD").split()
    doc = json.loads(repo.ps("check", "--onto", "up2", "--json").stdout)
    (p1,) = [p for p in doc["patches"] if p["name"] == "p1.patch"]
    assert p1["recorded"] and p1["reused_hunks"] == ["a.py:12"]
    # Upstream changed a.py elsewhere: the same hunk conflicts again, settled, no stop.
    out = repo.ps("refresh", "--onto", "up2").stdout
    assert "p1.patch  (recorded resolution reused for hunk a.py:12)" in out, out
    text = repo.read("a.py")
    assert "a 10 upstream and mine\n" in text and "# header\n" in text and "a 30 up\n" in text
    assert not re.search(r"(?m)^(<<<<<<<|=======|>>>>>>>|\|\|\|\|\|\|\|)", text)
    # The differential: exactly the tree plain git makes with the resolution put in by hand.
    assert repo.tree() == by_hand(repo, stack, "up2", tmp_path / "git")
    repo.ps("undo")
    doc = json.loads(repo.ps("refresh", "--onto", "up2", "--json").stdout)
    (p1,) = [p for p in doc["patches"] if p["name"] == "p1.patch"]
    assert p1["recorded"] and p1["reused_hunks"] == ["a.py:12"]
    assert repo.tree() == by_hand(repo, stack, "up2", tmp_path / "git2")


def test_upstream_changing_the_hunk_itself_stops_as_before(tmp_path) -> None:
    repo, _ = after_day_one(tmp_path / "fork")
    # The control: the record works onto up2 (so the stop below is the hunk's doing).
    assert "reused for hunk a.py:12" in repo.ps("check", "--onto", "up2").stdout
    result = repo.ps("refresh", "--onto", "up3", code=1)
    assert "p1.patch" in result.stderr and "a.py" in result.stderr
    assert "a 10 upstream again" in repo.read("a.py") and "<<<<<<<" in repo.read("a.py")
    assert "reused" not in result.stdout
    assert "recorded resolutions of p1.patch's conflict hunks in a.py are for other lines" in (
        result.stderr
    )  # the record that no longer matches
    repo.ps("refresh", "--abort")


def test_a_deferred_patch_pushed_later_reuses_the_hunk_resolution(tmp_path) -> None:
    colleague, _ = after_day_one(tmp_path / "colleague")
    repo = fork(tmp_path / "fork")
    repo.ps("refresh", "--onto", "up2", "--defer-conflicts")
    assert "<<<<<<<" not in repo.read("a.py") and "a 10 mine" not in repo.read("a.py")
    records = colleague.path / "patches" / "resolutions"
    subprocess.run(["cp", "-r", str(records), str(repo.path / "patches")], check=True)
    repo.ps("push", "p1.patch")
    assert "a 10 upstream and mine\n" in repo.read("a.py")
    assert "<<<<<<<" not in repo.read("a.py")


def legacy_record(repo: Repo, patch: str, path: str, sides: list[str], resolved: bytes) -> None:
    """A whole-file record as the earlier version wrote it (``patchstack-resolution 1``, keyed
    by the path and the three versions' modes and blob ids)."""
    entries = []
    for rev in sides:
        mode, _kind, oid = repo.git("ls-tree", rev, "--", path).split()[:3]
        entries.append(f"{mode} {oid}")
    key = hashlib.sha1("\0".join((path, *entries, "")).encode()).hexdigest()
    blob = repo.git("hash-object", "--stdin", input=resolved.decode()).strip()
    head = [
        "patchstack-resolution 1",
        f"patch: {patch}",
        f"path: {path}",
        f"base: {entries[0]}",
        f"ours: {entries[1]}",
        f"theirs: {entries[2]}",
        f"resolved: 100644 {blob}",
        "recorded: 2026-01-01T00:00:00Z",
    ]
    folder = repo.path / "patches" / "resolutions"
    folder.mkdir(exist_ok=True)
    (folder / key).write_bytes("\n".join(head).encode() + b"\n\n" + resolved)


def test_whole_file_records_of_the_earlier_version_still_settle_beside_hunk_records(
    tmp_path,
) -> None:
    """p2's conflict has a whole-file record of the earlier format, p1's a hunk record: one
    refresh onto up2 settles both."""
    repo, _ = after_day_one(tmp_path / "fork")
    upstream_b = numbered(40, "b").replace("b 5\n", "b 5 upstream\n")
    repo.git("checkout", "-q", "up2")
    repo.write("b.py", upstream_b)
    repo.commit_all("upstream reworks b.py line 5")
    repo.git("checkout", "-q", "main")
    resolved = upstream_b.replace("b 5 upstream\n", "b 5 upstream and mine\n").encode()
    legacy_record(repo, "p2.patch", "b.py", ["HEAD~1", "up2", "HEAD"], resolved)
    out = repo.ps("refresh", "--onto", "up2").stdout
    assert "p1.patch  (recorded resolution reused for hunk a.py:12)" in out, out
    assert "p2.patch  (recorded resolution)" in out, out
    assert repo.read("b.py").encode() == resolved
    assert "a 10 upstream and mine\n" in repo.read("a.py")


def edited(record: Path, old: bytes, new: bytes) -> None:
    data = record.read_bytes()
    assert data.count(old) == 1, data
    record.write_bytes(data.replace(old, new))


def test_a_tampered_hunk_record_is_refused_naming_it(tmp_path) -> None:
    repo, record = after_day_one(tmp_path / "fork")
    assert "reused for hunk a.py:12" in repo.ps("check", "--onto", "up2").stdout
    good = record.read_bytes()
    cases = [  # the file and, where one header line is at fault, its line
        (b"a 10 upstream\n", b"a 10 UPSTREAM\n", ": its name is not its key"),  # same sizes
        (b"a 10 upstream and mine\n", b"a 10 upstream and mine!\n", ":5: its sizes add up"),
        (b"\nline: ", b"\nline: x", ":4: 'line: x10' is not a line number"),
        (b"\nsizes: ", b"\nsizes: 1 ", ":5: 'sizes: 1 "),
        (b"\nrecorded: ", b"\nrecorded:", ":6: a header line is not 'field: value'"),
    ]
    for old, new, why in cases:
        edited(record, old, new)
        before = repo.state()
        for args in (("refresh", "--onto", "up2"), ("check", "--onto", "up2"), ("resolutions",)):
            result = repo.ps(*args, code=2)
            assert record.name + why in result.stderr, (args, result.stderr)
            assert "Traceback" not in result.stderr
        assert repo.state() == before
        record.write_bytes(good)
    record.unlink()
    record.symlink_to("/dev/zero")
    assert "cannot be read as a file" in repo.ps("check", "--onto", "up2", code=2).stderr


def test_a_hunk_record_whose_resolution_holds_markers_is_not_applied(tmp_path) -> None:
    """Well formed, but its content does not apply: the conflict stops, with a note."""
    repo, record = after_day_one(tmp_path / "fork")
    marker = b"=======\n"
    data = record.read_bytes()
    head, _, body = data.partition(b"\n\n")
    sizes = [int(w) for w in re.search(rb"sizes: (.*)", head).group(1).split()]
    sizes[3] += len(marker)
    head = re.sub(rb"sizes: .*", b"sizes: " + " ".join(map(str, sizes)).encode(), head)
    record.write_bytes(head + b"\n\n" + body + marker)
    result = repo.ps("refresh", "--onto", "up2", code=1)
    assert "holds conflict markers; it was not applied" in result.stderr, result.stderr
    assert "<<<<<<<" in repo.read("a.py")
    repo.ps("refresh", "--abort")


def test_a_hunk_record_is_shown_in_review(tmp_path) -> None:
    repo, record = after_day_one(tmp_path / "fork")
    old = tmp_path / "old"
    subprocess.run(["cp", "-r", str(repo.path / "patches"), str(old)], check=True)
    (old / "resolutions" / record.name).unlink()
    sides = (str(old), str(repo.path / "patches"))
    doc = json.loads(repo.ps("review", *sides, "--json").stdout)
    (r,) = doc["resolutions"]
    assert (r["change"], r["file"], r["patch"], r["path"], r["mode"]) == (
        "added",
        f"resolutions/{record.name}",
        "p1.patch",
        "a.py",
        "hunk",
    )
    assert "one conflict hunk of a.py (line 10)" in r["note"]
    assert "+a 10 upstream and mine" in r["diff"] and "-a 10 upstream" in r["diff"]
    text = repo.ps("review", *sides).stdout
    assert f"resolutions/{record.name}: p1.patch, a.py (resolved: hunk)" in text
    md = repo.ps("review", *sides, "--format", "markdown").stdout
    assert "(resolved: hunk)" in md and "one conflict hunk of a.py" in md
    html = repo.ps("review", *sides, "--format", "html").stdout
    assert "(resolved: hunk)" in html and "one conflict hunk of a.py" in html


@built_once
def two_hunks(tmp_path: Path) -> Repo:
    """p1 changes a.py lines 10 and 20, upstream (``up``) both: two conflict hunks. ``up2``:
    up with lines added at the top; ``up3``: up with line 20 changed again."""
    repo = make_repo(tmp_path, {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    repo.write(
        "a.py", numbered(40, "a").replace("a 10\n", "a 10 mine\n").replace("a 20\n", "a 20 mine\n")
    )
    repo.ps("new", "p1", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write(
        "a.py", numbered(40, "a").replace("a 10\n", "a 10 up\n").replace("a 20\n", "a 20 up\n")
    )
    repo.commit_all("upstream reworks lines 10 and 20")
    repo.git("checkout", "-q", "-b", "up2")
    repo.write("a.py", "# header\n" + repo.read("a.py"))
    repo.commit_all("upstream adds a header")
    repo.git("checkout", "-q", "-b", "up3", "up")
    replace_line(repo, "a.py", "a 20 up\n", "a 20 up again\n")
    repo.commit_all("upstream reworks line 20 again")
    repo.git("checkout", "-q", "main")
    return repo


def resolve_both(repo: Repo, outside: bool = False) -> list[Path]:
    repo.ps("refresh", "--onto", "up", code=1)
    text = repo.read("a.py")
    assert text.count("<<<<<<<") == 2
    blocks = iter(["a 10 up and mine\n", "a 20 up and mine\n"])
    text = re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", lambda _m: next(blocks), text, flags=re.S)
    if outside:  # the user also changes a line the merge left alone
        text = text.replace("a 30\n", "a 30 tidied\n")
    repo.write("a.py", text)
    repo.ps("refresh", "--continue")
    repo.ps("undo")
    repo.ps("undo")
    return sorted((repo.path / "patches" / "resolutions").iterdir())


def test_each_hunk_of_a_file_is_recorded_and_reused_and_a_new_one_stops(tmp_path) -> None:
    repo = two_hunks(tmp_path / "fork")
    records = resolve_both(repo)
    assert len(records) == 2
    assert all(r.read_bytes().startswith(b"patchstack-resolution-hunk 1\n") for r in records)
    out = repo.ps("check", "--onto", "up2").stdout
    assert "(recorded resolution reused for hunk a.py:11, a.py:21)" in out, out
    # One hunk upstream changed again: the stop shows the other one resolved as recorded (as
    # rerere resolves the hunks it knows) and only the new one with markers; said so.
    result = repo.ps("refresh", "--onto", "up3", code=1)
    said = "recorded resolutions settle 1 of the 2 conflict hunks of a.py (a.py:10); the others"
    assert said in result.stderr, result.stderr
    text = repo.read("a.py")
    assert text.count("<<<<<<<") == 1 and "a 10 up and mine\n" in text
    repo.write("a.py", re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", "a 20 again, mine\n", text, flags=re.S))
    repo.ps("refresh", "--continue")
    assert repo.git("show", "HEAD:a.py") == numbered(40, "a").replace(
        "a 10\n", "a 10 up and mine\n"
    ).replace("a 20\n", "a 20 again, mine\n")
    # Without the records the same stop shows both hunks: the reuse was the records'.
    repo.ps("undo")  # back to the stop
    repo.ps("refresh", "--abort")
    (repo.path / "patches" / "resolutions").rename(repo.path / "kept")
    repo.ps("refresh", "--onto", "up3", code=1)
    assert repo.read("a.py").count("<<<<<<<") == 2
    repo.ps("refresh", "--abort")


def test_a_resolution_that_edits_outside_the_hunks_is_recorded_whole(tmp_path) -> None:
    repo = two_hunks(tmp_path / "fork")
    (record,) = resolve_both(repo, outside=True)
    assert record.read_bytes().startswith(b"patchstack-resolution 1\n")
    out = repo.ps("refresh", "--onto", "up").stdout  # the very same versions: settled whole
    assert "p1.patch  (recorded resolution)" in out and "a 30 tidied\n" in repo.read("a.py")
    repo.ps("undo")
    repo.ps("refresh", "--onto", "up2", code=1)  # a whole-file record: not past other edits
    repo.ps("refresh", "--abort")


def test_a_reused_hunk_record_is_marked_in_the_review_of_its_refresh(tmp_path) -> None:
    """A reuse leaves nothing in the series folder: the review takes it from the operation
    log's entry of the refresh that made the patch's version it shows."""
    repo, _ = after_day_one(tmp_path / "fork")
    old = tmp_path / "old"
    subprocess.run(["cp", "-r", str(repo.path / "patches"), str(old)], check=True)
    assert "reused for hunk a.py:12" in repo.ps("refresh", "--onto", "up2").stdout
    sides = (str(old), str(repo.path / "patches"))
    doc = json.loads(repo.ps("review", *sides, "--json").stdout)
    reused = {p["new"]["name"]: p["reused_hunks"] for p in doc["patches"]}
    assert reused == {"p1.patch": ["a.py:12"], "p2.patch": []}
    said = "recorded resolution reused for hunk a.py:12"
    text = repo.ps("review", *sides).stdout
    assert said in text and "resolution reused" in text.split("== p1.patch")[1].splitlines()[0]
    assert said in repo.ps("review", *sides, "--format", "markdown").stdout.lower()
    assert said in repo.ps("review", *sides, "--format", "html").stdout.lower()
    assert said in repo.ps("log", "p1.patch").stdout  # the refresh's note, in the patch's log
    # Another version of the patch (not the refresh's): no mark.
    repo.ps("undo")
    doc = json.loads(repo.ps("review", *sides, "--json").stdout)
    assert all(p["reused_hunks"] == [] for p in doc["patches"])


def hunk_record(repo: Repo, base: bytes, resolution: bytes, sides: tuple[bytes, bytes]) -> Path:
    """A hunk record of p1's a.py conflict (upstream's side, the patch's) over ``base``, as a
    teammate whose series stood on another base would have recorded it."""
    from patchstack.commands.refresh.hunks import Hunk, render

    hunk = Hunk(sides[0], base, sides[1], 12)
    folder = repo.path / "patches" / "resolutions"
    folder.mkdir(exist_ok=True)
    data = render("p1.patch", "a.py", hunk, resolution, "2026-01-01T00:00:00Z")
    (folder / hunk.key).write_bytes(data)
    return folder / hunk.key


SIDES = (b"a 10 upstream\n", b"a 10 mine\n")


def test_a_record_of_the_same_two_sides_over_another_base_is_not_applied(tmp_path) -> None:
    """The key holds the hunk's base: the same two sides over another base are other changes
    (rerere's key leaves the base out; a lookup by it would settle no hunk of the measured
    drifts, docs/benchmarks.md). One byte of a side differing is not a match either."""
    repo = fork(tmp_path / "fork")
    hunk_record(repo, b"a 9\na 10 older\n", RESOLVED.encode(), SIDES)
    hunk_record(repo, b"a 10\n", RESOLVED.encode(), (b"a 10 upstream \n", SIDES[1]))
    result = repo.ps("refresh", "--onto", "up2", code=1)
    assert "reused" not in result.stdout and "<<<<<<<" in repo.read("a.py")
    repo.ps("refresh", "--abort")
    hunk_record(repo, b"a 10\n", b"a 10 exact\n", SIDES)  # the hunk's own base
    out = repo.ps("refresh", "--onto", "up2").stdout
    assert "reused for hunk a.py:12)" in out and "a 10 exact\n" in repo.read("a.py"), out


def test_a_stop_says_which_files_records_settled_whole(tmp_path) -> None:
    """p1's conflict is in a.py and b.py; a record knows a.py's hunk: the stop shows a.py
    resolved, b.py with markers, and says why a.py has none."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    replace_line(repo, "b.py", "b 10\n", "b 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    replace_line(repo, "b.py", "b 10\n", "b 10 upstream\n")
    repo.commit_all("upstream reworks line 10 of both")
    repo.git("checkout", "-q", "main")
    hunk_record(repo, b"a 10\n", RESOLVED.encode(), SIDES)
    result = repo.ps("refresh", "--onto", "up", code=1)
    said = "recorded resolutions settle the one conflict hunk of a.py (a.py:10)"
    assert said in result.stderr, result.stderr
    assert "<<<<<<<" not in repo.read("a.py") and RESOLVED in repo.read("a.py")
    assert "<<<<<<<" in repo.read("b.py")


E_TEXT = "".join(f"e {n}\n" for n in range(1, 21))


def _modify_delete(tmp_path) -> tuple[Repo, str]:
    """p1 edits a.py's line 10 and e.py; branch ``up`` reworks that line and deletes e.py
    (a content conflict beside a modify/delete). Returns the repository on ``up``."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "e.py": E_TEXT})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 mine\n")
    replace_line(repo, "e.py", "e 5\n", "e 5 mine\n")
    repo.ps("new", "p1", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    repo.git("rm", "-q", "e.py")
    repo.commit_all("upstream reworks a.py line 10, deletes e.py")
    return repo, E_TEXT


def test_a_conflict_with_a_file_that_cannot_be_cut_still_records_the_others_hunks(
    tmp_path,
) -> None:
    """p1's conflict: a.py's hunk and e.py, which upstream deleted (a modify/delete, no
    markers). a.py is recorded hunk by hunk, e.py whole beside it (as rerere records each file
    on its own): onto an upstream that also edits a.py elsewhere both settle. Before, one file
    that could not be cut made the whole conflict a record of exact versions, dead at the
    first other edit of a.py."""
    repo, e_text = _modify_delete(tmp_path)
    repo.git("checkout", "-q", "-b", "up2")
    replace_line(repo, "a.py", "a 30\n", "a 30 up\n")
    repo.commit_all("upstream edits a.py elsewhere")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", code=1)
    text = repo.read("a.py")
    repo.write("a.py", re.sub(r"<<<<<<<.*?>>>>>>>[^\n]*\n", RESOLVED, text, flags=re.S))
    repo.write("e.py", e_text.replace("e 5\n", "e 5 mine\n"))  # kept, as the patch has it
    repo.ps("refresh", "--continue")
    kinds = sorted(
        r.read_bytes().split(b"\n")[0] for r in (repo.path / "patches" / "resolutions").iterdir()
    )
    assert kinds == [b"patchstack-resolution 1", b"patchstack-resolution-hunk 1"]
    repo.ps("undo")
    repo.ps("undo")
    out = repo.ps("refresh", "--onto", "up2").stdout
    assert "reused for hunk e.py (whole file), a.py:10" in out, out
    assert RESOLVED in repo.read("a.py") and "a 30 up\n" in repo.read("a.py")
    assert repo.read("e.py") == e_text.replace("e 5\n", "e 5 mine\n")


def test_a_stop_with_a_relocation_proposal_still_shows_the_hunks_records_settle(
    tmp_path,
) -> None:
    """p1's conflict: e.py, which upstream deleted (a relocation proposal is shown), and a.py's
    hunk, which a record knows: the stop shows a.py resolved by it. Before, the proposal was
    made from the merge with its markers and the record's resolution was dropped (on
    kernel-timers, 99 hunks records knew stayed with markers at implementation.patch's stop)."""
    repo, e_text = _modify_delete(tmp_path)
    repo.git("checkout", "-q", "main")
    hunk_record(repo, b"a 10\n", RESOLVED.encode(), SIDES)
    result = repo.ps("refresh", "--onto", "up", "--json", code=1)
    stop = json.loads(result.stdout)["stopped"]
    assert stop["relocations"], stop  # the proposal is there
    assert "<<<<<<<" not in repo.read("a.py") and RESOLVED in repo.read("a.py")
    assert "recorded resolutions settle the one conflict hunk of a.py" in stop["note"]
