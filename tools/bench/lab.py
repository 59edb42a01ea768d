"""Time bisect, worktree and doctor (issue 17) on a clone of a real repository.

    python tools/bench/lab.py /path/to/sglang [--package python/sglang] [--runs 5]

It clones the repository into a temporary folder, puts the fork twelve first-parent commits
back (upstream is then 12 commits ahead, as after a fetch), makes a three-patch series there
(an essential, a diagnostic and an optimization patch, each a one-line edit of a file of the
package), and builds two virtual environments without pip: one with an editable install of
the clone (a ``.pth`` file and PEP 610 metadata, as setuptools writes them) and one with an
installed copy of the base version (files, RECORD hashes, compiled ``.pyc`` files, as pip
leaves them; one installed file is then edited by hand). It reports medians of:

- ``doctor`` against each environment (the copy is compared file by file with the work tree);
- ``worktree DIR --only essential`` and ``worktree --remove DIR``;
- ``bisect`` over the 12 commits with ``--threshold`` and a pretend benchmark that prints
  94.2 tokens/s before a chosen commit and 60.1 from it on, and the time of its steps.

Python 3.10+, standard library only; patchstack runs as ``python -m patchstack`` from this
checkout. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
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

ROOT = Path(__file__).resolve().parent.parent.parent


def sh(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True)


CPU: list[float] = []  # CPU seconds of each `ps` run, its child processes included


def ps(*args: str, cwd: Path, code: int | None = 0) -> tuple[float, subprocess.CompletedProcess]:
    """Run patchstack: (wall seconds, the process); its CPU seconds go to `CPU`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if code is not None and proc.returncode != code:
        raise SystemExit(f"patchstack {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return took, proc


def venv(path: Path) -> tuple[Path, Path]:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = path / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    return path / "bin" / "python", site


def dist_info(site: Path, name: str, direct_url: dict | None, files: list[Path]) -> None:
    info = site / f"{name}-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.0\n")
    (info / "INSTALLER").write_text("pip\n")
    if direct_url:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    rows = []
    for f in files:
        data = f.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append([str(f.relative_to(site)), f"sha256={digest}", str(len(data))])
    rows.append([f"{info.name}/RECORD", "", ""])
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (info / "RECORD").write_text(out.getvalue())


def median(xs: list[float], cpu: list[float]) -> str:
    wall = f"{statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"
    return f"{wall}; CPU {statistics.median(cpu):.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="a clone (or git dir) of the repository to try")
    ap.add_argument("--package", default="python/sglang", help="the package folder in it")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="patchstack-lab-"))
    try:
        run(Path(args.repo).resolve(), args.package, args.runs, tmp)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(source: Path, package: str, runs: int, tmp: Path) -> None:
    fork = tmp / "fork"
    sh("git", "clone", "-q", str(source), str(fork), cwd=tmp)
    tip = sh("git", "rev-parse", "HEAD", cwd=fork).stdout.strip()
    chain = sh("git", "rev-list", "--first-parent", "-13", tip, cwd=fork).stdout.split()
    base, culprit = chain[12], chain[6]  # upstream: 12 commits; the 6th of them "slows down"
    sh("git", "checkout", "-q", "-B", "lab", base, cwd=fork)
    sh("git", "branch", "-q", "upstream", tip, cwd=fork)
    sh("git", "branch", "-q", "--set-upstream-to=upstream", cwd=fork)
    sh("git", "config", "user.name", "Lab", cwd=fork)
    sh("git", "config", "user.email", "lab@example.org", cwd=fork)
    ps("init", cwd=fork)
    files = sorted(p for p in (fork / package).rglob("*.py") if p.stat().st_size > 0)[:3]
    for f, (name, tag) in zip(
        files, [("e", "essential"), ("d", "diagnostic"), ("o", "optimization")], strict=True
    ):
        with f.open("a") as out:
            out.write(f"# lab: {tag}\n")
        ps("new", name, "--tag", tag, str(f.relative_to(fork)), cwd=fork)
    pkg_name = Path(package).name
    editable, site = venv(tmp / "venv-editable")
    (site / f"__editable__.{pkg_name}.pth").write_text(f"{(fork / package).parent}\n")
    url = {"url": (fork / package).parent.as_uri(), "dir_info": {"editable": True}}
    dist_info(site, pkg_name, url, [])
    copy, copy_site = venv(tmp / "venv-copy")
    old = tmp / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", base, package], cwd=fork, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    shutil.copytree(old / package, copy_site / pkg_name, symlinks=True)
    installed = [p for p in (copy_site / pkg_name).rglob("*") if p.is_file() and not p.is_symlink()]
    dist_info(copy_site, pkg_name, None, installed)
    subprocess.run(
        [str(copy), "-m", "compileall", "-q", str(copy_site / pkg_name)],
        check=True,
        capture_output=True,
    )
    with (copy_site / pkg_name / "__init__.py").open("a") as out:
        out.write("# edited on the server\n")
    print(f"repository: {source} ({len(installed)} files in {package}); base {base[:10]}")

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for label, python, code in (("editable install", editable, 0), ("installed copy", copy, 1)):
        CPU.clear()
        took = [ps("doctor", "--python", str(python), cwd=fork, code=code)[0] for _ in range(runs)]
        print(f"doctor, {label}: {median(took, CPU)}")
    made, gone, made_cpu, gone_cpu = [], [], [], []
    for _ in range(runs):
        made.append(ps("worktree", "../exp", "--only", "essential", cwd=fork)[0])
        made_cpu.append(CPU[-1])
        gone.append(ps("worktree", "--remove", "../exp", cwd=fork)[0])
        gone_cpu.append(CPU[-1])
    print(f"worktree DIR --only essential: {median(made, made_cpu)}")
    print(f"worktree --remove DIR: {median(gone, gone_cpu)}")
    bench = tmp / "bench.sh"
    bench.write_text(
        "#!/bin/sh\n"
        f'if git merge-base --is-ancestor {culprit} "$PATCHSTACK_BISECT_COMMIT"; then\n'
        '  echo "tokens/s: 60.1"\nelse\n  echo "tokens/s: 94.2"\nfi\n'
    )
    bench.chmod(0o755)
    total, steps = [], []
    CPU.clear()
    for _ in range(runs):
        took, proc = ps(
            "bisect", "--json", base, "upstream", "--only", "essential", "--threshold", "80",
            "--", str(bench), cwd=fork,
        )  # fmt: skip
        result = json.loads(proc.stdout)
        assert result["culprit"]["commit"] == culprit, result
        total.append(took)
        steps.append(len(result["steps"]))
    print(f"bisect over 12 commits ({steps[0]} steps, culprit found): {median(total, CPU)}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
