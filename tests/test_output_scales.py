"""Output that scales with the series: what changed and one line of counts; every patch
only with --verbose (and in --json, always)."""

from __future__ import annotations

import json

import pytest

from .conftest import Repo, built_once, make_repo, numbered


@pytest.fixture
@built_once
def thirty(tmp_path) -> Repo:
    """30 patches, one a file, every third one diagnostic; all applied."""
    repo = make_repo(tmp_path / "fork", {f"m{i:02}.py": numbered(12, f"m{i}") for i in range(30)})
    base = repo.head()
    for i in range(30):
        tag = "diagnostic" if i % 3 == 0 else "essential"
        repo.write(f"m{i:02}.py", repo.read(f"m{i:02}.py").replace(f"m{i} 6\n", f"patched {i}\n"))
        repo.git("commit", "-q", "-a", "-m", f"Patch {i}\n\nPatchstack-Tag: {tag}")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    return repo


def test_import_prints_a_summary_and_every_name_only_with_verbose(thirty: Repo) -> None:
    rng = "HEAD~30..HEAD"
    out = thirty.ps("--dir", "again", "import", "commits", rng).stdout.splitlines()
    assert out[0] == "imported 30 patch(es):" and out[1].startswith("  Patch-0.patch [")
    assert out[6] == "  ... and 25 more patch(es) (--verbose lists them)" and len(out) == 9
    assert out[-1] == "next: 'patchstack push --all' applies them"
    verbose = thirty.ps("--dir", "more", "import", "commits", rng, "--verbose").stdout
    assert all(f"  Patch-{i}.patch [" in verbose for i in range(30))


def test_pop_only_names_ten_and_counts_the_rest(thirty: Repo) -> None:
    out = thirty.ps("pop", "--only", "diagnostic").stdout.splitlines()
    assert out[0].startswith("popped 10 patch(es): Patch-0.patch, Patch-3.patch")
    assert out[1].startswith("re-applied 20 patch(es) above them: Patch-1.patch, Patch-2.patch")
    assert out[1].endswith(" and 15 more (--verbose lists them)")
    assert out[2].startswith("now applied: 20 patch(es)") and len(out) == 3
    verbose = thirty.ps("push", "--all", "--verbose").stdout
    assert verbose.startswith("applied 10 patch(es): ") and "Patch-27.patch" in verbose


def test_refresh_and_check_print_what_changed_and_counts(thirty: Repo) -> None:
    thirty.write("m04.py", thirty.read("m04.py").replace("m4 1\n", "m4 one\n"))
    out = thirty.ps("refresh", "--patch", "Patch-4").stdout
    assert "unchanged" not in out.split("30 patches")[0]  # no line per unchanged patch
    assert "30 patches: " in out and "29 unchanged" in out
    assert len(out.splitlines()) <= 4
    verbose = thirty.ps("check", "--verbose").stdout
    assert verbose.count("unchanged ") == 30
    out = thirty.ps("check").stdout.splitlines()
    assert out == [out[0], "30 patches: 30 unchanged: all patches apply"]
    data = json.loads(thirty.ps("check", "--json").stdout)
    assert len(data["patches"]) == 30  # --json is always complete
    status = thirty.ps("status").stdout
    assert "applied: 30 of 30" in status and "... and 20 more applied (--verbose" in status


def test_check_and_refresh_report_progress(thirty: Repo) -> None:
    """The replay reports (done, total) as it goes; the CLI shows it as a bar on a terminal
    once the work lasts over a second (cli/progress, as for push and pop)."""
    import os

    from patchstack.checkout import open_checkout
    from patchstack.commands.check import check
    from patchstack.commands.refresh.start import refresh
    from patchstack.model.selection import Selector
    from patchstack.transaction import begin

    def run(command: str, write: bool, fn) -> list[tuple[int, int]]:
        seen: list[tuple[int, int]] = []
        ws = open_checkout(None, str(thirty.path))
        ws.command = command
        held, _problems = begin(ws, write=write)
        try:
            fn(ws, lambda done, total: seen.append((done, total)))
        finally:
            ws.git.close()
            held.release()
        return seen

    seen = run("patchstack check", False, lambda ws, p: check(ws, None, Selector(), p))
    assert seen == [(i, 30) for i in range(30)]
    thirty.write("m04.py", thirty.read("m04.py").replace("m4 1\n", "m4 one\n"))
    seen = run("patchstack refresh", True, lambda ws, p: refresh(ws, patch="Patch-4", progress=p))
    assert seen[0] == (0, 30) and seen[-1] == (29, 30)
    assert os.path.exists(thirty.path / "patches" / "Patch-4.patch")


