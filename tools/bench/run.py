#!/usr/bin/env python3
"""Benchmark patchstack against its peers (issues 8 and 16). See tools/bench/README.md.

    python tools/bench/run.py                 # 10,000 files; 10, 100 and 1,000 patches; 3 runs
    python tools/bench/run.py --quick         # smoke run: 2,000 files; 10 and 100 patches; 1 run
    PATCHSTACK_BENCH_REPO=/path/to/clone python tools/bench/run.py

Stdlib only. Peers that are not installed are reported as "n/a", and so is patchstack while its
commands fail (with the first line of the error).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import gen  # noqa: E402

SLOW = 60.0  # seconds: a peer operation slower than this is timed once
# The full replay: onto the upstream move without conflicts, where every tool runs to the end
# and every result tree is checked (refresh rewrites the patch files; its peer is `git rebase`
# followed by `git format-patch`). patchstack and `git rebase` are timed `--runs` times, the
# slower peers once.
FULL = "refresh --onto moved-clean (full replay)"
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
NAME_RE = re.compile(r"\b(\d{4}-[A-Za-z0-9._-]+?)(?:\.patch)?(?=[\s,:;)'\"]|$)")


# --------------------------------------------------------------------------- processes


@dataclass
class Run:
    secs: float
    rc: int
    rss_kb: int
    out: str
    err: str
    cpu: float = 0.0  # user+sys seconds of the command and its children


class Env:
    """Environment shared by every command: isolated git config, fixed identities and dates."""

    def __init__(self, workdir: str, patchstack_cmd: list[str]):
        self.workdir = workdir
        self.ps = patchstack_cmd
        cfg = os.path.join(workdir, "gitconfig")
        with open(cfg, "w") as f:
            f.write(
                "[user]\n\tname = Bench Bot\n\temail = bench@example.invalid\n"
                "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n"
                "[advice]\n\tdetachedHead = false\n[core]\n\tpager = cat\n"
                "[init]\n\tdefaultBranch = main\n[rerere]\n\tenabled = false\n"
            )
        self.vars = dict(os.environ)
        for k in list(self.vars):
            if k.startswith(("GIT_", "QUILT_", "PATCHSTACK_")):
                del self.vars[k]
        # Run patchstack as an installed copy runs: from bytecode (pip compiles it at install,
        # as Debian does for StGit). With PYTHONDONTWRITEBYTECODE set, a checkout would
        # compile every module at every start (0.05-0.1 s per command on this machine).
        self.vars.pop("PYTHONDONTWRITEBYTECODE", None)
        compileall.compile_dir(os.path.join(PROJECT, "patchstack"), quiet=1)
        self.vars.update(
            {
                "GIT_CONFIG_GLOBAL": cfg,
                "GIT_CONFIG_NOSYSTEM": "1",
                "LC_ALL": "C",
                "GIT_AUTHOR_DATE": "1700000000 +0000",
                "GIT_COMMITTER_DATE": "1700000000 +0000",
                "GIT_EDITOR": "true",
                "EDITOR": "true",
                "PAGER": "cat",
                "PYTHONPATH": os.pathsep.join(
                    p for p in (PROJECT, os.environ.get("PYTHONPATH")) if p
                ),
            }
        )
        self.commands: dict[str, str] = {}  # label -> exact command line (for the report)
        self.subst: list[tuple[str, str]] = [(sys.executable, "python")]

    def run(
        self,
        cmd: list[str],
        cwd: str,
        extra: dict | None = None,
        label: str | None = None,
        check: bool = False,
    ) -> Run:
        env = dict(self.vars, **(extra or {}))
        # Peak memory: a child forked from this Python process inherits its RSS high-water mark,
        # so the command runs under /usr/bin/time (small), whose %M is the peak RSS of the
        # largest process of the command's tree. Without it, wait4's figure is an upper bound.
        memfile = os.path.join(self.workdir, "maxrss")
        full = [TIME, "-q", "-f", "%M", "-o", memfile, *cmd] if TIME else cmd
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(
                full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
            _, status, usage = os.wait4(p.pid, 0)
            secs = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            rss = usage.ru_maxrss
            if TIME:
                try:
                    with open(memfile) as f:
                        rss = int(f.read().split()[-1])
                except (OSError, ValueError, IndexError):
                    pass
            out.seek(0)
            err.seek(0)
            r = Run(
                secs,
                p.returncode,
                rss,
                out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"),
                usage.ru_utime + usage.ru_stime,
            )
        if label and label not in self.commands:
            self.commands[label] = self.show(cmd, extra)
        if check and r.rc != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed ({r.rc}): {first_line(r)}")
        return r

    def show(self, cmd: list[str], extra: dict | None) -> str:
        """The command as the report shows it: placeholders for paths, commits, patch lists."""
        pre = " ".join(f"{k}={shlex.quote(v)}" for k, v in (extra or {}).items())
        text = (pre + " " if pre else "") + shlex.join(cmd)
        for real, placeholder in self.subst:
            text = text.replace(real, placeholder)
        text = re.sub(r"(series|pile)-\d+", r"\1-<N>", text)
        return re.sub(r"(\S+/0001-\S+\.patch)( \S+\.patch)+", r"\1 ... (the N patch files)", text)

    def git(self, cwd: str, *args: str) -> str:
        return self.run(["git", *args], cwd, check=True).out.strip()


def first_line(r: Run) -> str:
    text = r.err.strip() or r.out.strip()
    if not text:
        return f"exit status {r.rc}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines[0].startswith("Traceback"):
        return lines[-1][:160]
    return lines[0][:160]


# --------------------------------------------------------------------------- results


@dataclass
class Cell:
    op: str
    tool: str
    times: list[float] = field(default_factory=list)
    rss_kb: int = 0
    check: str = ""
    error: str | None = None
    per: int = 0  # patches the operation worked on (for ms/patch)
    note: str = ""

    def add(self, r: Run, check: str = "") -> None:
        self.times.append(r.secs)
        self.rss_kb = max(self.rss_kb, r.rss_kb)
        if check and (not self.check or self.check.startswith("ok")):
            self.check = check

    def fail(self, msg: str) -> None:
        if self.error is None:
            self.error = msg

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times and not self.error else None


class Table:
    def __init__(self):
        self.cells: dict[tuple[str, str], Cell] = {}

    def cell(self, op: str, tool: str, per: int = 0) -> Cell:
        key = (op, tool)
        if key not in self.cells:
            self.cells[key] = Cell(op, tool, per=per)
        return self.cells[key]


# --------------------------------------------------------------------------- work trees


class Workspace:
    def __init__(self, env: Env, fixture: str, name: str):
        self.env = env
        self.repo = os.path.join(fixture, "repo.git")
        self.path = os.path.join(fixture, "ws", name)

    def fresh(self) -> str:
        if os.path.exists(self.path):
            shutil.rmtree(self.path)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.env.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", self.repo, self.path],
            os.path.dirname(self.path),
            check=True,
        )
        with open(os.path.join(self.path, ".git", "info", "exclude"), "a") as f:
            f.write(".pc/\n")
        return self.path

    def reset(self, rev: str, branch: str = "work") -> None:
        g = self.env.git
        for d in ("rebase-apply", "rebase-merge"):
            if os.path.exists(os.path.join(self.path, ".git", d)):
                shutil.rmtree(os.path.join(self.path, ".git", d))
        g(self.path, "checkout", "-q", "-f", "-B", branch, rev)
        g(self.path, "clean", "-q", "-fdx")

    def head_tree(self) -> str:
        return self.env.git(self.path, "rev-parse", "HEAD^{tree}")

    def worktree_tree(self) -> str:
        """Tree of the work tree as it is on disk (tracked and untracked files, minus .pc)."""
        idx = os.path.join(self.path, ".git", "bench-index")
        src = os.path.join(self.path, ".git", "index")
        if os.path.exists(src):
            shutil.copyfile(src, idx)
        elif os.path.exists(idx):
            os.unlink(idx)
        extra = {"GIT_INDEX_FILE": idx}
        self.env.run(["git", "add", "-A", "."], self.path, extra, check=True)
        return self.env.run(["git", "write-tree"], self.path, extra, check=True).out.strip()


def verdict(got: str, want: str, what: str = "tree") -> str:
    return "ok" if got == want else f"MISMATCH ({what} {got[:10]} != expected {want[:10]})"


def tree_check(ws: Workspace, want: str, head: bool = True) -> str:
    """HEAD's tree (when `head`) and the work tree must both be `want`."""
    if head:
        got = ws.head_tree()
        if got != want:
            return verdict(got, want, "HEAD tree")
        # fast path: HEAD is right and nothing differs from it (index, work tree, untracked)
        st = ws.env.run(["git", "status", "--porcelain", "--untracked-files=all"], ws.path)
        if st.rc == 0 and not st.out.strip():
            return "ok"
    return verdict(ws.worktree_tree(), want, "work tree")


