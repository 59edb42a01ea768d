"""The shortcuts on the shapes of change that are not line edits: a differential generator of
small repositories whose series and upstream each rename files, rename folders (merge-ort's
directory rename detection), change modes (``chmod +x`` with an edit, and mode-only patches),
make, retarget and replace symlinks, change, add and rename binary files, delete files, and
turn files into folders and folders into files.

`compare` runs, once with every shortcut off (each ``PATCHSTACK_NO_*`` switch the package
reads, found by grepping it: `switches`) and once with none:

- ``check --onto up --json`` (the whole document: verdicts, conflicts, labels);
- ``refresh --onto up --defer-conflicts --json``: its document, the series folder after it,
  and the applied commits (tree listing with modes, message, author), then undone;
- ``refresh --onto up`` stop by stop, each stop ``--skip``-ped: the stops, each document, the
  series folder and the commits at the end, then undone;

and requires the two runs to be the same, byte for byte. Both are also compared with
``git rebase`` of the same commits, one patch at a time with merge-ort, each conflict skipped
(`differential.rebase`): the patches a refresh leaves out (deferred, skipped, held for a
left-out one) are git's conflicts and the held ones, and every commit made is git's.
"""

from __future__ import annotations

import difflib
import json
import os
import pprint
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from click.testing import Result

from . import differential
from .conftest import Repo
from .differential import Case, Files, GitCannotJudge, Outcome


@contextmanager
def shortcuts_off(off: bool) -> Iterator[None]:
    names = differential.switches()
    saved = {k: os.environ.get(k) for k in names}
    if off:
        os.environ.update(dict.fromkeys(names, "1"))
    else:
        for k in names:
            os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# -- the generator ---------------------------------------------------------------------------

LINK = "120000"
EXEC = "100755"
PLAIN = "100644"


def _binary(tag: str, n: int) -> bytes:
    """Bytes git takes for binary (a NUL in the first 8,000), unique to ``tag``: a few KiB of
    them, so that an edited or renamed one is still alike enough for git's rename detection."""
    rng = random.Random(f"{tag}:{n}")
    body = bytes(rng.randrange(256) for _ in range(rng.choice([200, 2000, 4000])))
    return b"\x00\x01BIN " + tag.encode() + b"\x00" + body


