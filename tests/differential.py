"""The differential generator: small random repositories, series and upstream moves, and the
comparison of what patchstack makes of them with what git's merge-ort makes, one patch at a
time (``git rebase --reapply-cherry-picks``, each conflict skipped).

A case is made from one seed (`make_case`): an upstream base of a few folders of files, a
series of patches that modify, add (in existing and new folders), delete, rename, change modes
and types (a file becomes a symlink or a folder), move folders; and an upstream move that
modifies, renames files and folders, deletes, changes modes, adds files, and takes patches
verbatim or differently. Each file's lines are unique, so that git's rename detection and
three-way merges have real work to do. The whole case is written with one ``fast-import``.

`compare` runs patchstack (``check --onto``, ``refresh --onto``, ``push --all --onto``, and
``push NAME`` of a patch ``--defer-conflicts`` deferred, with the shortcuts on and off) and
the reference, and returns the differences, each one sentence: the conflict sets, which
patches upstream already has, and, where clean, the tree, modes and message of every commit.
An empty list is agreement. ``describe`` tells what a case is, to reproduce a failure:
``PATCHSTACK_DIFF_SEEDS=17 python -m pytest tests/test_differential.py``.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .conftest import Repo

Files = dict[str, tuple[str, bytes]]  # path -> (mode, content); a symlink's content is its target

AUTHORS = (
    "Ada Lovelace <ada@example.org>",
    "John Smith Jr. <john@example.org>",  # git strips the trailing dot (its rule for names)
    "Grace Hopper <grace@example.org>",
)
EPOCH = 1_767_225_600  # 2026-01-01


@dataclass
class Case:
    seed: int
    base: Files
    patches: list[tuple[str, Files, list[str]]]  # (subject, files after it, what it does)
    upstream: list[tuple[str, Files, list[str]]]  # (subject, files after it, what it does)
    directory_renames: str | None  # merge.directoryRenames, None: git's default
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"seed {self.seed}, merge.directoryRenames={self.directory_renames}"]
        lines += [f"  base: {', '.join(sorted(self.base))}"]
        for subject, _files, ops in self.patches:
            lines.append(f"  patch {subject}: {'; '.join(ops)}")
        for subject, _files, ops in self.upstream:
            lines.append(f"  upstream {subject}: {'; '.join(ops)}")
        return "\n".join(lines)


# -- the generator ---------------------------------------------------------------------------


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def text(self, tag: str, n: int) -> bytes:
        return "".join(f"{tag} line {i}\n" for i in range(n)).encode()

    def regular(self, files: Files) -> list[str]:
        return sorted(p for p, (mode, _c) in files.items() if mode != "120000")

    def folders(self, files: Files) -> list[str]:
        found = {p.rsplit("/", 1)[0] for p in files if "/" in p}
        more = {d.rsplit("/", 1)[0] for d in found if "/" in d}
        return sorted(found | more)

    def base(self) -> Files:
        rng = self.rng
        files: Files = {}
        folders = ["src", "lib", "plugins", "src/core"]
        for _ in range(rng.randint(7, 11)):
            where = rng.choice(["", *folders, *folders])
            name = self.fresh("f") + rng.choice([".py", ".py", ".txt", ".sh"])
            path = f"{where}/{name}" if where else name
            mode = "100755" if name.endswith(".sh") else "100644"
            files[path] = (mode, self.text(name, rng.randint(12, 30)))
        return files

    def edit(self, files: Files, path: str, tag: str, near: int | None = None) -> int:
        """Replace or insert a line (at ``near`` when given); the line index it touched."""
        mode, content = files[path]
        lines = content.decode().splitlines(keepends=True)
        at = near if near is not None else self.rng.randrange(len(lines))
        at = max(0, min(at, len(lines) - 1))
        new = f"{tag} changed {at}\n"
        if self.rng.random() < 0.6:
            lines[at] = new
        else:
            lines.insert(at, new)
        files[path] = (mode, "".join(lines).encode())
        return at

    def patch(self, files: Files, k: int) -> tuple[Files, list[str], dict[str, int]]:
        """One patch on ``files``: its result, what it did, and the lines it edited."""
        rng = self.rng
        out = dict(files)
        ops: list[str] = []
        touched: dict[str, int] = {}
        for _ in range(rng.choice([1, 1, 2])):
            kind = rng.choices(
                ["edit", "add", "delete", "rename", "chmod", "symlink", "to-folder", "move-dir"],
                weights=[10, 4, 2, 3, 2, 1, 1, 1],
            )[0]
            regular = self.regular(out)
            if kind == "edit" and regular:
                path = rng.choice(regular)
                touched[path] = self.edit(out, path, f"p{k}")
                ops.append(f"edit {path}:{touched[path]}")
            elif kind == "add":
                folders = self.folders(out)
                where = rng.choice([*folders, "", self.fresh("newdir"), f"src/{self.fresh('sub')}"])
                path = (f"{where}/" if where else "") + self.fresh("added") + ".py"
                if path not in out:
                    out[path] = ("100644", self.text(path, rng.randint(3, 8)))
                    ops.append(f"add {path}")
            elif kind == "delete" and len(regular) > 3:
                path = rng.choice(regular)
                del out[path]
                ops.append(f"delete {path}")
            elif kind == "rename" and regular:
                path = rng.choice(regular)
                where = rng.choice([*self.folders(out), ""])
                new = (f"{where}/" if where else "") + self.fresh("moved") + ".py"
                if new not in out:
                    out[new] = out.pop(path)
                    if rng.random() < 0.4:
                        self.edit(out, new, f"p{k}")
                    ops.append(f"rename {path} -> {new}")
            elif kind == "chmod" and regular:
                path = rng.choice(regular)
                mode, content = out[path]
                out[path] = ("100755" if mode == "100644" else "100644", content)
                ops.append(f"chmod {path}")
            elif kind == "symlink" and regular:
                path = rng.choice(regular)
                out[path] = ("120000", rng.choice(regular).encode())
                ops.append(f"symlink {path}")
            elif kind == "to-folder" and regular:
                path = rng.choice(regular)
                if not any(p.startswith(path + "/") for p in out):
                    del out[path]
                    out[f"{path}/inner.py"] = ("100644", self.text(path + " inner", 5))
                    ops.append(f"file {path} -> folder")
            elif kind == "move-dir":
                folders = [d for d in self.folders(out) if "/" not in d]
                if folders:
                    old = rng.choice(folders)
                    new = self.fresh("ext")
                    for p in [p for p in out if p.startswith(old + "/")]:
                        out[new + p[len(old) :]] = out.pop(p)
                    ops.append(f"move folder {old}/ -> {new}/")
        return out, ops, touched

    def upstream(
        self, files: Files, patches: Sequence[tuple[Files, Files, dict[str, int]]]
    ) -> tuple[Files, list[str]]:
        """One upstream commit on ``files``; ``patches``: (before, after, edited lines) each."""
        rng = self.rng
        out = dict(files)
        ops: list[str] = []
        kind = rng.choices(
            [
                "edit-far",
                "edit-same",
                "rename",
                "rename-dir",
                "delete",
                "chmod",
                "add",
                "take",
                "take-differently",
            ],
            weights=[5, 3, 3, 3, 1, 1, 2, 2, 2],
        )[0]
        regular = self.regular(out)
        if kind in ("edit-far", "edit-same") and regular:
            hot = [(p, line) for _b, _a, t in patches for p, line in t.items() if p in out]
            if kind == "edit-same" and hot:
                path, line = rng.choice(hot)
                if out[path][0] != "120000":
                    self.edit(out, path, "up", line)
                    ops.append(f"edit {path}:{line} (a patch's line)")
            else:
                path = rng.choice(regular)
                at = self.edit(out, path, "up")
                ops.append(f"edit {path}:{at}")
        elif kind == "rename" and regular:
            path = rng.choice(regular)
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            new = (f"{folder}/" if folder else "") + self.fresh("renamed") + ".py"
            out[new] = out.pop(path)
            ops.append(f"rename {path} -> {new}")
        elif kind == "rename-dir":
            folders = self.folders(out)
            if folders:
                old = rng.choice(folders)
                new = (old.rsplit("/", 1)[0] + "/" if "/" in old else "") + self.fresh("newdir")
                for p in [p for p in out if p.startswith(old + "/")]:
                    out[new + p[len(old) :]] = out.pop(p)
                ops.append(f"rename folder {old}/ -> {new}/")
        elif kind == "delete" and len(regular) > 3:
            path = rng.choice(regular)
            del out[path]
            ops.append(f"delete {path}")
        elif kind == "chmod" and regular:
            path = rng.choice(regular)
            mode, content = out[path]
            out[path] = ("100755" if mode == "100644" else "100644", content)
            ops.append(f"chmod {path}")
        elif kind == "add":
            folders = self.folders(out)
            if folders:
                path = f"{rng.choice(folders)}/{self.fresh('upadd')}.py"
                out[path] = ("100644", self.text(path, 6))
                ops.append(f"add {path}")
        elif kind in ("take", "take-differently") and patches:
            before, after, _t = rng.choice(list(patches))
            changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
            if all(out.get(p) == before.get(p) for p in changed):
                for p in changed:
                    if p in after:
                        out[p] = after[p]
                    else:
                        out.pop(p, None)
                ops.append("take a patch: " + ", ".join(sorted(changed)))
                if kind == "take-differently":
                    mine = [p for p in changed if p in out and out[p][0] != "120000"]
                    if mine:
                        path = rng.choice(mine)
                        self.edit(out, path, "up-extra")
                        ops[-1] += f" (and edit {path})"
        _drop_clashes(out)
        return out, ops


def _drop_clashes(files: Files) -> None:
    """A path cannot be both a file and a folder: drop the files under a file."""
    for p in sorted(files):
        parts = p.split("/")
        if any("/".join(parts[:i]) in files for i in range(1, len(parts))):
            del files[p]


def make_case(seed: int) -> Case:
    gen = _Gen(seed)
    rng = gen.rng
    base = gen.base()
    patches: list[tuple[str, Files, list[str]]] = []
    made: list[tuple[Files, Files, dict[str, int]]] = []
    cur = base
    for k in range(1, rng.randint(3, 6) + 1):
        after, ops, touched = gen.patch(cur, k)
        _drop_clashes(after)
        if after == cur:
            after, ops, touched = dict(cur), [], {}
            path = gen.regular(cur)[0]
            touched[path] = gen.edit(after, path, f"p{k}")
            ops.append(f"edit {path}:{touched[path]}")
        patches.append((f"p{k}-{seed}", after, ops))
        made.append((cur, after, touched))
        cur = after
    upstream: list[tuple[str, Files, list[str]]] = []
    cur = base
    for u in range(1, rng.randint(1, 4) + 1):
        after, ops = gen.upstream(cur, made)
        if after == cur:
            continue
        upstream.append((f"up{u}", after, ops))
        cur = after
    renames = rng.choice([None, None, "true"])
    return Case(seed, base, patches, upstream, renames)


# -- writing a case --------------------------------------------------------------------------


def _quote(path: str) -> bytes:
    return b'"' + path.encode().replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def write_case(case: Case, path: Path) -> Repo:
    """A repository holding ``case``: branches ``base``, ``work`` (the patches as plain commits)
    and ``up`` (the upstream move), written with one ``fast-import``."""
    path.mkdir(parents=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    if case.directory_renames:
        repo.git("config", "merge.directoryRenames", case.directory_renames)
    out: list[bytes] = []
    when = EPOCH
    marks = [0]

    def commit(ref: str, parent: int | None, subject: str, files: Files, author: str) -> int:
        nonlocal when
        when += 60
        marks[0] += 1
        message = f"{subject}\n\nWhy {subject} exists.\n".encode()
        name, email = author.split(" <")
        who = f"{name} <{email} {when} +0000".encode()
        out.append(b"commit refs/heads/%s\nmark :%d\n" % (ref.encode(), marks[0]))
        out.append(b"author %s\ncommitter %s\n" % (who, who))
        out.append(b"data %d\n%s\n" % (len(message), message))
        if parent:
            out.append(b"from :%d\n" % parent)
        out.append(b"deleteall\n")
        for p, (mode, content) in sorted(files.items()):
            out.append(b"M %s inline %s\n" % (mode.encode(), _quote(p)))
            out.append(b"data %d\n%s\n" % (len(content), content))
        out.append(b"\n")
        return marks[0]

    base = commit("base", None, "upstream base", case.base, AUTHORS[0])
    parent = base
    for k, (subject, files, _ops) in enumerate(case.patches):
        parent = commit("work", parent, subject, files, AUTHORS[k % len(AUTHORS)])
    parent = base
    for subject, files, _ops in case.upstream:
        parent = commit("up", parent, subject, files, AUTHORS[0])
    if not case.upstream:
        out.append(b"reset refs/heads/up\nfrom :%d\n\n" % base)
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"],
        cwd=path,
        input=b"".join(out) + b"done\n",
        check=True,
    )
    repo.git("checkout", "-q", "-B", "main", "base")
    return repo


# -- the reference ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a replay made: the patches that conflicted, those upstream already had (their
    change left nothing), and the commits of the others, oldest first, as (patch, tree, message,
    author line) with each tree listed (mode, id, path)."""

    conflicts: tuple[str, ...]
    upstream: tuple[str, ...]
    commits: tuple[tuple[str, str, str, str], ...]