# --------------------------------------------------------------------------- references


class Fixture:
    def __init__(self, env: Env, workdir: str, info: dict):
        self.env = env
        self.dir = workdir
        self.info = info
        self.base = info["base"]
        self.moved = info["moved"]
        self.moved_clean = info["moved_clean"]
        self.chain = info["chain"]
        self.names = [p["name"] for p in info["patches"]]
        self.tags = [p["tag"] for p in info["patches"]]
        g = lambda *a: env.git(os.path.join(workdir, "repo.git"), *a)  # noqa: E731
        self.g = g
        self.base_tree = g("rev-parse", f"{self.base}^{{tree}}")

    def series_dir(self, n: int) -> str:
        return os.path.join(self.dir, f"series-{n}")

    def patch_files(self, n: int) -> list[str]:
        return [os.path.join(self.series_dir(n), name) for name in self.names[:n]]

    def tree(self, rev: str) -> str:
        return self.g("rev-parse", f"{rev}^{{tree}}")

    def no_diag_tree(self, n: int) -> str:
        """The chain's tree with every file that a diagnostic patch touched put back to base."""
        repo = os.path.join(self.dir, "repo.git")
        idx = os.path.join(self.dir, "nodiag-index")
        extra = {"GIT_INDEX_FILE": idx}
        self.env.run(["git", "read-tree", self.chain[n - 1]], repo, extra, check=True)
        paths: set[str] = set()
        for i in range(n):
            if self.tags[i] == "diagnostic":
                out = self.g("diff-tree", "--no-commit-id", "--name-only", "-r", self.chain[i])
                paths.update(out.splitlines())
        base_entries = {}
        if paths:
            out = self.g("ls-tree", "-r", self.base)
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                if path in paths:
                    base_entries[path] = meta
        info = []
        for path in sorted(paths):
            if path in base_entries:
                mode, _, sha = base_entries[path].split()
                info.append(f"{mode} {sha}\t{path}\n")
            else:
                info.append(f"0 {'0' * 40}\t{path}\n")
        p = subprocess.run(
            ["git", "update-index", "--index-info"],
            cwd=repo,
            input="".join(info),
            text=True,
            env=dict(self.env.vars, **extra),
            check=True,
        )
        del p
        return self.env.run(["git", "write-tree"], repo, extra, check=True).out.strip()


def replay(
    env: Env, ws: Workspace, tool: str, fx: Fixture, n: int, onto: str, label: str | None
) -> tuple[Run, list[str], list[str]]:
    """`git rebase` (tool "rebase") or `git am -3` (tool "am") of N patches onto `onto`,
    skipping every patch that conflicts. Returns (summed run, conflicting patches, the change
    each applied patch)."""
    if tool == "rebase":
        ws.reset(fx.chain[n - 1])
        cmd = ["git", "rebase", "-q", "--onto", onto, fx.base, "work"]
        cont = ["git", "rebase", "--skip"]
        state = "rebase-merge"
    else:
        ws.reset(onto)
        cmd = ["git", "am", "-q", "-3", *fx.patch_files(n)]
        cont = ["git", "am", "-q", "--skip"]
        state = "rebase-apply"
    total = env.run(cmd, ws.path, label=label)
    conflicts = []
    guard = 0
    while total.rc != 0 and os.path.isdir(os.path.join(ws.path, ".git", state)) and guard < n:
        guard += 1
        sdir = os.path.join(ws.path, ".git", state)
        if tool == "rebase":
            with open(os.path.join(sdir, "done")) as f:
                last = [ln for ln in f.read().splitlines() if ln.strip()][-1]
            sha = last.split()[1]
            full = env.git(ws.path, "rev-parse", sha)
            conflicts.append(fx.names[fx.chain.index(full)])
        else:
            with open(os.path.join(sdir, "next")) as f:
                conflicts.append(fx.names[int(f.read().strip()) - 1])
        r = env.run(cont, ws.path)
        rss = max(total.rss_kb, r.rss_kb)
        total = Run(total.secs + r.secs, r.rc, rss, r.out, r.err, total.cpu + r.cpu)
    if total.rc != 0:
        raise RuntimeError(f"{tool} onto {onto[:10]} failed: {first_line(total)}")
    return total, conflicts, per_patch(env, ws, onto)


