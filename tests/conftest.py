"""Test fixtures: real git repositories in temporary folders, in a sealed environment."""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click.testing import CliRunner

from patchstack.cli import cli
from patchstack.demo import Sandbox, build_sandbox
from patchstack.git.base import GitBase

from . import schemas

SEALED = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.org",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "NO_COLOR": "1",
    "LC_ALL": "C",
}


T = TypeVar("T")

# The tests' temporary folders in memory where the machine has room there: every git command
# writes files (objects, index and lock files), every set-up too, and a new file cost 0.45 ms
# of CPU on the ext4 disk of the project's machine against 0.04 ms in /dev/shm (what the
# scratch store, git/scratch.py, saves a refresh). Only the folder changes, not what a test
# runs or checks; a TMPDIR or --basetemp of the user's is kept.
IN_MEMORY = "/dev/shm"
IN_MEMORY_MIN_FREE = 2 << 30


def pytest_configure(config: pytest.Config) -> None:
    _in_memory(config)
    _bytecode_outside_the_tree()


def _in_memory(config: pytest.Config) -> None:
    if config.option.basetemp or "TMPDIR" in os.environ:
        return
    try:
        stat = os.statvfs(IN_MEMORY)
    except OSError:
        return
    if stat.f_bavail * stat.f_frsize >= IN_MEMORY_MIN_FREE and os.access(IN_MEMORY, os.W_OK):
        os.environ["TMPDIR"] = IN_MEMORY  # xdist's workers, the CLI's processes and git's too
        tempfile.tempdir = None  # read again


# Where the environment says not to write compiled modules (PYTHONDONTWRITEBYTECODE, as on the
# project's machine), each xdist worker compiled every test module (and its assertion
# rewrite) and every module of patchstack at each run: 7.5 s of CPU a worker against 1.9. This
# process keeps them in a cache outside the tree (sys.pycache_prefix, kept across runs). Not
# the processes a test starts: they keep the environment's setting (a test that rewrites a
# module within the same second and runs it again, bisect's, would read the stale one).
BYTECODE_CACHE = "patchstack-tests-pycache"


def _bytecode_outside_the_tree() -> None:
    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        sys.pycache_prefix = os.path.join(tempfile.gettempdir(), f"{BYTECODE_CACHE}-{os.getuid()}")
        sys.dont_write_bytecode = False


