#!/usr/bin/env python3
"""Real-world check of 'patchstack import quilt' against Debian source packages.

For each package: fetch its source with ``apt-get source --download-only``, unpack it without
applying its patches (``dpkg-source -x --skip-patches``), commit the unpatched tree into a
fresh git repository, ``patchstack import quilt`` its ``debian/patches`` (series kept outside
the work tree), ``patchstack push --all``, and compare the resulting tree with what
``quilt push -a`` makes of another copy of the unpatched tree, and with what ``dpkg-source -x``
(which applies the series itself) makes of the package, as a second opinion.

Files already downloaded in ``--workdir``/PACKAGE (a ``.dsc`` and its tarballs) are used as
they are. ``--markdown FILE`` writes the results as the table of docs/debian-quilt-check.md.

Needs apt sources for Debian source packages. With ``--add-deb-src`` (as root) it writes
``/etc/apt/sources.list.d/patchstack-deb-src.sources``: a ``deb-src`` copy of every
``Types: deb`` stanza of the existing ``*.sources`` files, then runs ``apt-get update``.

Everything is done in a temporary folder (``--workdir`` to choose and keep it); nothing of the
packages is written into this project. Usage::

    python tools/debian_quilt_check.py --add-deb-src openssh bash nginx vim systemd
    python tools/debian_quilt_check.py --workdir /tmp/deb --markdown results.md glibc grub2
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES_DIR = "/etc/apt/sources.list.d"
OUR_SOURCES = os.path.join(SOURCES_DIR, "patchstack-deb-src.sources")
ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Debian check",
    "GIT_AUTHOR_EMAIL": "check@example.org",
    "GIT_COMMITTER_NAME": "Debian check",
    "GIT_COMMITTER_EMAIL": "check@example.org",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "LC_ALL": "C",
    "NO_COLOR": "1",
}


def run(args, cwd=None, env=None, check=True):
    full = dict(os.environ)
    full.update(ENV)
    full.update(env or {})
    proc = subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc


def add_deb_src() -> None:
    """Mirror each 'Types: deb' stanza of the deb822 sources as 'Types: deb-src'."""
    stanzas = []
    for path in sorted(glob.glob(os.path.join(SOURCES_DIR, "*.sources"))):
        if path == OUR_SOURCES:
            continue
        with open(path) as f:
            for block in re.split(r"\n\s*\n", f.read()):
                lines = block.strip().splitlines()
                types = [ln for ln in lines if ln.lower().startswith("types:")]
                if types and "deb" in types[0].split(":", 1)[1].split():
                    if "deb-src" in types[0]:
                        return  # already configured
                    stanzas.append(
                        "\n".join(
                            "Types: deb-src" if ln.lower().startswith("types:") else ln
                            for ln in lines
                        )
                    )
    if not stanzas:
        raise SystemExit(f"no 'Types: deb' stanza found in {SOURCES_DIR}/*.sources")
    with open(OUR_SOURCES, "w") as f:
        f.write("# written by patchstack tools/debian_quilt_check.py\n")
        f.write("\n\n".join(stanzas) + "\n")
    print(f"wrote {OUR_SOURCES}; running apt-get update", flush=True)
    run(["apt-get", "update", "-qq"])


def git_tree_of(folder: str, index: str) -> tuple[str, str]:
    """The git tree of every file in ``folder`` (quilt's .pc excluded), via a throwaway index."""
    env = {"GIT_INDEX_FILE": index, "GIT_DIR": os.path.join(folder, ".tree-git")}
    run(["git", "init", "-q", "--bare", env["GIT_DIR"]])
    run(
        ["git", "--work-tree", folder, "add", "-A", "-f", "--", ".", ":!.pc", ":!.tree-git"],
        env=env,
    )
    tree = run(["git", "write-tree"], env=env).stdout.strip()
    return tree, env["GIT_DIR"]


def _drop_files(folder: str) -> None:
    """Free the disk an unpacked tree takes, keeping the object store git_tree_of made."""
    for name in os.listdir(folder):
        if name != ".tree-git":
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)


