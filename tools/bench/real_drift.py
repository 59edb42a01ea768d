"""A real drift, side by side: a linear branch of a real repository (BASE..TIP) imported as a
series and moved onto today's upstream (ONTO) by patchstack, against ``git rebase`` skipping
every conflict plus ``git format-patch`` (what a fork without patchstack runs).

    python tools/bench/real_drift.py --repo CLONE --range BASE..TIP --onto REF [--runs 3]

For each run, from the same starting state: ``patchstack check --onto ONTO``, ``patchstack
refresh --onto ONTO --defer-conflicts`` (then ``undo``), and ``git rebase`` of the same
commits in the same worktree (then put back), so that both pay the same file system for the
work-tree move. Prints wall and CPU seconds (medians), the ratios, and checks that the three
agree: the patches check and refresh leave out are the commits rebase skips, and refresh's
tree is rebase's. It also times that move alone (``git read-tree -m -u`` from TIP's tree to
ONTO's, as refresh runs it): no refresh can be faster than the move, so ``rebase / move``
bounds the refresh ratio any tool can reach on the machine. Nothing in CLONE changes but a
scratch worktree and branch, removed at the end.
A branch with merges is linearized first (``patchstack import branch`` onboards those).

    python tools/bench/real_drift.py --stops FORK --onto REF [--runs 3] [--code DIR ...]

times the moments a maintainer waits on at a terminal, from FORK, a clone whose series is
imported (``import branch``, merges and all) and pushed, copied afresh for each run: the first
stop (``refresh --onto``, against ``git rebase --onto`` to its first stop) and the stop-by-stop
path (``refresh --onto`` then ``refresh --skip`` at every stop, against ``git rebase`` with
``--skip`` at every stop + ``format-patch``), wall and CPU, medians; with ``--code DIR`` (a
copy of a version's ``patchstack`` package; repeated: before and after a change) those
versions are timed instead of this one, in the same runs, and must print the same stops."""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "NO_COLOR": "1",
}
# patchstack runs as an installed copy runs, from bytecode (pip compiles it at install): with
# PYTHONDONTWRITEBYTECODE set, every command would compile every module first (0.2-0.3 s).
ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def run(argv: list[str], cwd: Path, check: bool = True) -> tuple[str, float, float]:
    """(stdout, wall seconds, CPU seconds of the children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if check and proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout, wall, cpu


def git(cwd: Path, *args: str) -> str:
    return run(["git", *args], cwd)[0].strip()


def ps(cwd: Path, *args: str) -> tuple[str, float, float]:
    return run([sys.executable, "-m", "patchstack", *args], cwd)


def rebase(fork: Path, base: str, onto: str, scratch: Path) -> dict[str, object]:
    """git rebase of BASE..HEAD onto ONTO in FORK (the work tree refresh moves, so both pay
    the same file system), each conflict skipped, then format-patch; FORK's branch and work
    tree are then put back, untimed."""
    head = git(fork, "rev-parse", "HEAD")
    state = Path(git(fork, "rev-parse", "--path-format=absolute", "--git-path", "rebase-merge"))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        skipped: list[str] = []
        argv = ["git", "rebase", "-q", "--reapply-cherry-picks", "--onto", onto, base]
        proc = subprocess.run(argv, cwd=fork, env=ENV, capture_output=True)
        while proc.returncode and state.exists():
            last = (state / "done").read_text().splitlines()[-1].split()[1]
            skipped.append(git(fork, "rev-parse", last))
            proc = subprocess.run(
                ["git", "rebase", "--skip"], cwd=fork, env=ENV, capture_output=True
            )
        out = scratch / "format-patch"
        subprocess.run(
            ["git", "format-patch", "-q", "-o", str(out), f"{onto}..HEAD"], cwd=fork, env=ENV
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        tree = git(fork, "rev-parse", "HEAD^{tree}")
        shutil.rmtree(out, ignore_errors=True)
    finally:
        if state.exists():
            run(["git", "rebase", "--abort"], fork, check=False)
        git(fork, "reset", "-q", "--hard", head)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "skipped": skipped, "tree": tree}


def move(fork: Path, onto: str) -> tuple[float, float]:
    """Wall and CPU seconds of the work-tree move refresh makes in FORK, from its HEAD's tree
    to ONTO's (``read-tree -m -u`` with git's parallel checkout, as `Worktree.checkout_tree`
    runs it), then moved back untimed."""
    workers = f"checkout.workers={min(8, os.cpu_count() or 1)}"
    _out, wall, cpu = run(["git", "-c", workers, "read-tree", "-m", "-u", "HEAD", onto], fork)
    git(fork, "read-tree", "-m", "-u", onto, "HEAD")
    return wall, cpu


def first_stop(fork: Path, base: str, onto: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``git rebase --onto`` to its first stop, then aborted."""
    argv = ["git", "rebase", "-q", "--reapply-cherry-picks", "--onto", onto, base]
    _out, wall, cpu = run(argv, fork, check=False)
    run(["git", "rebase", "--abort"], fork, check=False)
    return wall, cpu


