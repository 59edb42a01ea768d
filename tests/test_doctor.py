"""doctor: does the interpreter that runs the service import the tree the series describes?

The module builds one project (a package under src/, an essential patch changing a file and a
diagnostic patch adding one, both applied) and two virtual environments, once: one with an
editable install of the work tree (a ``.pth`` file and PEP 610 metadata, as setuptools writes
them; made with ``--without-pip``), one where real pip installed a wheel of the base version
(a stale copy: it lacks both patches).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.machinery
import json
import os
import py_compile
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import SEALED, Repo, make_repo, replace_line

PACKAGE = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "demo-pkg"\n'
    'version = "1.0"\n',
    "src/demo_pkg/__init__.py": '"""A package."""\n',
    "src/demo_pkg/core.py": "def speed():\n    return 60\n\n\ndef name():\n    return 'core'\n",
    "src/demo_pkg/extra.py": "def extra():\n    return 2\n",
    ".gitignore": "__pycache__/\n*.pyc\n*.so\n",
}


@dataclass(frozen=True)
class Setup:
    repo: Repo
    editable: Path  # the interpreters
    copy: Path
    site: Path  # the copy's site-packages


def _venv(path: Path) -> tuple[Path, Path]:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return path / "bin" / "python", path / "lib" / version / "site-packages"


def _record(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(repo: Repo, rev: str, dest: Path) -> Path:
    """A wheel of src/demo_pkg as it is at ``rev``."""
    files = {}
    for path in repo.git("ls-tree", "-r", "--name-only", rev, "src/demo_pkg").split():
        files[path.removeprefix("src/")] = repo.git("show", f"{rev}:{path}").encode()
    info = "demo_pkg-1.0.dist-info"
    files[f"{info}/METADATA"] = b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = dest / "demo_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in SEALED.items():
            mp.setenv(key, value)
        root = tmp_path_factory.mktemp("doctor")
        repo = make_repo(root / "fork", PACKAGE)
        base = repo.head()
        repo.git("branch", "upstream")
        repo.ps("init")
        replace_line(repo, "src/demo_pkg/core.py", "return 60", "return 94  # the fast path")
        repo.ps("new", "fast-path", "--tag", "essential")
        repo.write("src/demo_pkg/diag.py", "def log():\n    pass\n")
        repo.ps("new", "diag-module", "--tag", "diagnostic", "src/demo_pkg/diag.py")
        editable, site = _venv(root / "venv-editable")
        (site / "__editable__.demo_pkg-1.0.pth").write_text(f"{repo.path / 'src'}\n")
        info = site / "demo_pkg-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
        url = {"url": repo.path.as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(url))
        copy, copy_site = _venv(root / "venv-copy")
        pip = [sys.executable, "-m", "pip", "--python", str(copy), "install", "-q", "--no-deps"]
        subprocess.run([*pip, "--no-index", str(_wheel(repo, base, root))], check=True)
        return Setup(repo, editable, copy, copy_site)


def doctor(setup: Setup, python: Path | str, *args: str, code: int, cwd: Path | None = None):
    result = setup.repo.ps("doctor", "--python", str(python), *args, code=code, cwd=cwd)
    data = json.loads(
        setup.repo.ps("doctor", "--json", "--python", str(python), *args, code=code, cwd=cwd).stdout
    )
    return result.stdout, data


def kinds(data: dict) -> list[str]:
    return [f["kind"] for f in data["findings"]]


def test_an_editable_install_of_this_work_tree_agrees(setup: Setup) -> None:
    out, data = doctor(setup, setup.editable, code=0)
    assert (
        "import demo_pkg: src/demo_pkg (this work tree, an editable install: demo-pkg 1.0)" in out
    )
    assert "series: all 2 patch(es) applied, base" in out
    assert "everything agrees" in out
    assert data["ok"] is True and data["editable"] is True and data["where"] == "this work tree"
    assert kinds(data) == []
    # An edit in no patch is not what the series says.
    path = "src/demo_pkg/extra.py"
    setup.repo.write(path, setup.repo.read(path) + "HOTFIX = 1\n")
    try:
        out, data = doctor(setup, setup.editable, code=1)
    finally:
        setup.repo.git("checkout", path)
    assert f"differs uncommitted edits in no patch: {path}; next: capture them" in out
    assert kinds(data) == ["edits"]


def test_a_regular_install_of_a_stale_copy_lacks_the_patches(setup: Setup) -> None:
    out, data = doctor(setup, setup.copy, code=1)
    where = setup.site / "demo_pkg"
    assert f"import demo_pkg: {where} (an installed copy of demo-pkg 1.0)" in out
    assert f"the copy at {where} lacks fast-path.patch (core.py)" in out
    assert f"the copy at {where} lacks diag-module.patch (diag.py)" in out
    assert f"next: {setup.copy} -m pip install -e {setup.repo.path}" in out
    assert data["where"] == "an installed copy" and data["editable"] is False
    assert sorted(kinds(data)) == ["lacks-patch", "lacks-patch"]


def test_a_hand_edited_installed_file_is_named(setup: Setup) -> None:
    extra, core = setup.site / "demo_pkg" / "extra.py", setup.site / "demo_pkg" / "core.py"
    saved = extra.read_bytes(), core.read_bytes()
    extra.write_bytes(saved[0] + b"HOTFIX = 1  # made on the server\n")
    core.write_bytes(saved[1].replace(b"return 60", b"return 70"))
    added = setup.site / "demo_pkg" / "hotfix.py"
    added.write_text("RETRIES = 5\n")
    try:
        out, data = doctor(setup, setup.copy, code=1)
    finally:
        extra.write_bytes(saved[0])
        core.write_bytes(saved[1])
        added.unlink()
    assert f"{extra} was edited after it was installed" in out
    assert "the edit is in no patch; next: make the edit in src/demo_pkg/extra.py" in out
    assert f"{core} was edited after it was installed" in out
    assert "the work tree's src/demo_pkg/core.py carries fast-path.patch" in out
    assert "1 module(s) were added to the copy at" in out and "in no patch" in out
    assert sorted(kinds(data)) == [
        "added-modules",
        "edited-in-place",
        "edited-in-place",
        "lacks-patch",
    ]


def test_compiled_files_imported_instead_of_their_source(setup: Setup) -> None:
    pkg = setup.repo.path / "src" / "demo_pkg"
    made = [pkg / "gone.pyc", pkg / ("core" + importlib.machinery.EXTENSION_SUFFIXES[0])]
    # A module deleted long ago whose legacy .pyc still sits there, an extension module
    # beside its source, and an unchecked hash-based .pyc made from other bytes.
    (pkg / "gone.py").write_text("X = 1\n")
    py_compile.compile(str(pkg / "gone.py"), str(made[0]))
    (pkg / "gone.py").unlink()
    made[1].write_bytes(b"not really an ELF file")
    extra = pkg / "extra.py"
    original = extra.read_bytes()
    extra.write_bytes(b"def extra():\n    return 3\n")
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
    beside = pkg / "__pycache__" / f"extra.{sys.implementation.cache_tag}.pyc"  # (not a prefix's)
    made.append(Path(py_compile.compile(str(extra), str(beside), invalidation_mode=mode)))
    extra.write_bytes(original)
    try:
        out, data = doctor(setup, setup.editable, code=1)
    finally:
        for path in made:
            path.unlink()
    assert "src/demo_pkg/gone.pyc is imported although src/demo_pkg/gone.py does not exist" in out
    assert f"the compiled src/demo_pkg/{made[1].name} is imported instead of" in out
    assert "(an unchecked hash-based .pyc) is imported instead of the changed" in out
    assert kinds(data) == ["shadowed"] * 3


def test_upstream_moved_is_a_note(setup: Setup) -> None:
    repo = setup.repo
    repo.git("checkout", "-q", "upstream")
    repo.write("README", "upstream docs\n")
    repo.commit_all("docs")
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-q", "--set-upstream-to=upstream")
    try:
        out, data = doctor(setup, setup.editable, code=0)
    finally:
        repo.git("branch", "-q", "--unset-upstream")
    assert "note    upstream is 1 commit(s) past the series base; next: patchstack check" in out
    assert data["ok"] is True and kinds(data) == ["upstream-moved"]


def test_only_importable_from_this_folder(setup: Setup) -> None:
    # The test interpreter has no demo_pkg installed: only the current folder finds it.
    src = setup.repo.path / "src"
    out, data = doctor(setup, sys.executable, code=0, cwd=src)
    assert "import demo_pkg: src/demo_pkg (this work tree, on sys.path; not installed)" in out
    assert "works only from this folder" in out
    out, data = doctor(setup, sys.executable, code=1)
    assert "cannot import demo_pkg" in out and kinds(data) == ["not-importable"]


def test_bad_input_exits_2(setup: Setup, tmp_path: Path) -> None:
    repo = setup.repo
    assert "not a top-level package name" in repo.ps("doctor", "--module", "a.b", code=2).stderr
    assert "no package or module named nope" in repo.ps("doctor", "--module", "nope", code=2).stderr
    missing = tmp_path / "no-python"
    assert (
        "cannot run the interpreter" in repo.ps("doctor", "--python", str(missing), code=2).stderr
    )
    plain = make_repo(tmp_path / "plain", {"README": "no package\n"})
    assert "give it with --module NAME" in plain.ps("doctor", code=2).stderr


def test_the_probe_runs_without_importing_the_package(setup: Setup) -> None:
    init = setup.repo.path / "src" / "demo_pkg" / "__init__.py"
    original = init.read_text()
    init.write_text('raise SystemExit("imported!")\n')
    try:
        out, data = doctor(setup, setup.editable, code=1)  # the edit itself is a finding
    finally:
        init.write_text(original)
    assert "this work tree" in out and kinds(data) == ["edits"]
    assert os.path.basename(data["python"]).startswith("python")


def test_an_import_from_another_worktree_is_named(setup: Setup) -> None:
    repo = setup.repo
    repo.ps("worktree", "../experiment", "--only", "essential")
    pth = setup.editable.parent.parent / "lib"
    found = next(pth.glob("python*/site-packages/__editable__.demo_pkg-1.0.pth"))
    saved = found.read_text()
    found.write_text(f"{repo.path.parent / 'experiment' / 'src'}\n")
    try:
        out, data = doctor(setup, setup.editable, code=1)
    finally:
        found.write_text(saved)
        repo.ps("worktree", "--remove", "../experiment")
    assert "resolves to another worktree of this repository" in out
    assert data["where"] == "another worktree" and kinds(data) == ["other-worktree"]


def test_a_patch_file_edited_since_it_was_applied_is_named(setup: Setup) -> None:
    patch = setup.repo.path / "patches" / "fast-path.patch"
    saved = patch.read_bytes()
    patch.write_bytes(
        saved.replace(b"+    return 94  # the fast path", b"+    return 95  # faster")
    )
    try:
        out, data = doctor(setup, setup.editable, code=1)
    finally:
        patch.write_bytes(saved)
    assert "fast-path.patch was edited since it was applied" in out
    assert kinds(data) == ["patch-edited"]


def test_the_probe_runs_no_file_of_the_repository(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26, item 6: modules of the standard library planted in the user's folder (and in
    a folder on PYTHONPATH) are not what the probe imports; it still finds the package there."""
    src = setup.repo.path / "src"
    marker = tmp_path / "ran"
    planted = [src / f"{name}.py" for name in ("typing", "json", "csv", "re", "site")]
    for path in planted:
        path.write_text(f"open({str(marker)!r}, 'a').write({path.name!r} + '\\n')\n")
    try:
        out, data = doctor(setup, sys.executable, code=0, cwd=src)
        assert "import demo_pkg: src/demo_pkg (this work tree, on sys.path; not installed)" in out
        assert "works only from this folder" in out and kinds(data) == ["only-here"]
        monkeypatch.setenv("PYTHONPATH", str(src))  # a service started with it finds it too
        out, data = doctor(setup, sys.executable, code=0)
        assert "import demo_pkg: src/demo_pkg (this work tree" in out
        assert "everything agrees" in out and kinds(data) == []
    finally:
        for path in planted:
            path.unlink()
    assert not marker.exists(), marker.read_text()