def per_patch(env: Env, ws: Workspace, onto: str) -> list[str]:
    """What each commit of onto..HEAD changed: paths and blob ids (`--raw`), one per patch."""
    out = env.run(
        ["git", "log", "--reverse", "--raw", "--no-abbrev", "--format=%x01", f"{onto}..HEAD"],
        ws.path,
        check=True,
    ).out
    return [chunk.strip() for chunk in out.split("\x01")[1:]]


def misplaced(
    fx: Fixture, n: int, conflicts: list[str], raws: list[str], ref_raws: list[str]
) -> str:
    """The patches whose change (paths and blobs) differs from the reference replay's."""
    applied = [name for name in fx.names[:n] if name not in conflicts]
    bad = [name for name, a, b in zip(applied, raws, ref_raws, strict=False) if a != b]
    if len(raws) != len(ref_raws):
        bad.append(f"({len(raws)} commits, reference {len(ref_raws)})")
    shown = ", ".join(b[:4] for b in bad[:8]) + (" ..." if len(bad) > 8 else "")
    return f"{len(bad)} patches applied differently from the 3-way reference: {shown}"


def conflict_verdict(got: list[str], want: list[str]) -> str:
    if sorted(got) == sorted(want):
        return f"ok ({len(want)} conflicts)"
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    miss = ",".join(m[:4] for m in missing) or "-"
    more = ",".join(e[:4] for e in extra) or "-"
    return f"MISMATCH (conflicts: {len(got)} vs {len(want)} expected; missing {miss}; extra {more})"


# --------------------------------------------------------------------------- tools


def which(prog: str) -> bool:
    return shutil.which(prog) is not None


def bench_startup(env: Env, table: Table, runs: int, warmup: int) -> None:
    cands = [
        ("patchstack", [*env.ps, "--version"]),
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -c 'import git'", [sys.executable, "-c", "import git"]),
        ("git", ["git", "--version"]),
        ("quilt", ["quilt", "--version"]),
        ("stg", ["stg", "--version"]),
        ("git-pile", ["git", "pile", "--version"]),
    ]
    for tool, cmd in cands:
        c = table.cell("start-up (--version)", tool)
        if tool != "patchstack" and not which(cmd[0]):
            c.fail("not installed")
            continue
        for k in range(warmup + runs):
            r = env.run(cmd, PROJECT, label=f"start-up: {tool}")
            if r.rc != 0:
                c.fail(first_line(r))
                break
            if k >= warmup:
                c.add(r)


def bench_patchstack(
    env: Env, fx: Fixture, n: int, table: Table, runs: int, warmup: int, refs: dict
) -> None:
    tool = "patchstack"
    ws = Workspace(env, fx.dir, "patchstack")
    ops = {
        "cold": table.cell("push --all (cold, from patch files)", tool, n),
        "status": table.cell("status", tool, n),
        "pop": table.cell("pop --all", tool, n),
        "push2": table.cell("push --all (after pop --all)", tool, n),
        "popdiag": table.cell("pop --only diagnostic", tool, n),
        "check": table.cell("check --onto moved", tool, n),
        "refresh": table.cell("refresh --onto moved", tool, n),
        "exact": table.cell(FULL, tool, n),
    }
    want_top = fx.tree(fx.chain[n - 1])

    def ps(args, label, sdir):
        return env.run(
            [*env.ps, *args], ws.path, {"PATCHSTACK_DIR": sdir}, label=f"patchstack {label}"
        )

    def step(key, args, sdir, k, check=None, ok_rcs=(0,)):
        c = ops[key]
        if c.error:
            return False
        r = ps(args, " ".join(args), sdir)
        if r.rc not in ok_rcs or "Traceback (most recent call last)" in r.err:
            c.fail(first_line(r))
            return False
        chk = check(r) if check else ""
        if k >= warmup:
            c.add(r, chk)
        elif not c.check:
            c.check = chk
        return True

    for k in range(warmup + runs):
        ws.fresh()
        ws.reset(fx.base)
        sdir = os.path.join(fx.dir, "run-series")
        if os.path.exists(sdir):
            shutil.rmtree(sdir)
        shutil.copytree(fx.series_dir(n), sdir)
        if not step("cold", ["push", "--all"], sdir, k, lambda r: tree_check(ws, want_top)):
            for key in ops:
                ops[key].fail(ops[key].error or "needs push --all: " + (ops["cold"].error or ""))
            return
        step("status", ["status"], sdir, k, ok_rcs=(0, 1))
        if step("pop", ["pop", "--all"], sdir, k, lambda r: tree_check(ws, fx.base_tree)):
            step("push2", ["push", "--all"], sdir, k, lambda r: tree_check(ws, want_top))
            step(
                "popdiag",
                ["pop", "--only", "diagnostic"],
                sdir,
                k,
                lambda r: tree_check(ws, refs["nodiag"]),
            )
        step(
            "check",
            ["check", "--onto", fx.moved, "--json"],
            sdir,
            k,
            lambda r: conflict_verdict(json_conflicts(r), refs["conflicts"]),
            ok_rcs=(0, 1, 3),
        )
        ps(["push", "--all"], "push --all", sdir)
        step(
            "refresh",
            ["refresh", "--onto", fx.moved],
            sdir,
            k,
            # refresh stops at the first conflict (exit 1) for the user to resolve, as StGit
            # does; `check` is the run that lists every conflicting patch.
            lambda r: conflict_verdict(mentioned_conflicts(r), refs["conflicts"][:1]),
            ok_rcs=(0, 1, 3),
        )
    # the full replay onto the conflict-free move, every tree checked
    for k in range(warmup + runs):
        ws.fresh()
        ws.reset(fx.base)
        shutil.rmtree(sdir)
        shutil.copytree(fx.series_dir(n), sdir)
        if ps(["push", "--all"], "push --all", sdir).rc != 0:
            ops["exact"].fail("push --all failed")
            break
        step(
            "exact",
            ["refresh", "--onto", fx.moved_clean],
            sdir,
            k,
            lambda r: tree_check(ws, refs["clean_tree"]),
        )