def test_refresh_and_check_name_ten_offset_patches_and_every_merged_one(thirty: Repo) -> None:
    """Offset patches (only line numbers moved) are named ten at a time, so that a merged
    patch at the end of a long series stays in sight; --verbose names them all."""
    stack_top = thirty.head()
    base = thirty.git("rev-list", "--max-parents=0", "HEAD").strip()
    thirty.git("checkout", "-q", "-b", "upstream", base)
    for i in range(30):
        thirty.write(f"m{i:02}.py", "# header\n" + thirty.read(f"m{i:02}.py"))
    thirty.write("m29.py", thirty.read("m29.py").replace("m29 3\n", "m29 three\n"))
    upstream = thirty.commit_all("upstream moves")
    thirty.git("checkout", "-q", "main")
    assert thirty.head() == stack_top
    out = thirty.ps("check", "--onto", upstream).stdout.splitlines()
    assert sum(line.startswith("  offset    Patch-") for line in out) == 10
    assert "  offset    ... and 19 more (--verbose lists them)" in out
    assert "  merged    Patch-29.patch" in out
    assert out[-1] == "30 patches: 29 offset, 1 merged: all patches apply"
    verbose = thirty.ps("check", "--onto", upstream, "--verbose").stdout
    assert verbose.count("offset    Patch-") == 29
    out = thirty.ps("refresh", "--onto", upstream).stdout.splitlines()
    assert sum(line.startswith("  offset    Patch-") for line in out) == 10
    assert "  offset    ... and 19 more (--verbose lists them)" in out
    assert "  merged    Patch-29.patch" in out


def test_bisect_says_from_where_a_patch_stops_applying_and_keeps_skips_to_a_line(
    tmp_path,
) -> None:
    """Twelve upstream commits: the second breaks the test, the fifth rewrites the lines the
    patch edits (so it does not apply from there on). The skipped steps are a line or two
    each, and the answer names the first commit where the patch stops applying, found by
    builds alone."""
    from .conftest import replace_line

    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(5, "b")})
    good = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 patched\n")
    repo.ps("new", "p", "--tag", "essential", "a.py")
    repo.ps("pop", "--all")
    commits = [good]
    for i in range(1, 13):
        if i == 2:
            replace_line(repo, "b.py", "b 3\n", "b 3 broken\n")
        elif i == 5:
            replace_line(repo, "a.py", "a 10\n", "a ten\n")
        else:
            repo.write("c.txt", f"{i}\n")
        commits.append(repo.commit_all(f"upstream {i}"))
    test = ["sh", "-c", "! grep -q broken b.py"]
    result = repo.ps("bisect", good, "HEAD", "--", *test)
    assert f"first failing commit: {commits[2]}" in result.stdout
    assert (
        f"where the carried patches do not apply:\n  from {commits[5][:10]} (upstream 5) on,"
        " p.patch does not apply\n"
    ) in result.stdout
    skips = result.stderr.count("-> skip: patch p.patch does not apply")
    assert skips >= 2
    assert "the patch expected" not in result.stderr  # no conflict report by default
    assert len(result.stderr.splitlines()) <= 2 * 10 + skips + 1
    data = json.loads(repo.ps("bisect", "--json", good, "HEAD", "--", *test).stdout)
    assert data["stops"] == [
        {
            "patch": "p.patch",
            "from": commits[5],
            "to": commits[12],
            "applies_before": commits[4],
            "applies_after": None,
            "builds": data["stops"][0]["builds"],
        }
    ]
    verbose = repo.ps("bisect", "-v", good, "HEAD", "--", *test)
    assert "the patch expected" in verbose.stderr
    # A failure inside the run: every commit of it is tried, and the answer and the table
    # show the run as one line each (--verbose: every one).
    late = ["sh", "-c", 'test "$(cat c.txt 2>/dev/null || echo 0)" -lt 8']
    result = repo.ps("bisect", good, "HEAD", "--", *late, code=1)
    span = f"8 commits from {commits[5][:10]} (upstream 5) to {commits[12][:10]} (upstream 12)"
    assert f"skipped commits hide which):\n  {span}\n" in result.stdout
    assert f"{commits[5][:10]}..  skip" in result.stdout
    assert f"8 commits to {commits[12][:10]}: p.patch does not apply" in result.stdout
    assert len(result.stdout.splitlines()) < 15
    every = repo.ps("bisect", "-v", good, "HEAD", "--", *late, code=1).stdout
    assert all(f"{commits[i][:10]} upstream {i}" in every for i in range(5, 13))


