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

import json
import os
import random
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import differential
from .conftest import Repo
from .differential import Case, Files, GitCannotJudge, Outcome

PACKAGE = Path(__file__).resolve().parent.parent / "patchstack"


def switches() -> list[str]:
    """Every ``PATCHSTACK_NO_*`` switch the package reads (a new one is turned off too)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found.update(re.findall(r"PATCHSTACK_NO_[A-Z_]+[A-Z]", path.read_text()))
    return sorted(found)


@contextmanager
def shortcuts_off(off: bool) -> Iterator[None]:
    names = switches()
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
    """Bytes git takes for binary (a NUL in the first 8,000), unique to ``tag``."""
    return b"\x00\x01BIN " + tag.encode() + b"\x00" + bytes(range(n % 200, n % 200 + 40))


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def text(self, tag: str, n: int) -> bytes:
        return "".join(f"{tag} line {i}\n" for i in range(n)).encode()

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
        folders = ["src", "lib", "src/core", "assets"]
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
        if b"\x00" in content:  # a binary file: new bytes
            files[path] = (mode, content + f"[{tag}]".encode())
            return 0
        lines = content.decode().splitlines(keepends=True)
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
            ],
            weights=[4, 3, 2, 3, 3, 2, 1, 2, 1, 1, 3, 1, 2, 2, 1, 1, 2],
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
            folder = rng.choice(["", *self.folders(out), path.rsplit("/", 1)[0] if "/" in path else ""])
            new = (f"{folder}/" if folder else "") + self.fresh("moved") + (
                ".bin" if path in binaries else ".py"
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
        # add-in-folder: a new file in a folder (the other side may rename it)
        folders = self.folders(out)
        if not folders:
            return None
        path = f"{rng.choice(folders)}/{self.fresh('added')}.py"
        out[path] = (PLAIN, self.text(path, 6))
        return f"add {path}"


def make_case(seed: int) -> Case:
    gen = _Gen(seed)
    rng = gen.rng
    base = gen.base()
    patches: list[tuple[str, Files, list[str]]] = []
    made: list[tuple[Files, Files]] = []
    cur = base
    for k in range(1, rng.randint(3, 5) + 1):
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
        {p for before, after in made for p in set(before) | set(after) if before.get(p) != after.get(p)}
    )
    upstream: list[tuple[str, Files, list[str]]] = []
    cur = base
    for u in range(1, rng.randint(1, 3) + 1):
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
            ops = [op for _ in range(rng.choice([1, 2])) if (op := gen.change(after, "up", touched))]
        differential._drop_clashes(after)
        if after == cur:
            continue
        upstream.append((f"up{u}", after, ops))
        cur = after
    renames = rng.choice([None, "true"])
    return Case(seed, base, patches, upstream, renames)


# -- patchstack's runs -----------------------------------------------------------------------


def _doc(result) -> object:  # noqa: ANN001 (click's Result)
    return json.loads(result.stdout) if result.stdout.strip() else None


def _series(repo: Repo) -> dict[str, bytes]:
    return {k: v for k, v in repo.snapshot().items() if k.startswith("patches/")}


def _deferred(series: bytes) -> tuple[str, ...]:
    return tuple(
        sorted(
            ln.split()[2]
            for ln in series.decode().splitlines()
            if ln.startswith("# deferred:")
        )
    )


def _back_to(repo: Repo, state: tuple[str, str, dict[str, bytes]]) -> None:
    for _ in range(40):
        if repo.state() == state:
            return
        repo.ps("undo")
    raise AssertionError("undo did not go back to the state before")


def run(repo: Repo, up: str) -> dict[str, object]:
    """What patchstack makes of the repository, under the environment's switches."""
    before = repo.state()
    check = repo.ps("check", "--onto", "up", "--json", code=None)
    assert check.exit_code in (0, 1), check.output
    got: dict[str, object] = {"check": (check.exit_code, _doc(check))}

    deferring = repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json", code=None)
    assert deferring.exit_code == 0, deferring.output
    series = _series(repo)
    got["defer"] = (
        _doc(deferring),
        series,
        differential.commits_of(repo, up, "HEAD"),
        repo.git("rev-list", "--reverse", f"{up}..HEAD").split(),
    )
    got["defer-left-out"] = _deferred(series["patches/series"])
    _back_to(repo, before)

    stops: list[object] = []
    result = repo.ps("refresh", "--onto", "up", "--json", code=None)
    for _ in range(20):
        assert result.exit_code in (0, 1), result.output
        stops.append((result.exit_code, _doc(result)))
        if result.exit_code == 0:
            break
        result = repo.ps("refresh", "--skip", "--json", code=None)
    else:
        raise AssertionError("refresh --skip did not end")
    series = _series(repo)
    got["skip"] = (
        stops,
        series,
        differential.commits_of(repo, up, "HEAD"),
        repo.git("rev-list", "--reverse", f"{up}..HEAD").split(),
        repo.status_all(),
    )
    got["skip-left-out"] = _deferred(series["patches/series"])
    _back_to(repo, before)
    return got