def json_conflicts(r: Run) -> list[str]:
    """The conflicting patches of ``check --json`` (its text output groups knock-ons under
    their root, naming only the first few)."""
    try:
        return sorted(c["patch"] for c in json.loads(r.out)["conflicts"])
    except (ValueError, KeyError, TypeError):
        return mentioned_conflicts(r)


def mentioned_conflicts(r: Run) -> list[str]:
    """Patch names on output lines that mention a conflict (patchstack's report format is open)."""
    names = set()
    for line in (r.out + "\n" + r.err).splitlines():
        if "conflict" in line.lower():
            names.update(m.group(1) + ".patch" for m in NAME_RE.finditer(line))
    return sorted(names)


def bench_quilt(env, fx, n, table, runs, warmup, refs):
    tool = "quilt"
    c_push = table.cell("push --all (cold, from patch files)", tool, n)
    c_pop = table.cell("pop --all", tool, n)
    if not which("quilt"):
        for c in (c_push, c_pop):
            c.fail("not installed (apt-get install quilt)")
        return
    ws = Workspace(env, fx.dir, "quilt")
    ws.fresh()
    want_top = fx.tree(fx.chain[n - 1])
    qenv = {"QUILT_PATCHES": fx.series_dir(n)}
    q = ["quilt", "--quiltrc", "-"]
    for k in range(warmup + runs):
        ws.reset(fx.base)
        shutil.rmtree(os.path.join(ws.path, ".pc"), ignore_errors=True)
        for c, args, want in (
            (c_push, ["push", "-a", "-q"], want_top),
            (c_pop, ["pop", "-a", "-q"], fx.base_tree),
        ):
            r = env.run([*q, *args], ws.path, qenv, label=f"quilt {' '.join(args)}")
            if r.rc != 0:
                c.fail(first_line(r))
                break
            if k >= warmup or not c.check:
                chk = tree_check(ws, want, head=False)
                if k >= warmup:
                    c.add(r, chk)
                else:
                    c.check = chk


def bench_stg(env, fx, n, table, runs, warmup, refs):
    tool = "stg"
    cells = {
        "import": table.cell("push --all (cold, from patch files)", tool, n),
        "pop": table.cell("pop --all", tool, n),
        "push": table.cell("push --all (after pop --all)", tool, n),
        "rebase": table.cell("refresh --onto moved", tool, n),
        "exact": table.cell(FULL, tool, n),
    }
    if not which("stg"):
        for c in cells.values():
            c.fail("not installed (apt-get install stgit)")
        return
    ws = Workspace(env, fx.dir, "stg")
    ws.fresh()
    want_top = fx.tree(fx.chain[n - 1])
    series = os.path.join(fx.series_dir(n), "series")

    def setup(k, tag):
        ws.reset(fx.base, f"stg-{tag}-{k}")
        env.git(ws.path, "checkout", "-q", "-B", f"stg-{tag}-{k}", fx.base)
        r = env.run(["stg", "init"], ws.path)
        if r.rc != 0:
            raise RuntimeError(first_line(r))

    def timed(key, cmd, k, want=None, label=None):
        c = cells[key]
        r = env.run(cmd, ws.path, label=label or shlex.join(cmd))
        if r.rc != 0:
            c.fail(first_line(r))
            return None
        chk = tree_check(ws, want) if want else ""
        if k >= warmup:
            c.add(r, chk)
        elif not c.check:
            c.check = chk
        return r

    def exact():
        timed(
            "exact",
            ["stg", "rebase", fx.moved_clean],
            warmup,
            refs["clean_tree"],
            label="stg rebase <moved-clean>",
        )
        c = cells["exact"]
        if c.check and not c.check.startswith("ok"):
            raws = per_patch(env, ws, fx.moved_clean)
            c.check += "; " + misplaced(fx, n, refs["clean_conflicts"], raws, refs["clean_raws"])

    total = warmup + runs
    for k in range(total):
        setup(k, n)
        t0 = time.perf_counter()
        if not timed("import", ["stg", "import", "--series", series], k, want_top):
            for key in ("pop", "push", "rebase", "exact"):
                cells[key].fail("needs stg import")
            break
        # StGit 0.19's import slows down as the stack grows: past SLOW seconds, one run only
        slow = time.perf_counter() - t0 > SLOW and k >= warmup
        if slow:
            cells["import"].note = f"1 run: slower than {SLOW} s"
        if timed("pop", ["stg", "pop", "-a"], k, fx.base_tree):
            timed("push", ["stg", "push", "-a"], k, want_top)
        last = slow or k == total - 1
        if last:
            # exactness onto the conflict-free move, reusing this stack (saves an import);
            # the last rebase onto <moved> below then starts from <moved-clean>
            exact()
        # rebase: StGit 0.19 stops at the first conflict (with a traceback, and its stack
        # cannot be continued)
        c = cells["rebase"]
        r = env.run(["stg", "rebase", fx.moved], ws.path, label="stg rebase <moved>")
        top = env.run(["stg", "top"], ws.path).out.strip()
        if r.rc == 0:
            chk = conflict_verdict([], refs["conflicts"])
        else:
            first = refs["conflicts"][0] if refs["conflicts"] else "-"
            crashed = " (with a Python traceback)" if "Traceback" in r.err else ""
            done = fx.names.index(top) + 1 if top in fx.names else 0
            chk = (
                "ok" if top == first else "MISMATCH"
            ) + f" (stopped at {top[:4] or '?'}{crashed}; reference's first conflict {first[:4]})"
            c.note = f"pops all {n}, stops at the first conflict after pushing {done}"
        if k >= warmup and not (last and c.times):
            c.add(r, chk)
        if slow:
            break