def test_a_sixty_conflict_check_reads_in_a_screen_and_its_progress_keeps_moving(
    tmp_path,
) -> None:
    """40 patches whose line upstream rewrote (primary) and 20 that edit a file one of the
    first ten creates (knock-ons): one line per primary, one per root's knock-ons, counts;
    the progress goes on past the replay while the 60 reports are built, never going back."""
    from patchstack.checkout import open_checkout
    from patchstack.commands.check import check
    from patchstack.model.selection import Selector
    from patchstack.transaction import begin

    repo = make_repo(tmp_path / "fork", {f"m{i:02}.py": numbered(12, f"m{i}") for i in range(40)})
    base = repo.head()
    steps: list[tuple[str, dict[str, str | None]]] = []
    new = {f"new{k}.py": numbered(8, f"new{k}") for k in range(10)}
    for i in range(60):
        files: dict[str, str | None] = {}
        if i < 40:
            files[f"m{i:02}.py"] = numbered(12, f"m{i}").replace(f"m{i} 6\n", f"mine {i}\n")
        if i < 10:
            files[f"new{i}.py"] = new[f"new{i}.py"]
        if i >= 40:
            k = (i - 40) % 10
            new[f"new{k}.py"] += f"tuned {i}\n"
            files[f"new{k}.py"] = new[f"new{k}.py"]
        steps.append((f"Patch {i}\n\nPatchstack-Tag: essential", files))
    repo.commit_steps(steps)  # one fast-import for the 60 commits
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for i in range(40):
        repo.write(f"m{i:02}.py", repo.read(f"m{i:02}.py").replace(f"m{i} 6\n", f"theirs {i}\n"))
    repo.commit_all("upstream rewrites line 6 everywhere")
    repo.git("checkout", "-q", "main")

    out = repo.ps("check", "--onto", "up", code=1).stdout.splitlines()
    assert out[1] == (
        "conflicts: 40 primary (upstream changed the lines), 20 knock-on (an earlier patch is"
        " missing)"
    )
    assert sum(1 for ln in out if ln.startswith("  conflict  Patch-")) == 40
    assert sum(1 for ln in out if "2 knock-on(s) waiting for it" in ln) == 10
    assert out[-1] == "60 patches: 60 conflict"  # (it said ": 60 conflict(s)" again)
    assert len(out) <= 60 and not any("CONFLICT" in ln for ln in out)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    kinds = [c["kind"] for c in data["conflicts"]]
    assert kinds.count("primary") == 40 and kinds.count("knock-on") == 20

    seen: list[tuple[int, int]] = []
    ws = open_checkout(None, str(repo.path))
    ws.command = "patchstack check"
    held, _problems = begin(ws, write=False)
    try:
        check(ws, "up", Selector(), lambda done, total: seen.append((done, total)))
    finally:
        ws.git.close()
        held.release()
    assert [d for d, _t in seen[:60]] == list(range(60))
    after = seen[60:]  # the reports: the bar goes on, to the end
    assert len(after) >= 60 and after[-1] == (120, 120), after[-5:]
    assert [d for d, _t in after] == sorted(d for d, _t in after)
    # it never goes back: the replay's total counts the reports to come (it went from 98 %
    # at the replay's end to 50 % when they began)
    shares = [d / t for d, t in seen]
    assert shares == sorted(shares), [f"{d}/{t}" for d, t in seen if d / t < max(shares)][:5]