UNSET = ("PATCHSTACK_DIR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "QUILT_PATCHES")
# The interpreter under test first on PATH, as in the README's activated environment: the
# example's probes and the Action's steps run `python3`, which is then this one (not a version
# manager's shim: pyenv's runs about twenty bash processes before each python).
VENV_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


@pytest.fixture(autouse=True)
def sealed_env(monkeypatch, tmp_path):
    for key, value in SEALED.items():
        monkeypatch.setenv(key, value)
    for key in UNSET:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", VENV_PATH)


# Every repository object a test made, closed when the test ends: a Git object keeps batch
# processes (two pipes each) until closed, and one a test drops unclosed is not freed with
# them: Popen keeps a child that still runs (subprocess._active), pipes and all. A worker
# runs over a thousand tests: their descriptors reached select()'s limit of 1,024.
_LIVE_GITS: list[GitBase] = []
_git_init = GitBase.__init__


def _tracked_init(self: GitBase, *args: Any, **kwargs: Any) -> None:
    _git_init(self, *args, **kwargs)
    _LIVE_GITS.append(self)


GitBase.__init__ = _tracked_init  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _close_repository_objects():
    yield
    for git in list(_LIVE_GITS):
        git.close()
    _LIVE_GITS.clear()


@pytest.fixture(scope="module")
def module_env(tmp_path_factory):
    """The sealed environment for fixtures built once per module (then copied per test)."""
    mp = pytest.MonkeyPatch()
    for key, value in SEALED.items():
        mp.setenv(key, value)
    for key in UNSET:
        mp.delenv(key, raising=False)
    mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    mp.setenv("PATH", VENV_PATH)
    yield tmp_path_factory
    mp.undo()


def copy_repo(src: Path, dst: Path) -> Repo:
    """A copy of a fixture repository (timestamps kept, so git's stat data stays valid)."""
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    return Repo(dst)


_BUILT: dict[Hashable, tuple[Path, list[Path], list[Path], Any]] = {}
_BUILT_ROOT: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _built_once_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    _BUILT_ROOT.append(tmp_path_factory.mktemp("built-once"))


def built_once(build: Callable[..., T]) -> Callable[..., T]:
    """A set-up ``build(tmp_path, *args)`` that makes repositories below ``tmp_path``, run once
    per worker for the same arguments (and the same PATCHSTACK_*/GIT_* environment); each call
    gets a fresh copy of what it made in its own ``tmp_path`` (the Repo and Path values it
    returned, also as attributes, point into the copy; so do the clones' remotes). A set-up
    that writes its folder's absolute path anywhere else (a linked worktree) fails at once."""

    @functools.wraps(build)
    def copied(tmp_path: Path, *args: Any, **kwargs: Any) -> T:
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_KEYED_ENV)))
        given = (args, tuple(sorted(kwargs.items())))
        try:
            hash(given)
        except TypeError:  # a mutable value (a dataclass, a dict): its repr tells it apart
            given = repr(given)
        key = (build.__module__, build.__qualname__, given, env)
        if key not in _BUILT:
            box = Path(tempfile.mkdtemp(prefix=build.__name__, dir=_BUILT_ROOT[0]))
            where = box / "t"
            where.mkdir()
            made = build(where, *args, **kwargs)
            assert list(box.iterdir()) == [where], f"built_once: {build} wrote beside its folder"
            work_trees = [p.parent.relative_to(where) for p in where.rglob(".git")]
            _BUILT[key] = (where, work_trees, _naming_their_folder(where), made)
        where, work_trees, naming, made = _BUILT[key]
        shutil.copytree(where, tmp_path, symlinks=True, dirs_exist_ok=True)
        for rel in naming:
            path = tmp_path / rel
            path.write_bytes(path.read_bytes().replace(bytes(where), bytes(tmp_path)))
        for rel in work_trees:  # the copy's inodes and ctimes are new: git's stat data too
            subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=tmp_path / rel)
        return _moved(made, where, tmp_path)  # type: ignore[no-any-return]

    return copied


_KEYED_ENV = ("PATCHSTACK", "GIT_")
# patchstack's own files that hold their repository's path and are made again in another one;
# the cache (store.py) checks every entry before use, and one keyed by a patch file's path and
# stat data (a proof, kept once the file is two seconds old: on a slow machine only) misses
_SELF_CHECKING = (
    "patchstack/series-stat-cache",
    "patchstack/format.git/objects/info/alternates",
    "patchstack/cache",
)
# git's: a clone's remote, a fetch's source, a linked worktree's two links (and logs/)
_RELOCATED = ("config", "FETCH_HEAD", "gitdir", ".git")


def _naming_their_folder(where: Path) -> list[Path]:
    """The files that hold ``where``'s path: git's, which the copy rewrites; any other fails."""
    found = []
    for p in where.rglob("*"):
        if p.as_posix().endswith(_SELF_CHECKING) or not p.is_file() or p.is_symlink():
            continue
        if bytes(where) in p.read_bytes():
            git_text = p.name in _RELOCATED or "logs" in p.relative_to(where).parts
            assert git_text, f"built_once: {p} holds its folder's path"
            found.append(p.relative_to(where))
    return found