def bench_git(env, fx, n, table, runs, warmup, refs):
    ws = Workspace(env, fx.dir, "git")
    ws.fresh()
    want_top = fx.tree(fx.chain[n - 1])
    c_am = table.cell("push --all (cold, from patch files)", "git am -3", n)
    c_reset = table.cell("pop --all", "git reset --keep", n)
    c_status = table.cell("status", "git status", n)
    c_rebase = table.cell("refresh --onto moved", "git rebase", n)
    c_check = table.cell("check --onto moved", "git rebase", n)
    c_am_moved = table.cell("refresh --onto moved", "git am -3", n)
    for k in range(warmup + runs):
        ws.reset(fx.base)
        r = env.run(
            ["git", "am", "-q", "-3", *fx.patch_files(n)],
            ws.path,
            label="git am -3 <N patch files> (at base)",
        )
        if r.rc != 0:
            c_am.fail(first_line(r))
        elif k >= warmup:
            c_am.add(r, tree_check(ws, want_top))
        ws.reset(fx.chain[n - 1])
        r = env.run(["git", "status", "--porcelain"], ws.path, label="git status --porcelain")
        if k >= warmup:
            c_status.add(r)
        r = env.run(
            ["git", "reset", "-q", "--keep", fx.base],
            ws.path,
            label="git reset -q --keep <base> (from the chain's top)",
        )
        if r.rc != 0:
            c_reset.fail(first_line(r))
        elif k >= warmup:
            c_reset.add(r, tree_check(ws, fx.base_tree))
        for c, tool in ((c_rebase, "rebase"), (c_am_moved, "am")):
            label = (
                "git rebase -q --onto <moved> <base> work; git rebase --skip per conflict"
                if tool == "rebase"
                else "git am -q -3 <N patch files> (at moved); git am --skip per conflict"
            )
            try:
                r, conflicts, raws = replay(env, ws, tool, fx, n, fx.moved, label)
            except RuntimeError as e:
                c.fail(str(e))
                continue
            chk = conflict_verdict(conflicts, refs["conflicts"])
            if chk.startswith("ok") and raws != refs["moved_raws"]:
                chk = f"MISMATCH ({misplaced(fx, n, conflicts, raws, refs['moved_raws'])})"
            if k >= warmup:
                c.add(r, chk)
                if tool == "rebase":
                    c_check.add(r, chk)
    # the full replay onto the conflict-free move: `git rebase` then `git format-patch` (the
    # patch files rewritten, as refresh does) `runs` times, `git am -3` once
    c_fp = table.cell(FULL, "git rebase + format-patch", n)
    out = os.path.join(fx.dir, "format-patch-out")
    for k in range(warmup + runs):
        for tool, name in (("rebase", "git rebase"), ("am", "git am -3")):
            if tool == "am" and k != warmup + runs - 1:
                continue
            c = table.cell(FULL, name, n)
            try:
                r, conflicts, raws = replay(
                    env, ws, tool, fx, n, fx.moved_clean, f"{name} onto <moved-clean>"
                )
            except RuntimeError as e:
                c.fail(str(e))
                continue
            chk = conflict_verdict(conflicts, refs["clean_conflicts"])
            if chk.startswith("ok"):
                chk = verdict(ws.head_tree(), refs["clean_tree"])
                if not chk.startswith("ok"):
                    raw = misplaced(fx, n, refs["clean_conflicts"], raws, refs["clean_raws"])
                    chk += "; " + raw
            if k >= warmup or tool == "am":
                c.add(r, chk)
            if tool == "rebase":
                shutil.rmtree(out, ignore_errors=True)
                fp = env.run(
                    ["git", "format-patch", "-q", "-o", out, f"{fx.moved_clean}..HEAD"],
                    ws.path,
                    label="git format-patch -q -o <dir> <moved-clean>..HEAD (after the rebase)",
                )
                if fp.rc != 0:
                    c_fp.fail(first_line(fp))
                elif k >= warmup:
                    both = Run(r.secs + fp.secs, 0, max(r.rss_kb, fp.rss_kb), "", "")
                    c_fp.add(both, chk)


def bench_pile(env, fx, n, table, runs, warmup, refs):
    c = table.cell("push --all (cold, from patch files)", "git-pile genbranch", n)
    if not which("git-pile"):
        c.fail("not installed (pip install git-pile)")
        return
    ws = Workspace(env, fx.dir, "pile")
    ws.fresh()
    want_top = fx.tree(fx.chain[n - 1])
    pile = os.path.join(fx.dir, f"pile-{n}")
    for k in range(warmup + runs):
        ws.reset(fx.base)
        cmd = [
            "git",
            "pile",
            "--no-config",
            "genbranch",
            "-q",
            "--no-cache",
            "-f",
            "-e",
            pile,
            "-x",
            fx.base,
            "-b",
            "pile-result",
        ]
        r = env.run(cmd, ws.path, label="git pile genbranch (temporary worktree, --no-cache)")
        if r.rc != 0:
            c.fail(first_line(r))
            return
        got = env.git(ws.path, "rev-parse", "pile-result^{tree}")
        if k >= warmup:
            c.add(r, verdict(got, want_top))


# --------------------------------------------------------------------------- report

GROUPS = [
    ("push --all (cold, from patch files)", ["git am -3", "git-pile genbranch", "quilt", "stg"]),
    ("push --all (after pop --all)", ["stg"]),
    ("pop --all", ["git reset --keep", "quilt", "stg"]),
    ("pop --only diagnostic", []),
    ("refresh --onto moved", ["git rebase", "git am -3", "stg"]),
    ("check --onto moved", ["git rebase"]),
    ("status", ["git status"]),
    (FULL, ["git rebase + format-patch", "git rebase", "git am -3", "stg"]),
]
STARTUP = ["python -c pass", "python -c 'import git'", "git", "quilt", "stg", "git-pile"]


def rows_for(table: Table, n: int | None) -> list[list[str]]:
    rows = []
    groups = GROUPS if n is not None else [("start-up (--version)", STARTUP)]
    for op, peers in groups:
        ps = table.cells.get((op, "patchstack"))
        psm = ps.median if ps else None
        for tool in ["patchstack", *peers]:
            c = table.cells.get((op, tool))
            if c is None:
                continue
            m = c.median
            if m is None:
                rows.append([op, tool, "n/a", "", "", "", "n/a: " + (c.error or "no runs")])
                continue
            per = f"{1000 * m / c.per:.2f}" if c.per else ""
            ratio = f"{psm / m:.2f}" if (psm is not None and tool != "patchstack") else ""
            check = c.check or ""
            if c.note:
                check = f"{check}; {c.note}" if check else c.note
            rows.append([op, tool, f"{m:.3f}", per, ratio, f"{c.rss_kb / 1024:.0f}", check])
    return rows


HEAD = ["operation", "tool", "median s", "ms/patch", "patchstack/peer", "peak MB", "check"]


def text_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEAD, *rows]) for i in range(len(HEAD) - 1)]
    out = []
    last_op = None
    for r in [HEAD, *rows]:
        op = r[0] if r[0] != last_op else ""
        last_op = r[0]
        cells = [op.ljust(widths[0])] + [
            r[i].ljust(widths[i]) if i < 2 else r[i].rjust(widths[i])
            for i in range(1, len(HEAD) - 1)
        ]
        out.append("  ".join(cells) + "  " + r[-1])
    return "\n".join(out)