@pytest.mark.slow  # ~5 s: a hundred files, sixty conflicts
def test_a_stop_and_check_patch_fit_a_screen_for_a_hundred_file_patch(tmp_path) -> None:
    """A patch rewriting 20 lines in each of 100 files that upstream rewrote too, among 60
    conflicting patches: the stop of 'refresh --onto' and 'check --patch NAME' each print a
    report within the line budget (upstream's and the patch's change as capped diffs, at most
    three commits a hunk, a count of what is left out); --verbose and --json give every hunk."""
    from patchstack.cli.conflicttext import STOP_BUDGET

    files = {f"f{i:03}.py": numbered(40, f"f{i}") for i in range(100)}
    repo = make_repo(
        tmp_path / "fork", {**files, **{f"s{i:02}.py": numbered(8, "s") for i in range(59)}}
    )
    base = repo.head()

    def rewrite(path: str, word: str) -> None:
        lines = repo.read(path).splitlines(keepends=True)
        lines[5:25] = [f"{word} {path} {n}\n" for n in range(20)]
        repo.write(path, "".join(lines))

    for path in files:
        rewrite(path, "mine")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "Big\n\nPatchstack-Tag: essential")
    small = numbered(8, "s")
    repo.commit_steps(  # one fast-import for the 59 commits
        [
            (
                f"Small {i}\n\nPatchstack-Tag: essential",
                {f"s{i:02}.py": small.replace("s 3\n", f"mine {i}\n")},
            )
            for i in range(59)
        ]
    )
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for n, path in enumerate(files):
        rewrite(path, "theirs")
        if n % 25 == 0:
            repo.commit_all(f"upstream rewrites {path} and before")
    for i in range(59):
        repo.write(f"s{i:02}.py", repo.read(f"s{i:02}.py").replace("s 3\n", f"theirs {i}\n"))
    repo.commit_all("upstream rewrites the rest")
    repo.git("checkout", "-q", "main")

    check = repo.ps("check", "--onto", "up", "--patch", "Big.patch", code=1).stdout
    assert len(check.splitlines()) <= STOP_BUDGET, check  # the whole screen, report last
    report = check[check.index("conflict in patch Big.patch") :].splitlines()[:-1]
    assert report[1].startswith("  files (100): f000.py, f001.py") and "and 95 more" in report[1]
    assert "more conflicting hunk(s) in" in report[-1] and "--verbose" in report[-1]
    assert "      ... 34 more line(s) (--verbose)" in report  # 20 lines out, 20 in: 40, 6 shown
    full = repo.ps("check", "--onto", "up", "--patch", "Big.patch", "--verbose", code=1).stdout
    assert full.count("    the patch expected:") == 100 + 59
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    big = next(c for c in data["conflicts"] if c["patch"] == "Big.patch")
    assert len(big["hunks"]) == 100 and len(data["conflicts"]) == 60

    stop = repo.ps("refresh", "--onto", "up", code=1)
    lines = stop.stderr.splitlines()
    start = lines.index("conflict in patch Big.patch")
    end = next(i for i, ln in enumerate(lines) if ln.startswith("hint: "))
    assert end - start <= STOP_BUDGET, "\n".join(lines[start:end])
    assert len(stop.stdout.splitlines()) + len(lines) <= STOP_BUDGET