def _trailer(message: str) -> str:
    for line in message.splitlines():
        if line.startswith("Patchstack-Patch: "):
            return line.split(": ", 1)[1].strip()
    return "?"


def commits_of(repo: Repo, base: str, head: str) -> tuple[tuple[str, str, str, str], ...]:
    out = repo.git(
        "log",
        "--reverse",
        "-z",
        "--format=%T%x01%an <%ae> %ad%x01%B",
        "--date=raw",
        f"{base}..{head}",
    )
    found = []
    for record in filter(None, out.split("\0")):
        tree, author, message = record.lstrip("\n").split("\x01", 2)
        listing = repo.git("ls-tree", "-r", "--full-tree", tree)
        found.append((_trailer(message), listing, message.strip(), author))
    return tuple(found)


class GitCannotJudge(Exception):
    """``git rebase`` itself failed on the case (not a conflict): there is no reference."""


def shas_by_name(repo: Repo, base: str, head: str) -> dict[str, str]:
    """Each patch commit of ``base..head`` by its ``Patchstack-Patch`` trailer."""
    out = repo.git("log", "-z", "--format=%H%x01%B", f"{base}..{head}")
    pairs = (r.lstrip("\n").split("\x01", 1) for r in filter(None, out.split("\0")))
    return {_trailer(message): sha for sha, message in pairs}