def md_table(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    last_op = None
    for r in rows:
        op = r[0] if r[0] != last_op else ""
        last_op = r[0]
        out.append("| " + " | ".join([op, *r[1:]]).replace("\n", " ") + " |")
    return "\n".join(out)


def targets(tables: dict[int, Table], startup: Table) -> list[str]:
    """The targets of issue 16, evaluated on the largest series."""
    n = max(tables)
    t = tables[n]

    def m(op, tool):
        c = t.cells.get((op, tool)) or startup.cells.get((op, tool))
        return c.median if c else None

    def ok(op, tool="patchstack"):
        c = t.cells.get((op, tool))
        return bool(c and c.check.startswith("ok"))

    ver = startup.cells.get(("start-up (--version)", "patchstack"))
    ver_m = ver.median if ver else None
    cold = m("push --all (cold, from patch files)", "patchstack")
    out = []

    def line(good, text, *vals):
        if any(v is None for v in vals):
            out.append(f"- n/a: {text}")
        else:
            out.append(f"- {'met' if good(*vals) else 'MISSED'}: {text}")

    P = "push --all (cold, from patch files)"
    line(
        lambda a, b: a * 3 <= b and ok(FULL),
        f"{n} patches: refresh (full replay, patch files rewritten) >= 3x faster than git rebase"
        " + git format-patch, same trees",
        m(FULL, "patchstack"),
        m(FULL, "git rebase + format-patch"),
    )
    line(
        lambda a, b: a * 3 <= b and ok("check --onto moved"),
        "check >= 3x faster than git rebase (skipping each conflict), same conflicts",
        m("check --onto moved", "patchstack"),
        m("check --onto moved", "git rebase"),
    )
    line(
        lambda a, b: a <= b,
        "push --all after pop --all no slower than stg push -a",
        m("push --all (after pop --all)", "patchstack"),
        m("push --all (after pop --all)", "stg"),
    )
    line(
        lambda a, v, r: a <= v + 1.5 * r,
        "pop --all <= --version + 1.5x git reset --keep",
        m("pop --all", "patchstack"),
        ver_m,
        m("pop --all", "git reset --keep"),
    )
    line(lambda a: a < 0.3, "status under 0.3 s", m("status", "patchstack"))
    line(lambda a, b: a * 4 <= b, "push --all >= 4x faster than git am -3", cold, m(P, "git am -3"))
    line(
        lambda a, b: a < b,
        "push --all faster than git-pile genbranch",
        cold,
        m(P, "git-pile genbranch"),
    )
    line(
        lambda a, b: a <= b,
        "pop --only diagnostic no slower than a cold push --all",
        m("pop --only diagnostic", "patchstack"),
        cold,
    )
    line(lambda a: a < 0.15, "patchstack --version under 0.15 s", ver_m)
    peak = max(
        (c.rss_kb for c in t.cells.values() if c.tool == "patchstack" and c.times), default=None
    )
    line(lambda a: a < 200 * 1024, "peak memory under 200 MB", peak)
    return out


def version_of(env: Env, cmd: list[str]) -> str:
    if not which(cmd[0]):
        return "not installed"
    try:
        r = env.run(cmd, PROJECT)
    except OSError:
        return "not installed"
    return (r.out.strip() or r.err.strip()).splitlines()[0] if r.rc == 0 else "n/a"


def machine(env: Env) -> list[str]:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    except OSError:
        mem = 0
    os_name = platform.platform()
    try:
        with open("/etc/os-release") as f:
            os_name = dict(ln.strip().split("=", 1) for ln in f if "=" in ln)["PRETTY_NAME"]
            os_name = os_name.strip('"')
    except (OSError, KeyError):
        pass
    return [
        f"CPU: {cpu}, {os.cpu_count()} cores; memory {mem} MB; {os_name}",
        f"git: {version_of(env, ['git', '--version'])}; python: {platform.python_version()}",
        f"quilt: {version_of(env, ['quilt', '--version'])}; "
        f"stg: {version_of(env, ['stg', '--version'])}; "
        f"git-pile: {version_of(env, ['git', 'pile', '--version'])}",
        f"patchstack: {version_of(env, [*env.ps, '--version'])}",
    ]


# --------------------------------------------------------------------------- main


def references(env: Env, fx: Fixture, n: int) -> dict:
    ws = Workspace(env, fx.dir, "reference")
    ws.fresh()
    _, conflicts, raws = replay(env, ws, "rebase", fx, n, fx.moved, None)
    moved_tree = ws.head_tree()
    _, clean_conflicts, clean_raws = replay(env, ws, "rebase", fx, n, fx.moved_clean, None)
    if clean_conflicts:
        print(f"  warning: the conflict-free move conflicts: {clean_conflicts}", file=sys.stderr)
    return {
        "conflicts": conflicts,
        "moved_raws": raws,
        "moved_tree": moved_tree,
        "clean_raws": clean_raws,
        "clean_conflicts": clean_conflicts,
        "clean_tree": ws.head_tree(),
        "nodiag": fx.no_diag_tree(n),
    }


def bench_pop(env: Env, fx: Fixture, n: int, runs: int) -> list[str]:
    """``--pop``: pop --all, pop of the top patch and of the whole stack but its first patch,
    in CPU seconds (user+sys of the command and its children) and wall seconds, against
    ``--version`` and ``git reset --keep`` from the same top (issue 35: pop --all within
    --version + 1.5x reset --keep; pop NAME in time proportional to what it pops)."""
    ws = Workspace(env, fx.dir, "pop")
    sdir = os.path.join(fx.dir, "pop-series")
    got: dict[str, list[Run]] = {}

    def timed(key: str, cmd: list[str], extra: dict | None = None) -> None:
        r = env.run(cmd, ws.path, extra)
        if r.rc != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed ({r.rc}): {first_line(r)}")
        got.setdefault(key, []).append(r)

    top, second = fx.names[n - 1], fx.names[1]
    sd = {"PATCHSTACK_DIR": sdir}
    for _ in range(runs):
        ws.fresh()
        ws.reset(fx.base)
        if os.path.exists(sdir):
            shutil.rmtree(sdir)
        shutil.copytree(fx.series_dir(n), sdir)
        env.run([*env.ps, "push", "--all"], ws.path, sd, check=True)
        timed("--version", [*env.ps, "--version"])
        timed("pop TOP (1 of N)", [*env.ps, "pop", top], sd)
        env.run([*env.ps, "push", "--all"], ws.path, sd, check=True)
        timed("pop SECOND (N-1 of N)", [*env.ps, "pop", second], sd)
        env.run([*env.ps, "push", "--all"], ws.path, sd, check=True)
        timed("pop --all", [*env.ps, "pop", "--all"], sd)
        if tree_check(ws, fx.base_tree) != "ok":
            raise RuntimeError("pop --all left a tree other than the base's")
        ws.reset(fx.chain[n - 1])
        timed("git reset --keep <base>", ["git", "reset", "-q", "--keep", fx.base])

    def med(key: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in got[key])

    lines = [f"{'command':<40} {'CPU s':>7} {'wall s':>7}   ({runs} runs, medians; {n} patches)"]
    lines += [f"{k:<40} {med(k, 'cpu'):7.3f} {med(k, 'secs'):7.3f}" for k in got]
    for attr, what in (("cpu", "CPU"), ("secs", "wall")):
        bound = med("--version", attr) + 1.5 * med("git reset --keep <base>", attr)
        have = med("pop --all", attr)
        verdict = "met" if have <= bound else "MISSED"
        lines.append(
            f"pop --all {have:.3f} s {what} against --version + 1.5x reset --keep = {bound:.3f} s:"
            f" {verdict} ({have / bound:.2f}x the bound)"
        )
    return lines


def bench_refresh(env: Env, fx: Fixture, n: int, runs: int) -> list[str]:
    """``--refresh``: the full replay onto the conflict-free move alone, ``refresh --onto`` of
    N patches against ``git rebase`` + ``git format-patch`` of the same commits, alternated,
    in CPU seconds (user+sys of the command and its children) and wall seconds, each result
    tree checked against the rebase's (issue 35: on the 100,000-file fixture refresh at least
    1.5x faster than rebase). The start-up, push, status, ``am`` and peers' rows are not run:
    on 100,000 files they took over an hour."""
    ws = Workspace(env, fx.dir, "refresh")
    sdir = os.path.join(fx.dir, "refresh-series")
    out = os.path.join(fx.dir, "format-patch-out")
    sd = {"PATCHSTACK_DIR": sdir}
    got: dict[str, list[Run]] = {}
    for _ in range(runs):
        ws.fresh()
        r, conflicts, _raws = replay(env, ws, "rebase", fx, n, fx.moved_clean, None)
        if conflicts:
            raise RuntimeError(f"the conflict-free move conflicts: {conflicts}")
        want = ws.head_tree()
        shutil.rmtree(out, ignore_errors=True)
        fp = env.run(["git", "format-patch", "-q", "-o", out, f"{fx.moved_clean}..HEAD"], ws.path)
        both = Run(r.secs + fp.secs, fp.rc, max(r.rss_kb, fp.rss_kb), "", "", r.cpu + fp.cpu)
        got.setdefault("git rebase + format-patch", []).append(both)
        ws.fresh()
        ws.reset(fx.base)
        if os.path.exists(sdir):
            shutil.rmtree(sdir)
        shutil.copytree(fx.series_dir(n), sdir)
        env.run([*env.ps, "push", "--all"], ws.path, sd, check=True)
        pr = env.run([*env.ps, "refresh", "--onto", fx.moved_clean], ws.path, sd)
        if pr.rc != 0 or ws.head_tree() != want:
            raise RuntimeError(f"refresh: exit {pr.rc}, tree {verdict(ws.head_tree(), want)}")
        got.setdefault("patchstack refresh --onto", []).append(pr)

    def med(key: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in got[key])

    lines = [f"{'command':<40} {'CPU s':>7} {'wall s':>7}   ({runs} runs, medians; {n} patches)"]
    lines += [f"{k:<40} {med(k, 'cpu'):7.3f} {med(k, 'secs'):7.3f}" for k in got]
    for attr, what in (("cpu", "CPU"), ("secs", "wall")):
        ratio = med("git rebase + format-patch", attr) / med("patchstack refresh --onto", attr)
        lines.append(f"rebase + format-patch / refresh, {what}: {ratio:.2f}x (target 1.5x)")
    return lines


def default_patchstack() -> list[str]:
    """`python -m patchstack` from this checkout; else the console script; else its entry point."""
    if os.path.exists(os.path.join(PROJECT, "patchstack", "__main__.py")):
        return [sys.executable, "-m", "patchstack"]
    if shutil.which("patchstack"):
        return ["patchstack"]
    return [sys.executable, "-c", "import sys; from patchstack.cli import main; sys.exit(main())"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--files",
        type=int,
        default=None,
        help="files in the generated repo (default 10000; 2000 with --quick)",
    )
    ap.add_argument(
        "--patches",
        default=None,
        help="series sizes, comma separated (default 10,100,1000; 10,100 with --quick)",
    )
    ap.add_argument("--runs", type=int, default=None, help="timed runs (default 3; 1 --quick)")
    ap.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed runs before the timed ones (default 1, and 0 for series of "
        "1,000 patches or more, whose pages the reference replay has just warmed)",
    )
    ap.add_argument(
        "--upstream-commits",
        type=int,
        default=300,
        help="commits in the upstream move (default 300)",
    )
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="fast smoke run")
    ap.add_argument(
        "--repo",
        default=os.environ.get("PATCHSTACK_BENCH_REPO"),
        help="use (a copy of) this clone as upstream instead of a generated "
        "repository; default $PATCHSTACK_BENCH_REPO",
    )
    ap.add_argument(
        "--workdir",
        default=None,
        help="scratch directory (default: a temporary one, removed at the end)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument(
        "--tools",
        default="patchstack,quilt,stg,git,git-pile",
        help="comma-separated subset of patchstack,quilt,stg,git,git-pile",
    )
    ap.add_argument(
        "--patchstack",
        default=None,
        help="command that runs patchstack (default: '<python> -m patchstack' from this checkout)",
    )
    ap.add_argument("--markdown", metavar="FILE", help="also write the results as Markdown")
    ap.add_argument("--json", metavar="FILE", help="also write raw timings as JSON")
    ap.add_argument(
        "--pop",
        action="store_true",
        help="only time pop (--all, the top patch, all but the first) against --version and "
        "git reset --keep, in CPU and wall seconds (one series size: --patches N)",
    )
    ap.add_argument(
        "--refresh",
        action="store_true",
        help="only time refresh --onto the conflict-free move against git rebase +"
        " format-patch, in CPU and wall seconds (one series size: --patches N)",
    )
    a = ap.parse_args(argv)
    a.files = a.files or (2000 if a.quick else 10000)
    a.patches = a.patches or ("10,100" if a.quick else "10,100,1000")
    a.runs = a.runs or (1 if a.quick else 3)
    a.sizes = sorted({int(x) for x in a.patches.split(",") if x.strip()})
    if a.quick and a.upstream_commits == 300:
        a.upstream_commits = 120
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    t_start = time.perf_counter()
    workdir = a.workdir or tempfile.mkdtemp(prefix="patchstack-bench-")
    os.makedirs(workdir, exist_ok=True)
    fixdir = os.path.join(workdir, "fixture")
    ps_cmd = shlex.split(a.patchstack) if a.patchstack else default_patchstack()
    env = Env(workdir, ps_cmd)
    tools = {t.strip() for t in a.tools.split(",")}
    print(f"generating fixture in {fixdir} ...", flush=True)
    t0 = time.perf_counter()
    info = gen.generate(
        fixdir,
        n_files=a.files,
        sizes=a.sizes,
        n_upstream=a.upstream_commits,
        seed=a.seed,
        real_repo=a.repo,
    )
    gen_secs = time.perf_counter() - t0
    fx = Fixture(env, fixdir, info)
    env.subst += [
        (fixdir, "<fixture>"),
        (fx.base, "<base>"),
        (fx.moved, "<moved>"),
        (fx.moved_clean, "<moved-clean>"),
    ]
    warm_desc = "1 (0 at >= 1,000 patches)" if a.warmup is None else str(a.warmup)
    src = f"a copy of {a.repo}" if a.repo else "a generated repository"
    desc = (
        f"Upstream: {src} with {info['tracked_text_files']} text files "
        f"({info['duplicate_block_files']} with a duplicated block); "
        f"{info['upstream_commits']} upstream commits in the move; "
        f"series of {', '.join(map(str, a.sizes))} patches; "
        f"{a.runs} timed run(s) after {warm_desc} warm-up; fixture built in {gen_secs:.1f} s."
    )
    print(desc, flush=True)
    if a.pop or a.refresh:
        for n in a.sizes:
            lines = bench_pop(env, fx, n, a.runs) if a.pop else bench_refresh(env, fx, n, a.runs)
            print("\n".join(lines), flush=True)
        if not a.keep and not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    startup = Table()
    bench_startup(env, startup, max(a.runs, 5), 1 if a.warmup is None else a.warmup)
    tables: dict[int, Table] = {}
    refs_by_n = {}
    for n in a.sizes:
        t0 = time.perf_counter()
        table = Table()
        tables[n] = table
        refs = references(env, fx, n)
        refs_by_n[n] = refs
        for name, fn in (
            ("git", bench_git),
            ("quilt", bench_quilt),
            ("stg", bench_stg),
            ("git-pile", bench_pile),
            ("patchstack", bench_patchstack),
        ):
            if name not in tools:
                continue
            t1 = time.perf_counter()
            warm = a.warmup if a.warmup is not None else (0 if n >= 1000 else 1)
            try:
                fn(env, fx, n, table, a.runs, warm, refs)
            except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
                for c in table.cells.values():
                    if c.tool.startswith(name) and not c.times:
                        c.fail(f"harness: {str(e).splitlines()[0][:160]}")
                print(f"  {name}: harness error: {e}", file=sys.stderr)
            print(f"  {n} patches: {name} done in {time.perf_counter() - t1:.1f} s", flush=True)
        print(
            f"\n== {n} patches ({time.perf_counter() - t0:.0f} s; reference: "
            f"{len(refs['conflicts'])} patches conflict onto <moved>: "
            f"{', '.join(c[:4] for c in refs['conflicts']) or '-'})"
        )
        print(text_table(rows_for(table, n)), flush=True)
    print("\n== start-up")
    print(text_table(rows_for(startup, None)))
    tg = targets(tables, startup)
    print(f"\n== targets of issue 16 ({max(a.sizes)} patches)")
    print("\n".join(tg))
    total = time.perf_counter() - t_start
    print(f"\ntotal {total:.0f} s")
    if a.markdown:
        write_markdown(a, env, info, desc, tables, startup, tg, refs_by_n, total)
        print(f"wrote {a.markdown}")
    if a.json:
        raw = {str(n): [c.__dict__ for c in t.cells.values()] for n, t in tables.items()}
        raw["startup"] = [c.__dict__ for c in startup.cells.values()]
        with open(a.json, "w") as f:
            json.dump(raw, f, indent=1)
    if not a.keep and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def write_markdown(a, env, info, desc, tables, startup, tg, refs_by_n, total):
    out = [
        "# Benchmarks",
        "",
        "Produced by `python tools/bench/run.py "
        + " ".join(shlex.quote(x) for x in sys.argv[1:])
        + "`"
        + f" in {total:.0f} s.",
        "",
        "## Machine",
        "",
    ]
    out += [f"- {m}" for m in machine(env)]
    out += ["", "## Workload", "", desc, ""]
    plan = info["plan"]
    out.append(
        "Planned upstream edits against patches: "
        + "; ".join(f"{k} {len(v)}" for k, v in sorted(plan["upstream_edits"].items()))
        + f". Patches set up for mis-application by context: {', '.join(plan['traps']) or '-'}."
    )
    for n, t in tables.items():
        refs = refs_by_n[n]
        out += [
            "",
            f"## {n} patches",
            "",
            f"Reference (`git rebase`, three-way): {len(refs['conflicts'])} patches "
            f"conflict onto the move: {', '.join(refs['conflicts']) or '-'}.",
            "",
            md_table(rows_for(t, n)),
        ]
    out += ["", "## Start-up", "", md_table(rows_for(startup, None))]
    out += ["", f"## Targets of issue 16 ({max(tables)} patches)", "", *tg]
    out += [
        "",
        "## Commands",
        "",
        "Each timed command runs with `GIT_CONFIG_GLOBAL` pointing at "
        "a benchmark-only config (`gc.auto=0`), fixed author and committer dates, from a "
        "state reset before every run.",
        "",
        "```",
    ]
    out += [f"{label}:\n    {cmd}" for label, cmd in sorted(env.commands.items())]
    out += ["```", ""]
    with open(a.markdown, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