def test_a_stop_on_many_files_upstream_deleted_fits_a_screen(tmp_path) -> None:
    """A patch editing 30 files in three places each; upstream deleted them all, moving four
    of them into new files with much new code (relocated, not renamed): the stop and 'check
    --patch' name where moved code went within the line budget, the files with a relocated
    hunk first; --verbose names every hunk."""
    from patchstack.cli.conflicttext import STOP_BUDGET

    files = {f"d{i:02}.py": numbered(40, f"d{i:02}") for i in range(30)}
    repo = make_repo(tmp_path / "fork", {**files, "keep.py": "keep\n"})
    base = repo.head()
    repo.ps("init")
    for path in files:
        text = repo.read(path)
        for n in (5, 20, 35):
            text = text.replace(f"{path[:3]} {n}\n", f"{path[:3]} {n} mine\n")
        repo.write(path, text)
    repo.ps("new", "Moved", "--tag", "essential")
    repo.git("checkout", "-q", "-b", "up", base)
    for k, path in enumerate(files):
        repo.git("rm", "-q", path)
        if k >= 26:  # moved into a new file among much new code: not a rename
            repo.write(f"lib/n{k}.py", "".join(f"new {k} {j}\n" for j in range(150)) + files[path])
    repo.commit_all("upstream moves four modules and drops the rest")
    repo.git("checkout", "-q", "main")

    check = repo.ps("check", "--onto", "up", "--patch", "Moved.patch", code=1).stdout
    assert len(check.splitlines()) <= STOP_BUDGET, check  # the whole screen, report last
    report = check[check.index("conflict in patch Moved.patch") :].splitlines()[:-1]
    assert report[1].startswith("  relocated d26.py -> lib/n26.py by "), report[1]
    assert "more file(s) upstream deleted or moved code out of" in "\n".join(report)
    full = repo.ps("check", "--onto", "up", "--patch", "Moved.patch", "--verbose", code=1).stdout
    assert full.count(" not relocated: ") == 26 * 3 and full.count(") -> line ") == 4 * 3
    # a hunk's line names no path its file's line above names (kernel-timers' stop said each
    # hunk's two paths again): "hunk 2 (line 20) -> line 170"
    assert (
        "    hunk 1 (line 2) -> line 152\n" in full and "    hunk 1 (line 2) not relocated" in full
    )

    stop = repo.ps("refresh", "--onto", "up", code=1)
    lines = stop.stderr.splitlines()
    start = lines.index("conflict in patch Moved.patch")
    end = next(i for i, ln in enumerate(lines) if ln.startswith("hint: "))
    assert end - start <= STOP_BUDGET, "\n".join(lines[start:end])