def _moved(value: Any, old: Path, new: Path) -> Any:
    if isinstance(value, Repo):
        return Repo(_moved(value.path, old, new))
    if isinstance(value, Path):
        return new / value.relative_to(old) if value.is_relative_to(old) else value
    if isinstance(value, tuple | list):
        return type(value)(_moved(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):  # a set-up's own class
        value = copy.copy(value)
        vars(value).update({k: _moved(v, old, new) for k, v in vars(value).items()})
    return value


LEARNED = "patches/resolutions/"  # recorded resolutions: kept by undo on purpose


# The set-ups' own commits (merges, fetches) start no ``git maintenance run --auto`` after
# each: a process that finds gc's thresholds (thousands of loose objects) not reached, as a
# test's repository never reaches them; it was one git process in 58 of a sample of the
# suite's. Only the test's git commands: patchstack's own run as a user's would.
_AUTO_MAINTAINED = frozenset({"commit", "merge", "am", "rebase", "cherry-pick", "fetch", "pull"})
_NO_AUTO_MAINTENANCE = ("-c", "maintenance.auto=false")


# The set-ups' git by its absolute path, looked up once for each PATH (as the product's
# `git_program` does): a bare ``git`` is an exec tried in each folder of PATH before git's.
_GIT_AT: dict[str, str] = {}


def _git() -> str:
    path = os.environ.get("PATH", os.defpath)
    if path not in _GIT_AT:
        absolute = all(os.path.isabs(f) for f in path.split(os.pathsep))
        _GIT_AT[path] = (shutil.which("git", path=path) if absolute else None) or "git"
    return _GIT_AT[path]


class Repo:
    """A git repository in a temporary folder, driven through git and the real CLI."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def git(self, *args: str, check: bool = True, input: str | None = None) -> str:
        quiet = _NO_AUTO_MAINTENANCE if args and args[0] in _AUTO_MAINTAINED else ()
        proc = subprocess.run(
            [_git(), *quiet, *args], cwd=self.path, capture_output=True, text=True, input=input
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args} failed: {proc.stderr}")
        return proc.stdout

    def write(self, rel: str, text: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def commit_all(self, message: str) -> str:
        self.git("add", "-A", "--", ".", ":(exclude)patches")
        self.git("commit", "-q", "-m", message)
        return self.head()

    def commit_steps(self, steps: Sequence[tuple[str, dict[str, str | None]]]) -> list[str]:
        """One commit per (message, {path: new text, or None to delete}) on top of HEAD's
        branch, as ``write`` + ``commit_all`` one step at a time makes them (the sealed
        author, committer and date; files as 100644) but in one ``fast-import`` instead of two
        git processes a step; the index and work tree then hold the last (untracked files are left
        as they are, tracked changes are refused). Returns the ids."""
        branch = self.git("symbolic-ref", "-q", "HEAD").strip()
        changed = self.git("status", "--porcelain", "--untracked-files=no")
        assert not changed, f"commit_steps: the work tree has changes:\n{changed}"
        first = self.head()
        out: list[bytes] = []
        for n, (message, files) in enumerate(steps):
            text = message.encode() + (b"" if message.endswith("\n") else b"\n")
            out.append(b"commit %s\n" % branch.encode())
            for who in ("AUTHOR", "COMMITTER"):
                name, email = os.environ[f"GIT_{who}_NAME"], os.environ[f"GIT_{who}_EMAIL"]
                when = int(datetime.fromisoformat(os.environ[f"GIT_{who}_DATE"]).timestamp())
                out.append(f"{who.lower()} {name} <{email}> {when} +0000\n".encode())
            out.append(b"data %d\n%s\n" % (len(text), text))
            if n == 0:
                out.append(b"from %s\n" % first.encode())
            for rel, content in files.items():
                quoted = b'"' + rel.encode().replace(b"\\", b"\\\\").replace(b'"', b'\\"')
                quoted += b'"'
                if content is None:
                    out.append(b"D %s\n" % quoted)
                else:
                    data = content.encode()
                    out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (quoted, len(data), data))
            out.append(b"\n")
        stream = b"".join(out) + b"done\n"
        fast_import = ["git", "fast-import", "--quiet", "--done"]
        subprocess.run(fast_import, cwd=self.path, input=stream, check=True)
        self.git("reset", "-q", "--hard")
        return self.git("rev-list", "--reverse", f"{first}..HEAD").split()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def tree(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", f"{rev}^{{tree}}").strip()

    def ps(
        self, *args: str, code: int | None = 0, cwd: Path | None = None, input: str | None = None
    ):
        """Run the patchstack CLI in-process; assert the exit status unless code is None.
        ``input``: standard input (not a terminal), as scripted answers."""
        old = os.getcwd()
        os.chdir(cwd or self.path)
        try:
            result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        finally:
            os.chdir(old)
        if code is not None:
            assert result.exit_code == code, (
                f"patchstack {' '.join(args)} exited {result.exit_code}, wanted {code}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        if result.exit_code in (0, 1) and schemas.schema_name(args):
            written = schemas.output_file(args)
            text = ((cwd or self.path) / written).read_text() if written else result.stdout
            schemas.check_output(args, text)  # every --json output, against its schema
        return result

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the work tree and of the series directory (not .git), but for the
        recorded resolutions: what a refresh learns is not state, and undo leaves it."""
        files = {}
        for p in sorted(self.path.rglob("*")):
            if ".git" in p.relative_to(self.path).parts or not p.is_file():
                continue
            rel = str(p.relative_to(self.path))
            if not rel.startswith(LEARNED):
                files[rel] = p.read_bytes()
        return files

    def status_all(self, *options: str) -> str:
        """``git status --porcelain --untracked-files=all``, but for the recorded resolutions."""
        status = self.git(*options, "status", "--porcelain", "--untracked-files=all")
        return "".join(ln for ln in status.splitlines(True) if not ln[3:].startswith(LEARNED))

    def state(self) -> tuple[str, str, dict[str, bytes]]:
        return self.head(), self.status_all(), self.snapshot()


def slow_after(values: Sequence[Any], keep: int) -> list[Any]:
    """``values`` for a parametrize: the first ``keep`` run by default, the rest only with
    ``-m slow`` (.ci/run runs both), so that the README's test command stays short."""
    out = []
    for i, v in enumerate(values):
        plain = not isinstance(v, type(pytest.param(0)))
        args, marks, name = ((v,), [], None) if plain else (v.values, list(v.marks), v.id)
        if i >= keep:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(*args, marks=marks, id=name) if marks else v)
    return out