def stop_by_stop(
    fork: Path, onto: str, code: str | None
) -> tuple[float, float, float, float, list[str]]:
    """(first stop wall, CPU, all stops wall, CPU, what each stop printed) of ``refresh
    --onto`` then ``--skip`` at each stop, run by the package in ``code`` (None: this one)."""
    env = dict(ENV, **({"PYTHONPATH": code} if code else {}))

    def ps_at(*args: str) -> tuple[int, str, float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        argv = [sys.executable, "-m", "patchstack", *args]
        proc = subprocess.run(argv, cwd=fork, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            sys.exit(f"patchstack {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc.returncode, proc.stderr, wall, cpu

    code_, said, wall, cpu = ps_at("refresh", "--onto", onto)
    first = (wall, cpu)
    stops = [said] if code_ == 1 else []
    while code_ == 1:
        code_, said, w, c = ps_at("refresh", "--skip")
        wall, cpu = wall + w, cpu + c
        if code_ == 1:
            stops.append(said)
    return first[0], first[1], wall, cpu, stops


def stops_main(args: argparse.Namespace) -> None:
    """``--stops FORK``: the first stop and the stop-by-stop path (see the docstring)."""
    src = args.stops.resolve()
    onto = git(src, "rev-parse", args.onto)
    base = json.loads(ps(src, "series", "--json")[0])["base"]
    for code in args.code:
        compileall.compile_dir(str(Path(code) / "patchstack"), quiet=1)
    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "patchstack"), quiet=1)
    versions: list[str | None] = [str(Path(c).resolve()) for c in args.code] or [None]
    keys = ["git", *[f"patchstack {v or 'this'}" for v in versions]]
    first: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    every: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    printed: dict[str, list[str]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="real-drift-stops."))
    try:
        for _ in range(args.runs):
            for key, version in [("git", None), *zip(keys[1:], versions, strict=True)]:
                fork = scratch / "fork"
                shutil.rmtree(fork, ignore_errors=True)
                subprocess.run(["cp", "-a", str(src), str(fork)], check=True)
                # (a copy's index holds stale stat data: refreshed untimed, as a user's is)
                git(fork, "update-index", "-q", "--refresh")
                if key == "git":
                    first[key].append(first_stop(fork, base, onto))
                    got = rebase(fork, base, onto, scratch)
                    every[key].append((float(got["wall"]), float(got["cpu"])))  # type: ignore[arg-type]
                    continue
                w1, c1, w, c, stops = stop_by_stop(fork, onto, version)
                first[key].append((w1, c1))
                every[key].append((w, c))
                printed.setdefault(key, stops)
        same = len({tuple(v) for v in printed.values()}) <= 1
        if args.save:
            for i, (k, said) in enumerate(printed.items()):
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{i}.txt").write_text(f"{k}\n" + "\n=====\n".join(said))
        med = {
            k: {
                "first_wall": statistics.median(x[0] for x in first[k]),
                "first_cpu": statistics.median(x[1] for x in first[k]),
                "stops_wall": statistics.median(x[0] for x in every[k]),
                "stops_cpu": statistics.median(x[1] for x in every[k]),
            }
            for k in keys
        }
        stops = {k: len(v) for k, v in printed.items()}
        if args.json:
            print(json.dumps({"onto": args.onto, "medians": med, "stops": stops, "same": same}))
            return
        print(f"{src.name} onto {args.onto}: medians of {args.runs} (wall s / CPU s)")
        for k in keys:
            m = med[k]
            print(
                f"  {k:<40} first stop {m['first_wall']:6.2f} / {m['first_cpu']:6.2f}"
                f"   every stop skipped {m['stops_wall']:6.2f} / {m['stops_cpu']:6.2f}"
                + (f"  ({stops[k]} stops)" if k in stops else "")
            )
        g = med["git"]
        for k in keys[1:]:
            m = med[k]
            print(
                f"  {k}: first stop {m['first_wall'] / g['first_wall']:.2f}x git's wall,"
                f" {m['first_cpu'] / g['first_cpu']:.2f}x CPU; stop by stop"
                f" {m['stops_wall'] / g['stops_wall']:.2f}x wall,"
                f" {m['stops_cpu'] / g['stops_cpu']:.2f}x CPU"
            )
        print(f"  every version printed {'the same stops' if same else 'DIFFERENT stops'}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, help="a clone holding the branch")
    ap.add_argument("--range", help="BASE..TIP, a linear branch")
    ap.add_argument("--stops", type=Path, metavar="FORK", help="time the stops (see above)")
    ap.add_argument("--code", action="append", default=[], metavar="DIR", help="with --stops")
    ap.add_argument("--onto", required=True, help="today's upstream")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--save", type=Path, metavar="DIR", help="with --stops: each stop's output")
    args = ap.parse_args()
    if args.stops:
        return stops_main(args)
    if not args.repo or not args.range:
        ap.error("--repo and --range (or --stops FORK)")
    repo = args.repo.resolve()
    base_ref, tip_ref = args.range.split("..")
    base, tip = git(repo, "rev-parse", base_ref), git(repo, "rev-parse", tip_ref)
    onto = git(repo, "rev-parse", args.onto)
    if git(repo, "rev-list", "--merges", f"{base}..{tip}"):
        sys.exit(f"{args.range} has merges: linearize it first")
    commits = git(repo, "rev-list", "--reverse", f"{base}..{tip}").split()
    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "patchstack"), quiet=1)
    scratch = Path(tempfile.mkdtemp(prefix="real-drift."))
    fork = scratch / "fork"
    # The worktree shares CLONE's cache (its common git dir): put back as it was at the end,
    # so that nothing this run kept speeds a later run on CLONE or on a copy of it.
    common = Path(git(repo, "rev-parse", "--git-common-dir"))
    original_cache = (common if common.is_absolute() else repo / common) / "patchstack" / "cache"
    original = original_cache.read_bytes() if original_cache.exists() else None
    git(repo, "worktree", "add", "-q", "-B", "patchstack-bench", str(fork), base)
    try:
        ps(fork, "init")
        ps(fork, "import", "commits", f"{base}..{tip}", "--tag", "essential")
        _out, push_wall, _cpu = ps(fork, "push", "--all")
        assert git(fork, "rev-parse", "HEAD^{tree}") == git(repo, "rev-parse", f"{tip}^{{tree}}")
        names = json.loads(ps(fork, "series", "--json")[0])["patches"]
        applied = git(fork, "rev-list", "--reverse", f"{base}..HEAD").split()
        by_commit = {c: p["name"] for c, p in zip(applied, names, strict=True)}
        figures: dict[str, list[float]] = {k: [] for k in ("check", "refresh", "rebase", "move")}
        cpus: dict[str, list[float]] = {k: [] for k in figures}
        agree = True
        # Each run is a user's day: a first check after a fetch, then the refresh after it.
        # What a refresh keeps (proofs, walks) would make the next run's check a second one:
        # the cache is put back as the push left it before each run.
        common = Path(git(fork, "rev-parse", "--git-common-dir"))
        cache = (common if common.is_absolute() else fork / common) / "patchstack" / "cache"
        kept = cache.read_bytes() if cache.exists() else None
        for _ in range(args.runs):
            if kept is not None:
                cache.write_bytes(kept)
            elif cache.exists():
                cache.unlink()
            # Timed as a user runs them (--json traces every hunk, the screen only the
            # printed ones); the sets compared are read after, untimed.
            _out, wall, cpu = ps(fork, "check", "--onto", onto)
            figures["check"].append(wall)
            cpus["check"].append(cpu)
            out = ps(fork, "check", "--onto", onto, "--json")[0]
            checked = {c["patch"] for c in json.loads(out)["conflicts"]}
            _out, wall, cpu = ps(fork, "refresh", "--onto", onto, "--defer-conflicts")
            marks = json.loads(ps(fork, "series", "--json")[0])["patches"]
            deferred = {  # (a no-op deferred with its root is no conflict: rebase empties it)
                p["name"]
                for p in marks
                if (p["mark"] or {}).get("kind") == "deferred" and not p["mark"].get("no_op")
            }
            tree = git(fork, "rev-parse", "HEAD^{tree}")
            figures["refresh"].append(wall)
            cpus["refresh"].append(cpu)
            ps(fork, "undo")
            got = rebase(fork, base, onto, scratch)
            figures["rebase"].append(float(got["wall"]))  # type: ignore[arg-type]
            cpus["rebase"].append(float(got["cpu"]))  # type: ignore[arg-type]
            skipped = {by_commit[c] for c in got["skipped"]}  # type: ignore[attr-defined]
            agree = agree and checked == skipped == deferred and tree == got["tree"]
            wall, cpu = move(fork, onto)
            figures["move"].append(wall)
            cpus["move"].append(cpu)
        med = {k: statistics.median(v) for k, v in figures.items()}
        med_cpu = {k: statistics.median(v) for k, v in cpus.items()}
        result = {
            "range": args.range,
            "onto": args.onto,
            "patches": len(commits),
            "upstream_commits": int(git(repo, "rev-list", "--count", f"{base}..{onto}")),
            "conflicts": len(checked),
            "push_all": push_wall,
            "wall": med,
            "cpu": med_cpu,
            "ratio_check": med["rebase"] / med["check"],
            "ratio_refresh": med["rebase"] / med["refresh"],
            "bound_refresh": med["rebase"] / med["move"],
            # issue 35's measure: what each does beyond the work-tree move both must make
            "ratio_refresh_less_move": (med["rebase"] - med["move"])
            / (med["refresh"] - med["move"]),
            "ratio_cpu_check": med_cpu["rebase"] / med_cpu["check"],
            "ratio_cpu_refresh_less_move": (med_cpu["rebase"] - med_cpu["move"])
            / (med_cpu["refresh"] - med_cpu["move"]),
            "agree": agree,
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(
                f"{args.range} onto {args.onto}: {len(commits)} patches,"
                f" {result['upstream_commits']} upstream commits, {len(checked)} conflicts;"
                f" medians of {args.runs}"
            )
            for k in ("check", "refresh", "rebase"):
                print(f"  {k:<8} {med[k]:6.2f} s wall  {med_cpu[k]:6.2f} s CPU")
            print(
                f"  work-tree move (read-tree -m -u) {med['move']:.2f} s wall"
                f" {med_cpu['move']:.2f} s CPU: no refresh beats"
                f" rebase by more than {result['bound_refresh']:.2f}x here"
            )
            print(
                f"  rebase+format-patch / check: {result['ratio_check']:.2f}x,"
                f" / refresh --defer-conflicts: {result['ratio_refresh']:.2f}x;"
                f" conflict sets and trees {'agree' if agree else 'DIFFER'}"
            )
            print(
                f"  (rebase - move) / (refresh - move): {result['ratio_refresh_less_move']:.2f}x"
                f" wall, {result['ratio_cpu_refresh_less_move']:.2f}x CPU;"
                f" rebase / check in CPU: {result['ratio_cpu_check']:.2f}x"
            )
    finally:
        if original is not None:
            original_cache.write_bytes(original)
        elif original_cache.exists():
            original_cache.unlink()
        git(repo, "worktree", "remove", "--force", str(fork))
        git(repo, "branch", "-D", "patchstack-bench")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