def test_a_stop_lists_the_latest_deferred_patches_and_counts_the_earlier_ones(tmp_path) -> None:
    """Stop by stop through 12 conflicts: each stop names the latest `DEFERRED_SHOWN`
    deferred patches and one line counts the earlier ones (a stop listed every earlier stop's
    patch again: on a long series that outgrew the screen); --verbose names every one."""
    from patchstack.cli.output import DEFERRED_SHOWN

    repo = make_repo(tmp_path / "fork", {f"m{i:02}.py": numbered(12, f"m{i}") for i in range(12)})
    base = repo.head()
    for i in range(12):
        repo.write(f"m{i:02}.py", repo.read(f"m{i:02}.py").replace(f"m{i} 6\n", f"mine {i}\n"))
        repo.git("commit", "-q", "-a", "-m", f"Patch {i}\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for i in range(12):
        repo.write(f"m{i:02}.py", repo.read(f"m{i:02}.py").replace(f"m{i} 6\n", f"theirs {i}\n"))
    repo.commit_all("upstream rewrites line 6 everywhere")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", code=1)
    for _ in range(10):
        step = repo.ps("refresh", "--skip", code=1)
    lines = step.stdout.splitlines()
    named = [ln for ln in lines if ln.startswith("  deferred  Patch-")]
    assert named == [f"  deferred  Patch-{i}.patch" for i in range(10 - DEFERRED_SHOWN, 10)]
    assert lines[1] == (
        f"  deferred  {10 - DEFERRED_SHOWN} earlier patch(es) (--verbose lists them;"
        " 'patchstack status' marks each)"
    )
    assert lines[-1] == "  conflict  Patch-10.patch" and len(lines) == DEFERRED_SHOWN + 3
    # its place in the series, the deferred ones counted (it said "patch 1 of 12")
    assert "conflict in Patch-10.patch (patch 11 of 12, onto" in repo.ps("status", code=1).stdout
    verbose = repo.ps("refresh", "--skip", "--verbose", code=1).stdout
    assert all(f"  deferred  Patch-{i}.patch" in verbose for i in range(11))
    done = repo.ps("refresh", "--skip").stdout  # the end of the refresh is no stop: every one
    assert all(f"  deferred  Patch-{i}.patch" in done for i in range(12))


def test_a_stop_counts_no_knock_on_the_deferred_summary_names(tmp_path) -> None:
    """A skip that defers its patch and eight knock-ons of it, then stops: the knock-ons are
    in the deferred summary (one line for the root's), not counted again as earlier
    deferred patches."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(12, "a"), "b.py": numbered(12, "b")})
    base = repo.head()
    repo.write("a.py", repo.read("a.py").replace("a 6\n", "mine 0\n"))
    repo.git("commit", "-q", "-a", "-m", "Patch 0\n\nPatchstack-Tag: essential")
    for k in range(1, 9):
        repo.write("a.py", repo.read("a.py").replace(f"mine {k - 1}\n", f"mine {k}\n"))
        repo.git("commit", "-q", "-a", "-m", f"Patch {k}\n\nPatchstack-Tag: essential")
    repo.write("b.py", repo.read("b.py").replace("b 6\n", "mine b\n"))
    repo.git("commit", "-q", "-a", "-m", "Patch 9\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", repo.read("a.py").replace("a 6\n", "theirs\n"))
    repo.write("b.py", repo.read("b.py").replace("b 6\n", "theirs\n"))
    repo.commit_all("upstream rewrites line 6")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up", code=1)
    step = repo.ps("refresh", "--skip", code=1)
    assert "conflict in patch Patch-9.patch" in step.stderr
    assert "earlier patch(es)" not in step.stdout, step.stdout
    assert "Patch-0.patch" in step.stdout, step.stdout


def test_a_whole_stop_fits_the_budget_after_many_patches_placed(tmp_path) -> None:
    """Twelve patches upstream took, then one conflicting in 30 files: the stop's whole
    screen (the patch lines above the report, the report, the hint) keeps to `STOP_BUDGET`;
    the report keeps at least `REPORT_FLOOR` lines, the earliest patch lines are counted in
    one line, and --verbose lists every one (real stops on kernel-timers and weight-sync
    printed 72-74 lines: each a full report under a dozen patch lines)."""
    from patchstack.cli.conflicttext import REPORT_FLOOR, STOP_BUDGET

    taken = {f"u{i:02}.py": numbered(12, f"u{i:02}") for i in range(12)}
    big = {f"c{i:02}.py": numbered(40, f"c{i:02}") for i in range(30)}
    repo = make_repo(tmp_path / "fork", {**taken, **big})
    base = repo.head()
    for path in taken:
        repo.write(path, repo.read(path).replace(f"{path[:3]} 6\n", f"{path[:3]} six\n"))
        repo.git("commit", "-q", "-a", "-m", f"Take {path[:3]}\n\nPatchstack-Tag: essential")
    for path in big:
        repo.write(path, repo.read(path).replace(f"{path[:3]} 20\n", f"mine {path}\n"))
    repo.git("commit", "-q", "-a", "-m", "Big\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    for path in taken:  # upstream makes the twelve patches' changes itself
        repo.write(path, repo.read(path).replace(f"{path[:3]} 6\n", f"{path[:3]} six\n"))
    for path in big:
        repo.write(path, repo.read(path).replace(f"{path[:3]} 20\n", f"theirs {path}\n"))
    repo.commit_all("upstream takes twelve changes and rewrites line 20 everywhere")
    repo.git("checkout", "-q", "main")

    stop = repo.ps("refresh", "--onto", "up", code=1)
    above, below = stop.stdout.splitlines(), stop.stderr.splitlines()
    assert len(above) + len(below) <= STOP_BUDGET, stop.stdout + stop.stderr
    start = below.index("conflict in patch Big.patch")
    assert len(below) - start >= REPORT_FLOOR
    assert any(ln.startswith("  ... ") and "placed before these" in ln for ln in above), above
    assert above[-1] == "  conflict  Big.patch"
    assert sum(ln.startswith("  upstream  Take-") for ln in above) < 12
    verbose = repo.ps("refresh", "--abort").stdout  # back, then the same stop with --verbose
    assert "aborted" in verbose
    full = repo.ps("refresh", "--onto", "up", "--verbose", code=1).stdout
    assert all(f"  upstream  Take-u{i:02}.patch" in full for i in range(12))


def test_a_summary_line_of_long_names_is_capped_and_verbose_and_json_keep_all(tmp_path) -> None:
    """Names as `import branch` makes them (up to 60 characters) and an upstream subject of 90:
    the root's line cuts the subject to `SUBJECT_SHOWN` characters and its knock-ons' line names
    the first that fit in `LINE_WIDTH` (`cli.output.some_names`), then counts the rest; with
    --verbose both are whole, and --json names every knock-on."""
    from patchstack.cli.conflicttext import SUBJECT_SHOWN
    from patchstack.cli.output import LINE_WIDTH

    repo = make_repo(tmp_path / "fork", {"a.py": numbered(40, "a")})
    base = repo.head()
    repo.ps("init")
    root = "root-patch-that-creates-the-module-and-changes-the-tenth-line"
    repo.write("a.py", repo.read("a.py").replace("a 10\n", "a 10 mine\n"))
    repo.write("new.py", numbered(10, "new"))
    repo.ps("new", root, "--tag", "essential", "a.py", "new.py")
    waiting = [
        f"knock-on-{k}-tunes-line-{k}-of-the-module-its-root-patch-creates" for k in range(5)
    ]
    for k, name in enumerate(waiting):
        repo.write("new.py", repo.read("new.py").replace(f"new {k + 1}\n", f"new {k + 1} tuned\n"))
        repo.ps("new", name, "--tag", "essential")
    subject = "upstream reworks line 10 of a.py, " + "and says at length why it had to " * 2
    repo.git("checkout", "-q", "-b", "up", base)
    repo.write("a.py", repo.read("a.py").replace("a 10\n", "a 10 upstream\n"))
    repo.commit_all(subject.strip())
    repo.git("checkout", "-q", "main")

    out = repo.ps("check", "--onto", "up", code=1).stdout.splitlines()
    knock = next(ln for ln in out if "knock-on(s) waiting for it" in ln)
    assert knock == f"      + 5 knock-on(s) waiting for it: {waiting[0]}.patch and 4 more"
    line = next(ln for ln in out if f"conflict  {root}.patch" in ln)
    assert line.endswith(subject[: SUBJECT_SHOWN - 3].rstrip() + "...")
    assert all(len(ln) <= 2 * LINE_WIDTH for ln in out)
    verbose = repo.ps("check", "--onto", "up", "--verbose", code=1).stdout
    assert f"+ 5 knock-on(s) waiting for it: {', '.join(w + '.patch' for w in waiting)}" in verbose
    assert subject.strip() in verbose
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    knock_ons = [c["patch"] for c in data["conflicts"] if c["kind"] == "knock-on"]
    assert knock_ons == [w + ".patch" for w in waiting]


def test_a_conflict_line_names_the_file_its_upstream_commit_changed() -> None:
    """A summary line names a file and an upstream commit side by side: the commit is one
    that changed that file (the first hunk traced to one), not the first file's name beside
    another file's commit (dflash_v2: 12 of 38 lines were so before)."""
    from patchstack.cli.conflicttext import conflict_summary
    from patchstack.model.conflict import Conflict, ConflictHunk, UpstreamCommit

    made = UpstreamCommit("1" * 40, "upstream changed b")
    c = Conflict(
        "p.patch",
        ("a.py", "b.py", "c.py"),
        hunks=(
            ConflictHunk("a.py", 3, ("x",), ("y",), ("z",)),
            ConflictHunk("b.py", 7, ("x",), ("y",), ("z",), upstream=(made,), traced=True),
        ),
    )
    line = conflict_summary([c])[1]
    assert line.endswith(" p.patch  b.py (+2 more)  1111111111 upstream changed b"), line
    untraced = Conflict("q.patch", ("a.py", "b.py"), hunks=(c.hunks[0],))
    assert conflict_summary([untraced])[1].endswith(" q.patch  a.py (+1 more)")