class _Gen(differential._Gen):  # (its seeded rng, fresh names and numbered texts)
    def of_kind(self, files: Files, kind: str) -> list[str]:
        def is_kind(mode: str, content: bytes) -> bool:
            if kind == "link":
                return mode == LINK
            if kind == "binary":
                return mode != LINK and b"\x00" in content
            return mode != LINK and b"\x00" not in content  # text

        return sorted(p for p, (m, c) in files.items() if is_kind(m, c))

    def folders(self, files: Files) -> list[str]:
        found = {p.rsplit("/", 1)[0] for p in files if "/" in p}
        more = {d.rsplit("/", 1)[0] for d in found if "/" in d}
        return sorted(found | more)

    def base(self) -> Files:
        rng = self.rng
        files: Files = {}
        folders = ["src", "lib", "src/core", "src/core/deep", "assets"]
        for _ in range(rng.randint(5, 8)):
            where = rng.choice(["", *folders, *folders])
            name = self.fresh("f") + rng.choice([".py", ".py", ".txt", ".sh"])
            path = f"{where}/{name}" if where else name
            mode = EXEC if name.endswith(".sh") else PLAIN
            files[path] = (mode, self.text(name, rng.randint(10, 20)))
        for _ in range(rng.randint(1, 2)):
            path = f"{rng.choice(folders)}/{self.fresh('blob')}.bin"
            files[path] = (PLAIN, _binary(path, rng.randrange(200)))
        text = self.of_kind(files, "text")
        for _ in range(rng.randint(1, 2)):
            where = rng.choice(["", *folders])
            path = (f"{where}/" if where else "") + self.fresh("link")
            files[path] = (LINK, rng.choice(text).encode())
        return files

    def edit(self, files: Files, path: str, tag: str, near: int | None = None) -> int:
        mode, content = files[path]
        if b"\x00" in content:  # a binary file: some bytes changed in the middle
            at = self.rng.randrange(len(content) // 2, len(content))
            files[path] = (mode, content[:at] + f"[{tag}]".encode() + content[at + 8 :])
            return 0
        lines = content.decode().splitlines(keepends=True)
        if not lines:  # an empty file gets its first line
            files[path] = (mode, f"{tag} changed 0\n".encode())
            return 0
        at = near if near is not None else self.rng.randrange(len(lines))
        at = max(0, min(at, len(lines) - 1))
        lines[at] = f"{tag} changed {at}\n"
        files[path] = (mode, "".join(lines).encode())
        return at

    def change(self, out: Files, who: str, hot: Sequence[str] = ()) -> str | None:
        """One change of ``out`` by ``who`` (a patch or upstream); what it did, or None.
        ``hot``: paths the other side changes, preferred half of the time."""
        rng = self.rng
        kind = rng.choices(
            [
                "edit",
                "rename",
                "rename+edit",
                "move-dir",
                "chmod",
                "chmod+edit",
                "link-new",
                "link-retarget",
                "file->link",
                "link->file",
                "binary-edit",
                "binary-add",
                "binary-rename",
                "delete",
                "file->folder",
                "folder->file",
                "add-in-folder",
                "empty",
                "copy",
                "rename+rewrite",
            ],
            weights=[4, 3, 2, 3, 3, 2, 1, 2, 1, 1, 3, 1, 2, 2, 1, 1, 2, 1, 1, 1],
        )[0]
        text = self.of_kind(out, "text")
        links = self.of_kind(out, "link")
        binaries = self.of_kind(out, "binary")

        def pick(among: list[str]) -> str | None:
            if not among:
                return None
            warm = [p for p in among if p in hot]
            return rng.choice(warm if warm and rng.random() < 0.5 else among)

        if kind in ("edit", "chmod", "chmod+edit", "rename", "rename+edit", "delete"):
            path = pick(text + binaries if kind != "edit" else text)
            if path is None or (kind == "delete" and len(out) < 5):
                return None
            if kind == "edit":
                return f"edit {path}:{self.edit(out, path, who)}"
            if kind == "delete":
                del out[path]
                return f"delete {path}"
            if kind.startswith("chmod"):
                mode, content = out[path]
                out[path] = (EXEC if mode == PLAIN else PLAIN, content)
                if kind == "chmod+edit":
                    self.edit(out, path, who)
                    return f"chmod and edit {path}"
                return f"chmod {path}"
            folder = rng.choice(
                ["", *self.folders(out), path.rsplit("/", 1)[0] if "/" in path else ""]
            )
            new = (
                (f"{folder}/" if folder else "")
                + self.fresh("moved")
                + (".bin" if path in binaries else ".py")
            )
            out[new] = out.pop(path)
            if kind == "rename+edit":
                self.edit(out, new, who)
            return f"{kind} {path} -> {new}"
        if kind == "move-dir":
            folders = self.folders(out)
            warm = [d for d in folders if any(p.startswith(d + "/") for p in hot)]
            if not folders:
                return None
            old = rng.choice(warm if warm and rng.random() < 0.6 else folders)
            parent = old.rsplit("/", 1)[0] + "/" if "/" in old else ""
            new = parent + self.fresh("dir")
            for p in [p for p in out if p.startswith(old + "/")]:
                out[new + p[len(old) :]] = out.pop(p)
            return f"rename folder {old}/ -> {new}/"
        if kind == "link-new":
            if not text:
                return None
            where = rng.choice(["", *self.folders(out)])
            path = (f"{where}/" if where else "") + self.fresh("link")
            out[path] = (LINK, rng.choice(text).encode())
            return f"add link {path}"
        if kind == "link-retarget":
            path = pick(links)
            if path is None:
                return None
            out[path] = (LINK, self.fresh(f"{who}-target").encode())
            return f"retarget link {path}"
        if kind == "file->link":
            path = pick(text)
            if path is None or not text:
                return None
            out[path] = (LINK, rng.choice(text).encode())
            return f"file {path} -> link"
        if kind == "link->file":
            path = pick(links)
            if path is None:
                return None
            out[path] = (PLAIN, self.text(f"{path} {who}", 4))
            return f"link {path} -> file"
        if kind == "binary-edit":
            path = pick(binaries)
            if path is None:
                return None
            self.edit(out, path, who)
            return f"binary edit {path}"
        if kind == "binary-add":
            where = rng.choice(["", *self.folders(out)])
            path = (f"{where}/" if where else "") + self.fresh("blob") + ".bin"
            out[path] = (PLAIN, _binary(path + who, rng.randrange(200)))
            return f"add binary {path}"
        if kind == "binary-rename":
            path = pick(binaries)
            if path is None:
                return None
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            new = (f"{folder}/" if folder else "") + self.fresh("blob") + ".bin"
            out[new] = out.pop(path)
            return f"rename binary {path} -> {new}"
        if kind == "file->folder":
            path = pick(text + links + binaries)
            if path is None or any(p.startswith(path + "/") for p in out):
                return None
            del out[path]
            out[f"{path}/inner.py"] = (PLAIN, self.text(f"{path} inner {who}", 5))
            return f"file {path} -> folder"
        if kind == "folder->file":
            folders = [d for d in self.folders(out) if "/" in d or rng.random() < 0.5]
            if not folders:
                return None
            old = rng.choice(folders)
            for p in [p for p in out if p.startswith(old + "/")]:
                del out[p]
            out[old] = (PLAIN, self.text(f"{old} as a file {who}", 5))
            return f"folder {old}/ -> file"
        if kind == "empty":  # an empty file added, or a file emptied
            path = pick(text)
            if path is None or rng.random() < 0.5:
                where = rng.choice(["", *self.folders(out)])
                path = (f"{where}/" if where else "") + self.fresh("empty") + ".py"
            out[path] = (out[path][0] if path in out else PLAIN, b"")
            return f"empty {path}"
        if kind == "copy":  # a second file of the same bytes (git's exact renames choose)
            path = pick(text + binaries)
            if path is None:
                return None
            where = rng.choice(["", *self.folders(out)])
            new = (
                (f"{where}/" if where else "") + self.fresh("copy") + "-" + path.rsplit("/", 1)[-1]
            )
            out[new] = out[path]
            return f"copy {path} -> {new}"
        if kind == "rename+rewrite":  # about half the lines new: near merge-ort's 50%
            path = pick(text)
            if path is None:
                return None
            mode, content = out.pop(path)
            lines = content.decode().splitlines(keepends=True)
            share = rng.choice([0.4, 0.5, 0.6])
            for i in rng.sample(range(len(lines)), int(len(lines) * share)):
                lines[i] = f"{who} rewrote {i}\n"
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            new = (f"{folder}/" if folder else "") + self.fresh("rewritten") + ".py"
            out[new] = (mode, "".join(lines).encode())
            return f"rename {path} -> {new}, {int(share * 100)}% rewritten"
        # add-in-folder: a new file in a folder (the other side may rename it)
        folders = self.folders(out)
        if not folders:
            return None
        path = f"{rng.choice(folders)}/{self.fresh('added')}.py"
        out[path] = (PLAIN, self.text(path, 6))
        return f"add {path}"


def make_case(seed: int, large: bool = False) -> Case:
    """The case of ``seed``: 3-5 patches and 1-3 upstream commits, each one or two changes;
    ``large``: 6-10 patches and 3-6 upstream commits."""
    gen = _Gen(seed)
    rng = gen.rng
    base = gen.base()
    patches: list[tuple[str, Files, list[str]]] = []
    made: list[tuple[Files, Files]] = []
    cur = base
    for k in range(1, (rng.randint(6, 10) if large else rng.randint(3, 5)) + 1):
        after = dict(cur)
        ops = [op for _ in range(rng.choice([1, 1, 2])) if (op := gen.change(after, f"p{k}"))]
        differential._drop_clashes(after)
        if after == cur:
            path = gen.of_kind(cur, "text")[0]
            ops = [f"edit {path}:{gen.edit(after, path, f'p{k}')}"]
        patches.append((f"p{k}-{seed}", after, ops))
        made.append((cur, after))
        cur = after
    touched = sorted(
        {
            p
            for before, after in made
            for p in set(before) | set(after)
            if before.get(p) != after.get(p)
        }
    )
    upstream: list[tuple[str, Files, list[str]]] = []
    cur = base
    for u in range(1, (rng.randint(3, 6) if large else rng.randint(1, 3)) + 1):
        after = dict(cur)
        if rng.random() < 0.15 and made:  # upstream takes a patch (verbatim or not)
            before, theirs = rng.choice(made)
            changed = {p for p in set(before) | set(theirs) if before.get(p) != theirs.get(p)}
            if all(after.get(p) == before.get(p) for p in changed):
                for p in changed:
                    if p in theirs:
                        after[p] = theirs[p]
                    else:
                        after.pop(p, None)
                ops = ["take a patch: " + ", ".join(sorted(changed))]
            else:
                ops = []
        else:
            ops = [
                op for _ in range(rng.choice([1, 2])) if (op := gen.change(after, "up", touched))
            ]
        differential._drop_clashes(after)
        if after == cur:
            continue
        upstream.append((f"up{u}", after, ops))
        cur = after
    renames = rng.choice([None, "true"])
    return Case(seed, base, patches, upstream, renames)


# -- patchstack's runs -----------------------------------------------------------------------


def _doc(result: Result) -> object:
    return json.loads(result.stdout) if result.stdout.strip() else None


def _series(repo: Repo) -> dict[str, bytes]:
    return {k: v for k, v in repo.snapshot().items() if k.startswith("patches/")}


def _deferred(series: bytes) -> tuple[str, ...]:
    lines = series.decode().splitlines()
    return tuple(sorted(ln.split()[2] for ln in lines if ln.startswith("# deferred:")))


def _back_to(repo: Repo, state: tuple[str, str, dict[str, bytes]]) -> None:
    for _ in range(40):
        if repo.state() == state:
            return
        repo.ps("undo")
    raise AssertionError("undo did not go back to the state before")


Commits = tuple[tuple[str, str, str, str], ...]  # `differential.commits_of`


@dataclass(frozen=True)
class Ended:
    """Where a refresh ended: its documents (each command's ``--json``, with its exit status),
    the series folder, the applied commits (`differential.commits_of`) and their ids, and the
    work tree's state."""

    documents: tuple[tuple[int, object], ...]
    series: dict[str, bytes]
    commits: Commits
    ids: tuple[str, ...]
    status: str

    @property
    def left_out(self) -> tuple[str, ...]:
        return _deferred(self.series["patches/series"])


def _ended(repo: Repo, up: str, documents: list[tuple[int, object]]) -> Ended:
    ids = tuple(repo.git("rev-list", "--reverse", f"{up}..HEAD").split())
    commits = differential.commits_of(repo, up, "HEAD")
    return Ended(tuple(documents), _series(repo), commits, ids, repo.status_all())


@dataclass(frozen=True)
class Run:
    """What patchstack made of a case under one setting of the switches."""

    check: tuple[int, object]  # exit status, document
    defer: Ended  # refresh --onto up --defer-conflicts
    skip: Ended  # refresh --onto up, each stop --skip-ped

    def held(self) -> tuple[str, ...]:
        doc = self.check[1]
        assert isinstance(doc, dict)
        return tuple(c["patch"] for c in doc["conflicts"] if c.get("held"))

    def conflicts(self) -> tuple[str, ...]:
        doc = self.check[1]
        assert isinstance(doc, dict)
        return tuple(sorted(c["patch"] for c in doc["conflicts"] if not c.get("held")))

    def no_op(self) -> tuple[str, ...]:
        doc = self.check[1]
        assert isinstance(doc, dict)
        return tuple(sorted(p["name"] for p in doc["patches"] if p["verdict"] == "no-op"))

    def empty(self) -> tuple[str, ...]:
        """The patches check finds changing nothing (git's pick of them is empty)."""
        doc = self.check[1]
        assert isinstance(doc, dict)
        words = ("upstream", "no-op", "unknown")
        return tuple(sorted(p["name"] for p in doc["patches"] if p["verdict"] in words))


def run(repo: Repo, up: str) -> Run:
    """What patchstack makes of the repository, under the environment's switches; each
    refresh undone."""
    before = repo.state()
    check = repo.ps("check", "--onto", "up", "--json", code=None)
    assert check.exit_code in (0, 1), check.output

    deferring = repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json", code=None)
    assert deferring.exit_code == 0, deferring.output
    defer = _ended(repo, up, [(0, _doc(deferring))])
    _back_to(repo, before)

    stops: list[tuple[int, object]] = []
    result = repo.ps("refresh", "--onto", "up", "--json", code=None)
    for _ in range(20):
        assert result.exit_code in (0, 1), result.output
        stops.append((result.exit_code, _doc(result)))
        if result.exit_code == 0:
            break
        result = repo.ps("refresh", "--skip", "--json", code=None)
    else:
        raise AssertionError("refresh --skip did not end")
    skip = _ended(repo, up, stops)
    _back_to(repo, before)
    return Run((check.exit_code, _doc(check)), defer, skip)


def _shown(value: object) -> list[str]:
    return pprint.pformat(value, width=100).splitlines()


def _differs(what: str, ours: object, plain: object) -> list[str]:
    if ours == plain:
        return []
    lines = difflib.unified_diff(_shown(plain), _shown(ours), "plain", "shortcuts", lineterm="")
    return [f"{what}: the shortcuts differ from the plain path:\n" + "\n".join(lines)]


def _against_git(
    what: str, ended: Ended, ref: Outcome, held: Sequence[str], no_op: Sequence[str]
) -> list[str]:
    """A refresh that left out (deferred) git's conflicts and the held patches, and the
    patches check calls no-op that git dropped as empty (refresh defers a no-op after the
    left-out patch whose absence makes it one: docs/architecture.md, "Verdicts"), and made
    git's commits for the others."""
    diffs = []
    want = sorted({*ref.conflicts, *held, *(n for n in no_op if n in ref.upstream)})
    if sorted(ended.left_out) != want:
        diffs.append(
            f"{what}: left out {sorted(ended.left_out)}, git skipped {list(ref.conflicts)}"
            f" (held {list(held)}, no-op {list(no_op)})"
        )
    mine, theirs = [c[0] for c in ended.commits], [c[0] for c in ref.commits]
    if mine != theirs:
        return [*diffs, f"{what}: commits {mine}, git {theirs}"]
    for made, git in zip(ended.commits, ref.commits, strict=True):
        for label, i in (("tree", 1), ("message", 2), ("author", 3)):
            if made[i] != git[i]:
                diffs.append(f"{what}: {made[0]}: {label} differs:\n{made[i]}\n--- git:\n{git[i]}")
    return diffs


def compare(case: Case, tmp: Path) -> list[str]:
    """Every difference between the shortcuts and the plain path, and between either and git
    (empty: they agree)."""
    repo = differential.write_case(case, tmp / "fork")
    stack_head = differential.fork(repo)
    base = repo.git("rev-parse", "base").strip()
    up = repo.git("rev-parse", "up").strip()
    runs: dict[bool, Run] = {}
    for off in (False, True):
        with shortcuts_off(off):
            runs[off] = run(repo, up)
    fast, plain = runs[False], runs[True]
    diffs = _differs("check --json", fast.check, plain.check)
    diffs += _differs("refresh --defer-conflicts", fast.defer, plain.defer)
    diffs += _differs("refresh stop by stop, --skip at each", fast.skip, plain.skip)
    for off, got in runs.items():
        label = "plain" if off else "shortcuts"
        held = got.held()
        try:
            ref = differential.rebase(repo, stack_head, base, up, tmp / f"rebase-{int(off)}", held)
        except GitCannotJudge:
            continue
        if got.conflicts() != tuple(sorted(ref.conflicts)):
            diffs.append(f"check ({label}): conflicts {got.conflicts()}, git {ref.conflicts}")
        if got.empty() != tuple(sorted(ref.upstream)):
            diffs.append(f"check ({label}): empty {got.empty()}, git {ref.upstream}")
        no_op = got.no_op()
        diffs += _against_git(f"refresh --defer-conflicts ({label})", got.defer, ref, held, no_op)
        diffs += _against_git(f"refresh, --skip at each stop ({label})", got.skip, ref, held, no_op)
    return diffs