def check_package(pkg: str, work: str) -> dict:
    result: dict = {"package": pkg}
    t0 = time.monotonic()
    pdir = os.path.join(work, pkg)
    os.makedirs(pdir, exist_ok=True)
    for old in ("src", "quilt", "repo", "series", "dpkg", "quilt.index", "dpkg.index"):
        path = os.path.join(pdir, old)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)
    if not glob.glob(os.path.join(pdir, "*.dsc")):
        # The main suite first: a snapshot mirror may lack the security pool's newest files.
        got = run(
            ["apt-get", "source", "--download-only", "-qq", f"{pkg}/bookworm"],
            cwd=pdir,
            check=False,
        )
        if got.returncode != 0:
            run(["apt-get", "source", "--download-only", "-qq", pkg], cwd=pdir)
    dsc = sorted(glob.glob(os.path.join(pdir, "*.dsc")))[0]
    result["version"] = os.path.basename(dsc)[len(pkg) + 1 : -4]
    result["download_s"] = round(time.monotonic() - t0, 1)
    src = os.path.join(pdir, "src")
    run(["dpkg-source", "-x", "--skip-patches", dsc, src], cwd=pdir)
    series_file = os.path.join(src, "debian", "patches", "series")
    if not os.path.isfile(series_file):
        result["result"] = "no debian/patches/series (not a quilt package)"
        return result
    with open(series_file) as f:
        entries = [ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    result["patches"] = len(entries)

    # The reference: quilt on a copy of the unpatched tree.
    quilt_dir = os.path.join(pdir, "quilt")
    shutil.copytree(src, quilt_dir, symlinks=True)
    proc = run(
        ["quilt", "--quiltrc", os.devnull, "push", "-a"],
        cwd=quilt_dir,
        env={"QUILT_PATCHES": "debian/patches"},
        check=False,
    )
    result["quilt_exit"] = proc.returncode
    result["quilt_fuzz"] = [
        ln.strip() for ln in proc.stdout.splitlines() if "fuzz" in ln and "Hunk" in ln
    ]
    quilt_tree, quilt_git = git_tree_of(quilt_dir, os.path.join(pdir, "quilt.index"))
    _drop_files(quilt_dir)  # its objects stay in quilt_git

    # The second opinion: dpkg-source applies the series itself.
    dpkg_dir = os.path.join(pdir, "dpkg")
    proc = run(["dpkg-source", "-x", dsc, dpkg_dir], cwd=pdir, check=False)
    result["dpkg_exit"] = proc.returncode
    if proc.returncode == 0:
        dpkg_tree, dpkg_git = git_tree_of(dpkg_dir, os.path.join(pdir, "dpkg.index"))
        _drop_files(dpkg_dir)
        result["dpkg_vs_quilt"] = "identical" if dpkg_tree == quilt_tree else "differ"
    else:
        dpkg_tree = dpkg_git = None
        result["dpkg_vs_quilt"] = "dpkg-source failed: " + proc.stderr.strip()[-300:]

    # patchstack: the unpatched tree committed, the quilt series imported and pushed.
    repo = os.path.join(pdir, "repo")
    shutil.copytree(src, repo, symlinks=True)
    run(["git", "init", "-q", "-b", "main"], cwd=repo)
    run(["git", "add", "-A", "-f"], cwd=repo)
    run(["git", "commit", "-q", "-m", f"{pkg} {result['version']} unpatched"], cwd=repo)
    series_dir = os.path.join(pdir, "series")
    ps = [sys.executable, "-m", "patchstack", "--dir", series_dir]
    penv = {"PYTHONPATH": HERE}
    t1 = time.monotonic()
    imp = run(
        [*ps, "import", "quilt", os.path.join(src, "debian", "patches"), "--tag", "essential"],
        cwd=repo,
        env=penv,
        check=False,
    )
    result["import_s"] = round(time.monotonic() - t1, 1)
    result["import_exit"] = imp.returncode
    result["import_report"] = [
        ln
        for ln in imp.stdout.splitlines()
        if not ln.startswith("imported ") or "(" in ln.split(" from ", 1)[-1]
    ] + imp.stderr.splitlines()
    result["import_warnings"] = [ln for ln in imp.stderr.splitlines() if "warning:" in ln]
    if imp.returncode != 0:
        result["result"] = "import failed"
        return result
    t2 = time.monotonic()
    push = run([*ps, "push", "--all"], cwd=repo, env=penv, check=False)
    result["push_s"] = round(time.monotonic() - t2, 1)
    result["push_exit"] = push.returncode
    if push.returncode != 0:
        result["result"] = "push failed: " + push.stderr.strip()[-500:]
        return result
    ours = run(["git", "rev-parse", "HEAD^{tree}"], cwd=repo).stdout.strip()
    # Let the repository see quilt's objects, to compare the trees with one diff-tree.
    alt = os.path.join(repo, ".git", "objects", "info", "alternates")
    with open(alt, "a") as f:
        f.write(os.path.join(quilt_git, "objects") + "\n")
        if dpkg_git:
            f.write(os.path.join(dpkg_git, "objects") + "\n")
    diff = run(["git", "diff-tree", "-r", "--name-status", ours, quilt_tree], cwd=repo).stdout
    result["tree_patchstack"] = ours
    result["tree_quilt"] = quilt_tree
    if ours == quilt_tree:
        result["result"] = "identical trees"
    else:
        result["result"] = "trees differ"
        result["differences"] = diff.splitlines()[:20]
    if dpkg_tree:
        result["vs_dpkg_source"] = "identical" if ours == dpkg_tree else "differ"
        if ours != dpkg_tree:
            result["differences_dpkg"] = run(
                ["git", "diff-tree", "-r", "--name-status", ours, dpkg_tree], cwd=repo
            ).stdout.splitlines()[:20]
    merged = [ln for ln in imp.stdout.splitlines() if "three-way merge" in ln]
    result["merged_three_way"] = len(merged)
    result["total_s"] = round(time.monotonic() - t0, 1)
    return result


def markdown(results: list[dict]) -> str:
    """One table row per package, then the differences and warnings named."""
    rows = [
        "| package | version | patches | quilt push -a | dpkg-source -x | import + push (s) |",
        "|---|---|--:|---|---|--:|",
    ]
    for r in results:
        seconds = round(r.get("import_s", 0) + r.get("push_s", 0), 1)
        rows.append(
            f"| {r['package']} | {r.get('version', '')} | {r.get('patches', '')} |"
            f" {r.get('result', '')} | {r.get('vs_dpkg_source', r.get('dpkg_vs_quilt', ''))} |"
            f" {seconds} |"
        )
    notes = []
    for r in results:
        extra = (
            r.get("differences", [])
            + r.get("differences_dpkg", [])
            + r.get("import_warnings", [])
            + [f"quilt: {ln}" for ln in r.get("quilt_fuzz", [])]
        )
        if r.get("merged_three_way"):
            extra.append(f"{r['merged_three_way']} patch(es) merged three-way (quilt used fuzz)")
        if extra:
            notes.append(f"\n**{r['package']}**\n")
            notes += [f"- `{ln.strip()}`" for ln in extra[:30]]
    return "\n".join(rows) + "\n" + "\n".join(notes) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "packages", nargs="*", default=["openssh", "bash", "nginx", "vim", "systemd"]
    )
    parser.add_argument("--workdir", help="keep everything here (default: a temporary folder)")
    parser.add_argument("--add-deb-src", action="store_true", help="configure deb-src (root)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="write the results as a Markdown table")
    args = parser.parse_args()
    if args.add_deb_src:
        add_deb_src()
    work = args.workdir or tempfile.mkdtemp(prefix="patchstack-debian-")
    results = []
    try:
        for pkg in args.packages:
            print(f"== {pkg}", flush=True)
            try:
                res = check_package(pkg, work)
            except Exception as exc:  # report and go on with the next package
                res = {"package": pkg, "result": f"error: {exc}"}
            results.append(res)
            if not args.json:
                for key, value in res.items():
                    if isinstance(value, list):
                        print(f"  {key}:")
                        for item in value:
                            print(f"    {item}")
                    else:
                        print(f"  {key}: {value}")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results))
    ok = all(r.get("result") == "identical trees" for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
