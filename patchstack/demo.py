"""The bundled example: a sandbox fork to try patchstack on, and the demo that walks the story.

The example ships as package data (``series/`` at the top of the project): the upstream tree,
the seven-patch series, and four later upstream commits. `build_sandbox` lays out

    DIR/upstream   the upstream repository at the base commit
    DIR/fork       a clone of it with the series in patches/ and every patch applied

with fixed identities and dates, so the base commit is the one the series names.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from . import git as gitmod
from .errors import PatchstackError

UPSTREAM_IDENT = ("Upstream Maintainers", "upstream@example.org")
BASE_DATE = "2026-01-05T10:00:00+00:00"
# The user's own git configuration (signing, hooks, autocrlf) must not change the example's ids.
SEALED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class Sandbox:
    root: str
    upstream: str
    fork: str
    pull_patches: tuple[str, ...]
    base: str = ""  # the upstream commit the series was made on
    later_patches: tuple[str, ...] = ()  # an upstream commit after the refresh


def example_dir() -> str:
    """The bundled example's folder (``series/`` in a checkout, package data when installed)."""
    try:
        return str(resources.files("patchstack.example"))
    except ModuleNotFoundError:  # running from a source checkout that is not installed
        checkout = os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "series"
        )
        if os.path.isdir(os.path.join(checkout, "patches")):
            return checkout
        raise


def _copy_tree(src: str, dest: str) -> None:
    shutil.copytree(
        src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )


def build_sandbox(root: str) -> Sandbox:
    if os.path.exists(root) and os.listdir(root):
        raise PatchstackError(f"{root} exists and is not empty", "give a new or empty folder")
    example = example_dir()
    upstream = os.path.join(root, "upstream")
    fork = os.path.join(root, "fork")
    repo = gitmod.init_repo(upstream)
    _copy_tree(os.path.join(example, "upstream"), upstream)
    env = {**gitmod.ident_env(*UPSTREAM_IDENT, BASE_DATE), **SEALED}
    base = repo.commit_all("Upstream snapshot", env)
    with open(os.path.join(example, "patches", "series"), encoding="utf-8") as f:
        series_text = f.read()
    if base not in series_text:
        raise PatchstackError(
            f"the example's base commit came out as {base}",
            "the bundled example does not match this git; please report it",
        )
    gitmod.clone(upstream, fork)
    _copy_tree(os.path.join(example, "patches"), os.path.join(fork, "patches"))
    return Sandbox(
        root,
        upstream,
        fork,
        _patches(example, "upstream-pull"),
        base,
        _patches(example, "upstream-later"),
    )


def _patches(example: str, folder: str) -> tuple[str, ...]:
    where = os.path.join(example, folder)
    return tuple(sorted(os.path.join(where, f) for f in os.listdir(where) if f.endswith(".patch")))


def upstream_pull(box: Sandbox, later: bool = False) -> None:
    """Upstream moves: the upstream pull (``later``: the commit after it) lands in
    DIR/upstream."""
    repo = gitmod.find_repo(box.upstream)
    try:
        patches = box.later_patches if later else box.pull_patches
        repo.am(patches, {**gitmod.ident_env(*UPSTREAM_IDENT), **SEALED})
    finally:
        repo.close()


# -- the story ----------------------------------------------------------------------------------

# How the demo resolves the one real conflict of the upstream pull: upstream replaced
# init_distributed_environment by init_tp_group in the scheduler; the diagnostic patch's NCCL
# logging is kept and now describes the new call.
RESOLVED_FILE = "srt/managers/scheduler.py"
RESOLUTION = """\
        nccl_env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}
        logger.info(
            "Init TP group %d/%d on gpu %d via %s, NCCL env: %s.",
            self.tp_rank, self.tp_size, self.gpu_id, self.dist_init_method, nccl_env or "(none)",
        )
        self.tp_group = init_tp_group(
            backend=self.server_args.dist_backend,
"""


def resolve_conflict(text: str) -> str:
    """Replace the conflict region (markers included) by the demo's resolution."""
    start = text.index("<<<<<<< ")
    end = text.index("\n", text.index(">>>>>>> ", start)) + 1
    return text[:start] + RESOLUTION + text[end:]


@dataclass(frozen=True)
class Step:
    say: str  # what the step shows, in a sentence
    command: str  # the exact command a user would type in DIR/fork
    expect: int = 0  # the exit status the step is expected to have