def _held(check_doc: object) -> tuple[str, ...]:
    assert isinstance(check_doc, dict)
    return tuple(c["patch"] for c in check_doc["conflicts"] if c.get("held"))


def _against_git(
    what: str, left_out: Sequence[str], commits: tuple[object, ...], ref: Outcome, held: Sequence[str]
) -> list[str]:
    diffs = []
    want = sorted({*ref.conflicts, *held})
    if sorted(left_out) != want:
        diffs.append(f"{what}: left out {sorted(left_out)}, git skipped {list(ref.conflicts)} (held {list(held)})")
    if [c[0] for c in commits] != [c[0] for c in ref.commits]:  # type: ignore[index]
        diffs.append(
            f"{what}: commits {[c[0] for c in commits]}, git {[c[0] for c in ref.commits]}"  # type: ignore[index]
        )
    else:
        for mine, theirs in zip(commits, ref.commits, strict=True):
            for label, i in (("tree", 1), ("message", 2), ("author", 3)):
                if mine[i] != theirs[i]:  # type: ignore[index]
                    diffs.append(
                        f"{what}: {mine[0]}: {label} differs:\n{mine[i]}\n--- git:\n{theirs[i]}"  # type: ignore[index]
                    )
    return diffs


def compare(case: Case, tmp: Path) -> list[str]:
    """Every difference between the shortcuts and the plain path, and between either and git
    (empty: they agree)."""
    repo = differential.write_case(case, tmp / "fork")
    stack_head = differential.fork(repo)
    base = repo.git("rev-parse", "base").strip()
    up = repo.git("rev-parse", "up").strip()
    runs = {}
    for off in (False, True):
        with shortcuts_off(off):
            runs[off] = run(repo, up)
    diffs = []
    for key in runs[False]:
        if runs[False][key] != runs[True][key]:
            diffs.append(f"{key}: the shortcuts differ from the plain path:\n"
                         f"{runs[False][key]!r}\n--- plain:\n{runs[True][key]!r}")
    for off, got in runs.items():
        label = "plain" if off else "shortcuts"
        check_code, check_doc = got["check"]  # type: ignore[misc]
        held = _held(check_doc)
        try:
            ref = differential.rebase(repo, stack_head, base, up, tmp / f"rebase-{int(off)}", held)
        except GitCannotJudge:
            continue
        defer = got["defer"]
        skip = got["skip"]
        diffs += _against_git(f"refresh --defer-conflicts ({label})", got["defer-left-out"], defer[2], ref, held)  # type: ignore[arg-type,index]
        diffs += _against_git(f"refresh, --skip at each stop ({label})", got["skip-left-out"], skip[2], ref, held)  # type: ignore[arg-type,index]
    return diffs