def rebase(
    repo: Repo, stack_head: str, base: str, onto: str, tmp: Path, drop: Sequence[str] = ()
) -> Outcome:
    """``git rebase`` of the applied stack onto ``onto``, one patch at a time with merge-ort,
    each conflict skipped, patches that become empty dropped; ``drop``: patches dropped from
    the todo list (``rebase -i``), as patchstack defers a knock-on that needs a left-out one."""
    env = dict(os.environ)
    interactive: list[str] = []
    if drop:
        shas = shas_by_name(repo, base, stack_head)
        wanted = sorted(shas[n] for n in drop)
        editor = tmp.parent / f"{tmp.name}-editor.py"
        editor.write_text(
            "import sys\n"
            f"drop = {wanted!r}\n"
            "path = sys.argv[1]\n"
            "lines = open(path).read().splitlines(True)\n"
            "out = []\n"
            "for line in lines:\n"
            "    parts = line.split()\n"
            "    if len(parts) > 1 and parts[0] == 'pick'"
            " and any(d.startswith(parts[1]) for d in drop):\n"
            "        line = 'drop' + line[4:]\n"
            "    out.append(line)\n"
            "open(path, 'w').write(''.join(out))\n"
        )
        env["GIT_SEQUENCE_EDITOR"] = f"{sys.executable} {editor}"
        interactive = ["-i"]
    clone = Repo(tmp)
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(repo.path), str(tmp)], check=True
    )
    for key in ("merge.directoryRenames",):
        value = repo.git("config", "--get", key, check=False).strip()
        if value:
            clone.git("config", key, value)
    clone.git("checkout", "-q", "-B", "work", stack_head)
    names = [c[0] for c in commits_of(clone, base, stack_head)]
    skipped: list[str] = []
    proc = subprocess.run(
        [
            "git",
            "rebase",
            "-q",
            *interactive,
            "--reapply-cherry-picks",
            "--empty=drop",
            "--onto",
            onto,
            base,
            "work",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        env=env,
    )
    for _ in range(4 * len(names) + 4):
        if proc.returncode == 0:
            break
        done_file = tmp / ".git" / "rebase-merge" / "done"
        if not done_file.exists():
            raise AssertionError(f"git rebase failed: {proc.stderr}")
        if "Unable to write new index file" in proc.stderr:
            # git's own failure, not a conflict (2.39 writes a null gitlink entry for some
            # file/folder conflicts): rebase cannot say what one patch at a time gives here.
            raise GitCannotJudge(proc.stderr.strip()[:300])
        if "untracked working tree files would be overwritten" in proc.stderr:
            # A skipped pick's file/folder conflict can leave its files untracked, and git
            # then refuses the next pick (and schedules it again): they are the skipped
            # patch's, not the user's; without them the next pick is what it is in git's
            # own run of a clean skip.
            subprocess.run(["git", "clean", "-fdq"], cwd=tmp, check=True)
            proc = subprocess.run(
                ["git", "rebase", "--continue"], cwd=tmp, capture_output=True, text=True
            )
            continue
        last = [ln for ln in done_file.read_text().splitlines() if ln.strip()][-1]
        stopped = clone.git("log", "-1", "--format=%B", last.split()[1])
        skipped.append(_trailer(stopped))
        proc = subprocess.run(["git", "rebase", "--skip"], cwd=tmp, capture_output=True, text=True)
    else:
        raise GitCannotJudge(f"git rebase did not end: {proc.stderr.strip()[:300]}")
    commits = commits_of(clone, onto, "HEAD")
    kept = {c[0] for c in commits}
    dropped = tuple(n for n in names if n not in kept and n not in skipped and n not in drop)
    return Outcome(tuple(skipped), dropped, commits)


# -- patchstack's side -----------------------------------------------------------------------


def fork(repo: Repo) -> str:
    """The patches imported as a series and pushed on ``base``; the applied stack's head."""
    repo.ps("import", "commits", "base..work", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    return repo.head()


def patchstack_check(
    repo: Repo,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(conflicts, upstream, held): the patches check finds conflicting, those it finds
    upstream, and those it leaves out for needing a left-out one (`engine.needs`)."""
    result = repo.ps("check", "--onto", "up", "--json", code=None)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    held = tuple(c["patch"] for c in data["conflicts"] if c.get("held"))
    conflicts = tuple(c["patch"] for c in data["conflicts"] if c["patch"] not in held)
    # What git's pick leaves empty: upstream's doing, a no-op for want of a left-out patch, or
    # unknown which (the label oracle, tests/labels.py, judges which word is right).
    empty = ("upstream", "no-op", "unknown")
    upstream = tuple(p["name"] for p in data["patches"] if p["verdict"] in empty)
    return conflicts, upstream, held


def _ok(clone: Repo, *args: str) -> bool:
    proc = subprocess.run(["git", *args], cwd=clone.path, capture_output=True, text=True)
    return proc.returncode == 0


def held_oracle(
    repo: Repo, stack_head: str, base: str, missing: Sequence[str], held: Sequence[str], tmp: Path
) -> list[str]:
    """Each held patch k, judged by git on the old stack: the left-out patches before it
    reverted, k cherry-picked, the left-out ones picked again. When that gives k's own tree,
    k commutes with them and holding it was wrong. Where git meets a conflict on the way it
    cannot judge (the rule leaves such a patch to the placement)."""
    clone = Repo(tmp)
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(repo.path), str(tmp)], check=True
    )
    shas = shas_by_name(clone, base, stack_head)
    order = [c[0] for c in commits_of(clone, base, stack_head)]
    diffs = []
    for k in held:
        before = order[: order.index(k)]
        left = [n for n in before if n in missing or n in held]
        clone.git("checkout", "-q", "-f", "--detach", shas[k] + "^")
        steps = [("revert", "--no-edit", shas[m]) for m in reversed(left)]
        steps.append(("cherry-pick", "--keep-redundant-commits", "--allow-empty", shas[k]))
        steps += [
            ("cherry-pick", "--keep-redundant-commits", "--allow-empty", shas[m]) for m in left
        ]
        judged = True
        for args in steps:
            if not _ok(clone, *args):
                judged = False
                break
        if judged and clone.tree() == clone.tree(shas[k]):
            diffs.append(f"check: {k} held, but it commutes with {left} on the old base")
        subprocess.run(["git", "reset", "-q", "--merge"], cwd=tmp, capture_output=True)
        for what in ("revert", "cherry-pick"):
            subprocess.run(["git", what, "--abort"], cwd=tmp, capture_output=True)
    return diffs


def _compare(what: str, ours: Outcome, ref: Outcome) -> list[str]:
    """``ours`` stops at its first conflict: up to there it must be git's, and stop where git
    first skipped; with no conflict, every commit must be git's."""
    diffs: list[str] = []
    want = ref.commits
    if ref.conflicts:
        want = ref.commits[: len(ours.commits)]
        if ours.conflicts[:1] != ref.conflicts[:1]:
            diffs.append(f"{what}: stopped at {ours.conflicts[:1]}, git first at {ref.conflicts}")
    elif ours.conflicts:
        diffs.append(f"{what}: conflict in {ours.conflicts}, git has none")
    if len(ours.commits) != len(want):
        diffs.append(
            f"{what}: commits {[c[0] for c in ours.commits]}, git {[c[0] for c in ref.commits]}"
        )
    for mine, theirs in zip(ours.commits, want, strict=False):
        if mine[0] != theirs[0]:
            diffs.append(f"{what}: commit for {mine[0]} where git has {theirs[0]}")
            break
        for label, i in (("tree", 1), ("message", 2), ("author", 3)):
            if mine[i] != theirs[i]:
                diffs.append(
                    f"{what}: {mine[0]}: {label} differs:\n{mine[i]}\n--- git:\n{theirs[i]}"
                )
    return diffs


PACKAGE = Path(__file__).resolve().parent.parent / "patchstack"


def switches() -> list[str]:
    """Every ``PATCHSTACK_NO_*`` switch the package reads (a new one is turned off too)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found.update(re.findall(r"PATCHSTACK_NO_[A-Z_]+[A-Z]", path.read_text()))
    return sorted(found)


# The plain path: every shortcut off (the fast path, the scratch store, the caches, the early
# walks and listings, the prefetched lines, the batched merges, ...).
SWITCHES = dict.fromkeys(switches(), "1")


def run_patchstack(repo: Repo, stack_head: str, base: str, shortcuts: bool) -> dict[str, object]:
    """check, refresh and push --onto on ``repo`` (its stack applied at ``stack_head``); what
    each made, as `Outcome`s, and the commit ids refresh made."""
    saved = {k: os.environ.get(k) for k in SWITCHES}
    if not shortcuts:
        os.environ.update(SWITCHES)
    try:
        conflicts, upstream, held = patchstack_check(repo)
        checked = Outcome(conflicts, upstream, ())
        result = repo.ps("refresh", "--onto", "up", code=None)
        assert result.exit_code in (0, 1), result.output
        stopped: tuple[str, ...] = ()
        if result.exit_code == 1:
            stopped = (result.stderr.split("conflict in patch ", 1)[1].split()[0],)
        up = repo.git("rev-parse", "up").strip()
        refreshed = Outcome(stopped, (), commits_of(repo, up, "HEAD"))
        ids = repo.git("rev-list", "--reverse", f"{up}..HEAD").split()
        repo.ps("undo")
        assert repo.head() == stack_head
        repo.ps("pop", "--all")
        result = repo.ps("push", "--all", "--onto", "up", code=None)
        pushed_conflict: tuple[str, ...] = ()
        if result.exit_code == 1:
            pushed_conflict = (result.stderr.split("patch '", 1)[1].split("'")[0],)
        else:
            assert result.exit_code == 0, result.output
        pushed = Outcome(pushed_conflict, (), commits_of(repo, up, "HEAD"))
        push_ids = repo.git("rev-list", "--reverse", f"{up}..HEAD").split()
        if result.exit_code == 0:
            repo.ps("undo")
        repo.ps("undo")  # the pop
        assert repo.head() == stack_head
        brought = bring_back(repo, stack_head)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {
        "check": checked,
        "refresh": refreshed,
        "push": pushed,
        "ids": ids,
        "push_ids": push_ids,
        "held": held,
        "brought": brought,
    }


def bring_back(repo: Repo, stack_head: str) -> tuple[object, ...]:
    """``refresh --onto up --defer-conflicts``, then ``push NAME`` of the first deferred patch:
    (its exit status, the series file, HEAD's tree, the work tree's state), to compare the
    shortcuts with the plain path. Its conflict stops it (exit 1), never an ``# upstream:``."""
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    series = repo.read("patches/series")
    roots = [
        ln.split()[2]
        for ln in series.splitlines()
        if ln.startswith("# deferred:") and " after " not in ln
    ]
    if not roots:
        repo.ps("undo")
        assert repo.head() == stack_head
        return ()
    result = repo.ps("push", roots[0], code=None)
    assert result.exit_code in (0, 1), result.output
    after = repo.read("patches/series")
    got = (result.exit_code, after, repo.tree(), repo.status_all())
    steps = 1  # the refresh
    if result.exit_code == 1 and "conflict in patch" in result.stderr:
        assert f"# upstream: {roots[0]} " not in after
        repo.ps("refresh", "--abort")
        steps += 2  # the push that stopped and the abort
    elif result.exit_code == 0:
        steps += 1
    repo.ps("undo", str(steps))
    assert repo.head() == stack_head
    return got


def compare(case: Case, tmp: Path, each: Callable[[str], None] | None = None) -> list[str]:
    """Every difference between patchstack and git on ``case`` (empty: they agree)."""
    repo = write_case(case, tmp / "fork")
    stack_head = fork(repo)
    base = repo.git("rev-parse", "base").strip()
    up = repo.git("rev-parse", "up").strip()
    try:
        ref: Outcome | None = rebase(repo, stack_head, base, up, tmp / "rebase")
    except GitCannotJudge:
        ref = None  # then only the shortcuts are compared with the plain path
    diffs: list[str] = []
    runs = {}
    for shortcuts in (True, False):
        label = "shortcuts on" if shortcuts else "shortcuts off"
        got = run_patchstack(repo, stack_head, base, shortcuts)
        runs[shortcuts] = got
        if ref is None:
            continue
        check = got["check"]
        assert isinstance(check, Outcome)
        held = got["held"]
        assert isinstance(held, tuple)
        against = ref
        if held:  # git with the held patches dropped, as patchstack defers them
            where = tmp / f"rebase-held-{int(shortcuts)}"
            try:
                against = rebase(repo, stack_head, base, up, where, held)
            except GitCannotJudge:
                against = None
            diffs += held_oracle(
                repo, stack_head, base, check.conflicts, held, tmp / f"held-{int(shortcuts)}"
            )
        if against is not None and sorted(check.conflicts) != sorted(against.conflicts):
            diffs.append(f"check ({label}): conflicts {check.conflicts}, git {against.conflicts}")
        if against is not None and sorted(check.upstream) != sorted(against.upstream):
            diffs.append(f"check ({label}): upstream {check.upstream}, git {against.upstream}")
        for what in ("refresh", "push"):
            outcome = got[what]
            assert isinstance(outcome, Outcome)
            diffs += _compare(f"{what} ({label})", outcome, ref)
    if runs[True]["ids"] != runs[False]["ids"]:
        diffs.append("refresh: the shortcuts made other commit ids than the plain path")
    if runs[True]["push_ids"] != runs[False]["push_ids"]:
        diffs.append("push --onto: the shortcuts made other commit ids than the plain path")
    if runs[True]["brought"] != runs[False]["brought"]:
        diffs.append("push NAME of a deferred patch: the shortcuts differ from the plain path")
    return diffs


def seeds_from_env(default: Sequence[int]) -> list[int]:
    text = os.environ.get("PATCHSTACK_DIFF_SEEDS")
    return [int(s) for s in text.split(",")] if text else list(default)


def clean(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