def run_demo(root: str, run_cli: Callable[[list[str]], int], echo: Callable[..., None]) -> int:
    """Walk the story in ``root``. ``run_cli(args) -> exit status`` runs patchstack in the fork;
    ``echo(text, bold=False)`` prints. Returns 0 when every step ended as expected."""
    import difflib

    box = build_sandbox(root)
    fork_rel = os.path.relpath(box.fork)
    echo(f"A sandbox fork is in {fork_rel} (its upstream in {os.path.relpath(box.upstream)}).")
    echo(f"Every step shows the command; run it yourself there: cd {fork_rel}\n")
    failures = []

    def step(say: str, command: str, expect: int = 0) -> None:
        echo(f"# {say}")
        echo(f"$ {command}", bold=True)
        code = run_cli(command.split()[1:])
        if code != expect:
            failures.append(f"'{command}' exited {code}, expected {expect}")
        echo("")

    step(
        "The fork's seven local modifications, each a named patch with a tag:", "patchstack series"
    )
    step("Apply them all (each is one commit on top of upstream):", "patchstack push --all")
    step(
        "Strip the diagnostics and optimizations from the middle of the stack; the essential"
        " patches stay applied:",
        "patchstack pop --only diagnostic,optimization",
    )
    step("A clean essential-only baseline, proven from the commits:", "patchstack series")
    step("Everything back, byte for byte the same commits:", "patchstack push --all")

    echo("# Upstream moves: four commits land upstream, and the fork fetches them.")
    echo(
        f"$ (cd {os.path.relpath(box.upstream, box.fork)} && git am ...upstream-pull/*.patch)"
        " && git fetch",
        bold=True,
    )
    upstream_pull(box)
    fork = gitmod.find_repo(box.fork)
    try:
        fork.fetch()
    finally:
        fork.close()
    echo("")
    step(
        "status says the base moved and which upstream commits touch patched files:",
        "patchstack status",
    )
    step(
        "check: would the series apply on the new upstream? (what CI runs every night)",
        "patchstack check",
        expect=1,
    )
    echo("# Keep the series as it is now, to review the refresh afterwards:")
    echo("$ cp -r patches ../patches-before", bold=True)
    shutil.copytree(os.path.join(box.fork, "patches"), os.path.join(root, "patches-before"))
    echo("")
    echo("# git fetch, then refresh --onto, works whatever the stack's state; a plain 'git pull'")
    echo(
        "# stops here (the branch and upstream have diverged): see README, 'After upstream moves'."
    )
    step(
        "refresh replays every patch onto the new upstream; it stops at the real conflict:",
        "patchstack refresh --onto origin/main",
        expect=1,
    )

    path = os.path.join(box.fork, RESOLVED_FILE)
    with open(path, encoding="utf-8") as f:
        conflicted = f.read()
    resolved = resolve_conflict(conflicted)
    echo(
        f"# The demo resolves the conflict in {RESOLVED_FILE} (keep upstream's new call,"
        " keep the NCCL logging):"
    )
    for line in difflib.unified_diff(
        conflicted.splitlines(),
        resolved.splitlines(),
        f"a/{RESOLVED_FILE}",
        f"b/{RESOLVED_FILE}",
        lineterm="",
    ):
        echo(line)
    with open(path, "w", encoding="utf-8") as f:
        f.write(resolved)
    echo("")
    step("Go on (no git add needed):", "patchstack refresh --continue")
    step(
        "Review the refreshed series patch by patch, as a PR comment would show it:",
        "patchstack review ../patches-before patches",
    )
    step(
        "Applied is not the same as working: each essential patch carries a probe, a command"
        " that passes with it and fails without it. check --probes runs each in scratch trees,"
        " with and without its patch:",
        "patchstack check --probes --only essential",
    )
    experiments(box, step, echo)
    absorbed(box, step, echo)
    if failures:
        echo("the demo did not go as planned: " + "; ".join(failures))
        return 1
    echo(f"Done. The sandbox stays in {os.path.relpath(root)}; try your own commands there.")
    return 0


HOTFIX_FILE = "srt/utils.py"


def experiments(box: Sandbox, step: Callable[..., None], echo: Callable[..., None]) -> None:
    """The experiment commands: a side-by-side worktree, bisect across the refresh with every
    patch carried, and doctor before and after a hot fix made outside any patch."""
    step(
        "A worktree beside the fork with only the essential patches, for an A/B run (your"
        " checkout is not touched; 'cd ../essential-only && patchstack status' works there):",
        "patchstack worktree ../essential-only --only essential",
    )
    step("The experiment worktrees and what each carries:", "patchstack worktree --list")
    step(
        "Which upstream commit of the pull stopped the scheduler calling"
        " init_distributed_environment, with every patch carried at every step? Each step runs"
        " in a scratch worktree, and the bisect crosses the refresh: before 9d6d1af69a it"
        " carries the patches as they were before the refresh (the operation log keeps every"
        " version of the series), from there on the refreshed ones, and it says which:",
        f"patchstack bisect {box.base[:10]} origin/main --"
        " grep -q init_distributed_environment srt/managers/scheduler.py",
    )
    step(
        "doctor: does the interpreter import this work tree, as the series describes it?",
        "patchstack doctor --module srt",
    )
    path = os.path.join(box.fork, HOTFIX_FILE)
    with open(path, "rb") as f:
        original = f.read()
    echo(f"# Someone hot-fixes {HOTFIX_FILE} by hand, in no patch:")
    echo(f"$ echo 'RETRIES = 5  # hot fix' >> {HOTFIX_FILE}", bold=True)
    with open(path, "ab") as f:
        f.write(b"RETRIES = 5  # hot fix\n")
    echo("")
    step(
        "doctor names it, with the next step (exit status 1):", "patchstack doctor --module srt", 1
    )
    echo(f"# The demo takes the hot fix out again: git checkout {HOTFIX_FILE}\n")
    with open(path, "wb") as f:
        f.write(original)


def absorbed(box: Sandbox, step: Callable[..., None], echo: Callable[..., None]) -> None:
    """A later upstream commit that merges cleanly and makes a patch needless: check still
    says every patch applies, and only the probe notices; the patch is marked upstream."""
    echo("# Upstream moves again: it now allows the fused all-reduce on every SM from 90 up.")
    echo(
        f"$ (cd {os.path.relpath(box.upstream, box.fork)} && git am ...upstream-later/*.patch)"
        " && git fetch",
        bold=True,
    )
    upstream_pull(box, later=True)
    fork = gitmod.find_repo(box.fork)
    try:
        fork.fetch()
    finally:
        fork.close()
    echo("")
    step(
        "It merges cleanly, so every patch still applies; but communicator-sm120's probe now"
        " passes without it too: upstream absorbed it (exit status 1):",
        "patchstack check --probes --only essential",
        1,
    )
    step(
        "Record where it stands upstream (a DEP-3 field in its header, undoable):",
        "patchstack upstream communicator-sm120 applied origin/main",
    )
    step("status sums up the probes and the upstream states:", "patchstack status")