def make_repo(path: Path, files: dict[str, str]) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    for rel, text in files.items():
        repo.write(rel, text)
    repo.commit_all("Upstream snapshot")
    return repo


def numbered(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def replace_line(repo: Repo, rel: str, old: str, new: str) -> None:
    text = repo.read(rel)
    assert old in text, (rel, old)
    repo.write(rel, text.replace(old, new, 1))


def pushed_sandbox(tmp_path: Path, only: str | None = None) -> Sandbox:
    """`build_sandbox` in ``tmp_path/sandbox`` with ``push --all`` (``--only ONLY``) run in its
    fork: built once per worker, copied."""
    root, upstream, fork, pull, base, later = _pushed_sandbox(tmp_path, only)
    return Sandbox(str(root), str(upstream), str(fork), pull, base, later)


@built_once
def _pushed_sandbox(tmp_path: Path, only: str | None) -> tuple[Any, ...]:
    box = build_sandbox(str(tmp_path / "sandbox"))
    Repo(box.fork).ps("push", *(("--only", only) if only else ("--all",)))
    # Paths, which the copy moves (the sandbox's own fields are strings).
    where = (Path(box.root), Path(box.upstream), Path(box.fork))
    return (*where, box.pull_patches, box.base, box.later_patches)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "fork", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})


def names(repo: Repo, args: Sequence[str] = ()) -> list[str]:
    import json

    data = json.loads(repo.ps("series", "--json", *args).stdout)
    return [p["name"] for p in data["patches"] if p["applied"]]
