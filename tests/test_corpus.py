"""The hostile, malformed and unusual input corpus, end to end through the real CLI.

Malformed or hostile input (tests/corpus/*.patch, and series files written here) must end in a
message naming the file and line, exit status 2, and nothing changed on disk (nothing written
outside the work tree either). Unusual but well-formed input must give exactly what
``git apply`` gives. The large cases (a 50 MB patch, a 5,000-entry series) and the patches that
only git can write well (binary with data, mode change, rename) are generated at run time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered

CORPUS = Path(__file__).parent / "corpus"

# patch file -> (line named in the error, words in the message)
MALFORMED = {
    "empty.patch": (1, "the patch is empty"),
    "headers-only.patch": (1, "no diff found"),
    "truncated-hunk.patch": (13, "truncated hunk"),
    "wrong-counts.patch": (14, "hunk has more lines than its header says"),
    "garbage-hunk-header.patch": (10, "malformed hunk header"),
    "garbage-hunk-numbers.patch": (10, "malformed hunk header"),
    "two-mails.patch": (17, "a second mail starts here"),
    "binary-without-data.patch": (9, "binary change to 'blob.bin' without data"),
}
HOSTILE = {
    "path-dotdot.patch": (7, "'..' component"),
    "path-deep-dotdot.patch": (7, "'..' component"),
    "path-dotgit.patch": (7, "names git's own directory"),
    "path-dotgit-upper.patch": (7, "names git's own directory"),
    "path-dotgit-nested.patch": (7, "names git's own directory"),
    "path-dotgit-trailing-dot.patch": (7, "names git's own directory"),
    "path-dotgit-trailing-space.patch": (7, "names git's own directory"),
    "path-dotgit-hfs-ignorable.patch": (7, "names git's own directory"),
    "path-dotgit-fullwidth.patch": (7, "names git's own directory"),
    "path-dotgit-ntfs-short.patch": (7, "names git's own directory"),
    "path-series-dir.patch": (7, "inside the series directory"),
    "path-symlink-same-patch.patch": (14, "'ln' is a symbolic link"),
    "path-symlink-in-base.patch": (7, "'link-to-tmp' is a symbolic link"),
}
FIGURES: dict[str, str] = {}


@built_once
def base_repo(tmp_path: Path) -> Repo:
    repo = make_repo(
        tmp_path / "fork",
        {"a.py": numbered(40, "a"), "b.py": numbered(40, "b"), "script.sh": "echo hi\n"},
    )
    (repo.path / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (repo.path / "latin1.txt").write_bytes(b"caf\xe9\nna\xefve\n")
    (repo.path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    os.symlink("/tmp", repo.path / "link-to-tmp")
    repo.commit_all("more upstream files")
    repo.ps("init")
    repo.write("scratch.txt", "untracked, mine\n")
    return repo


def add_to_series(repo: Repo, name: str, data: bytes, opts: str = "") -> None:
    (repo.path / "patches" / name).write_bytes(data)
    with open(repo.path / "patches" / "series", "a") as f:
        f.write(f"{name}{opts} # essential\n")


def everything(repo: Repo, tmp_path: Path) -> tuple:
    outside = sorted(p.name for p in tmp_path.iterdir())
    refs = repo.git("for-each-ref")
    return repo.state(), repo.git("ls-files", "-s"), refs, outside


@pytest.mark.parametrize("name", sorted({**MALFORMED, **HOSTILE}))
def test_malformed_and_hostile_patches_are_refused_naming_file_and_line(tmp_path, name) -> None:
    line, words = {**MALFORMED, **HOSTILE}[name]
    repo = base_repo(tmp_path)
    add_to_series(repo, name, (CORPUS / name).read_bytes())
    before = everything(repo, tmp_path)
    result = repo.ps("push", "--all", code=2)
    assert f"patches/{name}:{line}: " in result.stderr, result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert everything(repo, tmp_path) == before
    assert not (tmp_path / "escaped.txt").exists()
    FIGURES[name] = "exit 2"


def test_symlink_made_by_an_earlier_patch_of_the_same_push_is_refused(tmp_path) -> None:
    repo = base_repo(tmp_path)
    add_to_series(repo, "symlink-create.patch", (CORPUS / "symlink-create.patch").read_bytes())
    name = "path-through-earlier-symlink.patch"
    add_to_series(repo, name, (CORPUS / name).read_bytes())
    before = everything(repo, tmp_path)
    result = repo.ps("push", "--all", code=2)
    assert f"patches/{name}:7: refused path 'out/escaped.txt': 'out' is a symbolic link" in (
        result.stderr
    )
    assert everything(repo, tmp_path) == before
    assert not (tmp_path / "escaped.txt").exists()
    # pushing only the link is fine; then the second patch is refused against the applied tree
    repo.ps("push")
    assert os.readlink(repo.path / "out") == ".."
    result = repo.ps("push", code=2)
    assert "'out' is a symbolic link" in result.stderr
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("opts", [" -p0", "", " -p2"])
def test_absolute_traditional_path_is_refused_not_stripped_into_the_tree(tmp_path, opts) -> None:
    repo = base_repo(tmp_path)
    add_to_series(repo, "path-absolute.patch", (CORPUS / "path-absolute.patch").read_bytes(), opts)
    before = everything(repo, tmp_path)
    result = repo.ps("push", "--all", code=2)
    assert "patches/path-absolute.patch:2: refused path '/tmp/owned-absolute.txt'" in (
        result.stderr
    )
    assert "a traditional diff naming an absolute path" in result.stderr
    assert everything(repo, tmp_path) == before
    assert not Path("/tmp/owned-absolute.txt").exists()
    assert not (repo.path / "tmp").exists()


def test_path_inside_a_submodule_is_refused(tmp_path) -> None:
    inner = make_repo(tmp_path / "inner", {"lib.py": "x = 1\n"})
    repo = base_repo(tmp_path)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner.path), "sub")
    repo.git("commit", "-q", "-m", "add submodule")
    (repo.path / "patches" / "series").write_text(
        (repo.path / "patches" / "series")
        .read_text()
        .replace(repo.git("rev-parse", "HEAD~1").strip(), repo.head())
    )
    diff = "diff --git a/sub/lib.py b/sub/lib.py\n--- a/sub/lib.py\n+++ b/sub/lib.py\n"
    add_to_series(repo, "into-sub.patch", (diff + "@@ -1 +1 @@\n-x = 1\n+x = 2\n").encode())
    before = everything(repo, tmp_path)
    result = repo.ps("push", "--all", code=2)
    assert "patches/into-sub.patch:1: refused path 'sub/lib.py': 'sub' is a submodule" in (
        result.stderr
    )
    assert everything(repo, tmp_path) == before
    assert (inner.path / "lib.py").read_text() == "x = 1\n"


# -- unusual but valid ---------------------------------------------------------------------------


def git_apply_tree(repo: Repo, tmp_path: Path, base: str, patches: list[tuple[bytes, int]]) -> str:
    """The tree that plain ``git apply`` makes of the same patches on the same base."""
    clone = tmp_path / "reference"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo.path), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", base], cwd=clone, check=True)
    for i, (data, strip) in enumerate(patches):
        p = tmp_path / f"ref-{i}.patch"
        p.write_bytes(data)
        subprocess.run(["git", "apply", "--index", f"-p{strip}", str(p)], cwd=clone, check=True)
    return subprocess.run(
        ["git", "write-tree"], cwd=clone, check=True, capture_output=True, text=True
    ).stdout.strip()


def made_by_git(repo: Repo, tmp_path: Path, change) -> bytes:
    """A patch written by git (binary data, modes, renames) for ``change`` made in a clone."""
    work = tmp_path / "maker"
    if work.exists():
        shutil.rmtree(work)
    subprocess.run(["git", "clone", "-q", str(repo.path), str(work)], check=True)
    change(work)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    return subprocess.run(
        ["git", "diff", "--cached", "--binary", "--full-index", "-M"],
        cwd=work,
        check=True,
        capture_output=True,
    ).stdout


def _binary(work: Path) -> None:
    (work / "blob.bin").write_bytes(bytes(reversed(range(256))) * 8)
    (work / "new.bin").write_bytes(b"\0\1\2 new binary \xff" * 100)


def _mode(work: Path) -> None:
    (work / "script.sh").chmod(0o755)


def _rename(work: Path) -> None:
    (work / "b.py").rename(work / "renamed.py")
    text = (work / "renamed.py").read_text().replace("b 20\n", "b 20 edited\n")
    (work / "renamed.py").write_text(text)


@pytest.mark.parametrize(
    "case", ["crlf.patch", "latin1.patch", "binary", "mode", "rename", "all-at-once"]
)
def test_unusual_patches_apply_like_git_apply(tmp_path, case) -> None:
    repo = base_repo(tmp_path)
    makers = {"binary": _binary, "mode": _mode, "rename": _rename}
    if case.endswith(".patch"):
        patches = [(case, (CORPUS / case).read_bytes())]
    elif case in makers:
        patches = [(case + ".patch", made_by_git(repo, tmp_path, makers[case]))]
    else:
        patches = [(f"{k}.patch", made_by_git(repo, tmp_path, m)) for k, m in makers.items()]
        repo.ps("push", "--all")  # (nothing yet)
    for name, data in patches:
        add_to_series(repo, name, data)
    base = repo.head()
    result = repo.ps("push", "--all")
    assert "Traceback" not in result.stdout
    want = git_apply_tree(repo, tmp_path, base, [(d, 1) for _n, d in patches])
    assert repo.tree() == want
    assert repo.git("status", "--porcelain") == "?? patches/\n?? scratch.txt\n"
    if case == "mode":
        assert os.stat(repo.path / "script.sh").st_mode & 0o111
    # and back: pop, undo the pop, everything byte-identical
    applied = repo.snapshot()
    repo.ps("pop", "--all")
    repo.ps("undo")
    assert repo.snapshot() == applied
    FIGURES[case] = "applied like git apply"


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_a_50_mb_patch_applies_like_git_apply(tmp_path) -> None:
    repo = base_repo(tmp_path)
    line = "x" * 76
    body = "".join(f"+{i:07} {line}\n" for i in range(600_000))
    data = (
        "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n"
        f"@@ -0,0 +1,600000 @@\n{body}"
    ).encode()
    assert len(data) > 50_000_000
    add_to_series(repo, "big.patch", data)
    base = repo.head()
    repo.ps("push", "--all")
    assert repo.tree() == git_apply_tree(repo, tmp_path, base, [(data, 1)])
    assert (repo.path / "big.txt").stat().st_size == 600_000 * 85
    FIGURES["50 MB patch"] = "applied like git apply"


# -- the series file ------------------------------------------------------------------------------

SERIES_ERRORS = {
    "unknown-tag": ("p.patch # essentail\n", "unknown tag 'essentail'"),
    "missing-tag": ("p.patch\n", "tag"),
    "duplicate": ("p.patch # essential\np.patch # diagnostic\n", "duplicate"),
    "missing-file": ("gone.patch # essential\n", "patch file 'gone.patch' not found"),
    "slash": ("sub/p.patch # essential\n", "p.patch"),
    "dotdot": ("../p.patch # essential\n", "p.patch"),
    "space": ("my patch.patch # essential\n", "patch"),
    "shell-metachar": ("p.patch;rm-rf # essential\n", "p.patch;rm-rf"),
    "bad-p": ("p.patch -px # essential\n", "-px"),
}


@pytest.mark.parametrize("case", sorted(SERIES_ERRORS))
def test_series_errors_name_the_line_and_change_nothing(tmp_path, case) -> None:
    text, words = SERIES_ERRORS[case]
    repo = base_repo(tmp_path)
    (repo.path / "patches" / "p.patch").write_bytes(
        b"--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a 1\n+a 1 x\n"
    )
    series = repo.path / "patches" / "series"
    header = series.read_text()
    series.write_text(header + text)
    lineno = header.count("\n") + text.count("\n")
    before = everything(repo, tmp_path)
    for args in (["push", "--all"], ["series"], ["status"]):
        result = repo.ps(*args, code=2)
        assert "patches/series:" in result.stderr and words in result.stderr, result.stderr
        assert f"series:{lineno}:" in result.stderr or f"series:{lineno - 1}:" in result.stderr
        assert "Traceback" not in result.stderr
    assert everything(repo, tmp_path) == before
    FIGURES[f"series: {case}"] = "exit 2"


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_a_5000_entry_series_works(tmp_path) -> None:
    repo = base_repo(tmp_path)
    lines = [(repo.path / "patches" / "series").read_text()]
    for i in range(5000):
        name = f"p{i:04}.patch"
        path = repo.path / "patches" / name
        path.write_text(f"--- /dev/null\n+++ b/gen/f{i}.txt\n@@ -0,0 +1 @@\n+{i}\n")
        os.utime(path, (1e9, 1e9))  # written long ago, as a real series is
        lines.append(f"{name} # {('essential', 'diagnostic', 'optimization')[i % 3]}\n")
    (repo.path / "patches" / "series").write_text("".join(lines))
    data = json.loads(repo.ps("series", "--json").stdout)
    assert len(data["patches"]) == 5000
    repo.ps("push", "p0009.patch")
    assert (repo.path / "gen" / "f9.txt").read_text() == "9\n"
    repo.ps("pop", "--all")
    assert not (repo.path / "gen").exists()
    FIGURES["series: 5000 entries"] = "works"


def test_zz_print_corpus_figures() -> None:
    if FIGURES:
        print("\ncorpus: " + "; ".join(f"{k}: {v}" for k, v in sorted(FIGURES.items())))
