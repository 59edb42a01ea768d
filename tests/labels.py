"""The label oracle: every label patchstack prints, checked against its definition with git.

`differential` proves the trees; this generator proves the words. A case (`make_case`, one
seed) is a small C-like code base whose files repeat lines (``{``, ``}``, blank lines,
``return x;``), a series whose patches edit, insert, delete, add functions and files, and
follow earlier patches up (delete a line or a file an earlier one added, revert one), and an
upstream in two steps, ``up1`` then ``up`` (the day after), whose commits edit the patches'
lines, wrap them in blocks, add ``}`` and blank lines, move functions within and across
files, and take patches: whole, split over two commits, taken and reverted, reverted and
taken again.

`run` drives the real CLI as a maintainer would over two days: ``check --onto up1``,
``refresh --onto up1 --defer-conflicts``, ``status``, ``push NAME`` of some deferred patches
(a conflict resolved as the patch has it, as ``git checkout --theirs`` does hunk by hunk), then
``check --onto up``, ``refresh --onto up --defer-conflicts`` and ``status`` again; and checks
each label against git (a scratch clone where ``git cherry-pick`` is merge-ort, the oracle):

- ``upstream`` (a verdict, a ``# upstream:`` mark, ``status``'s ``in_base``): placing the patch
  where it goes changes nothing; its evidence C, when named: the patch changes something on
  C's parent and nothing on C, and ``git show C`` adds each line the patch adds that C's
  parent lacked;
- ``no-op``: it changes nothing there, and some missing (deferred) patch before it would make
  it change something;
- a knock-on of R: the patch applies once R is applied (R's own conflict taken as R has it);
- a primary conflict's upstream commits: each changed those lines (``git log -L`` over the
  hunk's lines now, or ``git log -S`` of a line the hunk expected or has now, over the range);
- ``superseded_by`` C: ``git show C`` adds every line the patch adds there;
- ``deferred``: not applied, and its mark's commit makes the patch file's change;
- trees: each refresh's tree is ``git rebase``'s with the same patches skipped, and a patch
  brought back gives what git gives when it is picked again at its place.

"unknown" (no evidence, no upstream commit) is never wrong; a wrong label is a finding, each
one sentence naming the label and what git says. ``PATCHSTACK_LABEL_SEEDS=5,17`` runs seeds.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .conftest import Repo

Lines = list[str]
Files = dict[str, Lines]
EPOCH = 1_767_225_600


# -- the model: files as lines, operations anchored on unique lines ------------------------


def _find(files: Files, line: str) -> tuple[str, int] | None:
    """Where a line that occurs once in all the files is (None: absent or repeated)."""
    hits = [(p, i) for p, ls in files.items() for i, ln in enumerate(ls) if ln == line]
    return hits[0] if len(hits) == 1 else None


def apply_op(files: Files, op: tuple) -> Files | None:
    """``op`` applied to a copy of ``files``; None when it does not apply there."""
    out = {p: list(ls) for p, ls in files.items()}
    kind = op[0]
    if kind == "replace":
        at = _find(out, op[1])
        if at is None:
            return None
        out[at[0]][at[1]] = op[2]
    elif kind == "insert_after":
        at = _find(out, op[1])
        if at is None:
            return None
        out[at[0]][at[1] + 1 : at[1] + 1] = list(op[2])
    elif kind == "insert_before":
        at = _find(out, op[1])
        if at is None:
            return None
        out[at[0]][at[1] : at[1]] = list(op[2])
    elif kind == "delete":
        at = _find(out, op[1])
        if at is None:
            return None
        del out[at[0]][at[1]]
    elif kind == "append":
        if op[1] not in out:
            return None
        out[op[1]] += list(op[2])
    elif kind == "create":
        if op[1] in out:
            return None
        out[op[1]] = list(op[2])
    elif kind == "remove":
        if op[1] not in out:
            return None
        del out[op[1]]
    elif kind == "set":  # path -> lines or None, each only where it is still ``expect``
        for p, (expect, new) in op[1].items():
            if out.get(p) != expect:
                return None
            if new is None:
                out.pop(p, None)
            else:
                out[p] = list(new)
    else:
        raise ValueError(kind)
    return out


def apply_ops(files: Files, ops: list[tuple]) -> Files | None:
    for op in ops:
        got = apply_op(files, op)
        if got is None:
            return None
        files = got
    return files


def _function(ls: Lines, header: str) -> tuple[int, int] | None:
    """The lines of the function whose header is ``header``: [start, end) with its blank."""
    if header not in ls:
        return None
    start = ls.index(header)
    end = start
    while end < len(ls) and ls[end] != "}":
        end += 1
    end = min(end + 2, len(ls))  # the "}" and the blank line after it
    return start, end


@dataclass
class Patch:
    subject: str
    ops: list[tuple]
    what: list[str]
    before: Files
    after: Files
    added: list[str]  # lines it inserted (for follow-ups)
    created: list[str]  # files it created


@dataclass
class Case:
    seed: int
    base: Files
    patches: list[Patch]
    up1: list[tuple[str, Files, list[str]]]
    up2: list[tuple[str, Files, list[str]]]
    bring_back: int  # of the deferred patches of day one, how many come back (first ones)

    def describe(self) -> str:
        out = [f"seed {self.seed}: base {', '.join(sorted(self.base))}"]
        for p in self.patches:
            out.append(f"  patch {p.subject}: {'; '.join(p.what)}")
        for label, ups in (("up1", self.up1), ("up (day after)", self.up2)):
            for subject, _f, what in ups:
                out.append(f"  {label} {subject}: {'; '.join(what)}")
        out.append(f"  bring back {self.bring_back} deferred patch(es) on day one")
        return "\n".join(out)


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def function(self, name: str, body: int) -> Lines:
        ls = [f"int {name}(int x)", "{"]
        ls += [f"    int {name}_v{i} = {i};" for i in range(body)]
        if self.rng.random() < 0.5:
            ls += ["    if (x) {", f"        {name}_check(x);", "    }"]
        ls += ["    return x;", "}", ""]
        return ls

    def base(self) -> Files:
        files: Files = {}
        for path in ("a.c", "b.c", "src/c.c")[: self.rng.randint(2, 3)]:
            stem = path.rsplit("/", 1)[-1].split(".")[0]
            ls = [f"/* {path} */", ""]
            for k in range(self.rng.randint(3, 4)):
                ls += self.function(f"{stem}_f{k}", self.rng.randint(3, 5))
            files[path] = ls
        return files

    def unique_lines(self, files: Files) -> list[str]:
        counts: dict[str, int] = {}
        for ls in files.values():
            for ln in ls:
                counts[ln] = counts.get(ln, 0) + 1
        return sorted(
            ln for ln, c in counts.items() if c == 1 and ln.startswith("    ") and ln.strip()
        )

    def headers(self, files: Files) -> list[tuple[str, str]]:
        return sorted((p, ln) for p, ls in files.items() for ln in ls if ln.startswith("int "))

    def patch(self, k: int, files: Files, earlier: list[Patch]) -> Patch:
        rng = self.rng
        tag = f"p{k}"
        ops: list[tuple] = []
        what: list[str] = []
        added: list[str] = []
        created: list[str] = []
        cur = files
        for _ in range(rng.choice([1, 2, 2, 3])):
            kinds = ["edit", "insert", "block", "delete", "function", "file"]
            weights = [6, 4, 3, 2, 2, 1]
            if earlier:
                kinds += ["drop-added", "edit-added", "drop-created", "revert"]
                weights += [3, 2, 2, 1]
            kind = rng.choices(kinds, weights)[0]
            unique = self.unique_lines(cur)
            op: tuple | None = None
            said, grew, made = len(what), len(added), len(created)
            if kind == "edit" and unique:
                line = rng.choice(unique)
                op = ("replace", line, f"{line[:-1]} + {tag};")
                what.append(f"edit {line.strip()!r}")
            elif kind == "insert" and unique:
                line = rng.choice(unique)
                new = f"    {tag}_debug({self.fresh('')});"
                extra = [""] if rng.random() < 0.3 else []
                op = ("insert_after", line, [*extra, new])
                added.append(new)
                what.append(f"insert {new.strip()!r} after {line.strip()!r}")
            elif kind == "block" and unique:
                line = rng.choice(unique)
                call = f"        {tag}_call({self.fresh('')});"
                op = ("insert_after", line, [f"    if ({tag}) {{", call, "    }"])
                added.append(call)
                what.append(f"insert a block after {line.strip()!r}")
            elif kind == "delete" and unique:
                line = rng.choice(unique)
                op = ("delete", line)
                what.append(f"delete {line.strip()!r}")
            elif kind == "function":
                path = rng.choice(sorted(cur))
                body = self.function(self.fresh(f"{tag}_fn"), 2)
                op = ("append", path, body)
                added.append(body[2])
                what.append(f"add function {body[0]!r} to {path}")
            elif kind == "file":
                path = rng.choice(["", "src/", "new/"]) + self.fresh(f"{tag}_new") + ".c"
                body = [f"/* {path} */", "", *self.function(self.fresh(f"{tag}_g"), 3)]
                op = ("create", path, body)
                created.append(path)
                what.append(f"create {path}")
            elif kind in ("drop-added", "edit-added"):
                pool = [ln for e in earlier for ln in e.added if ln in unique]
                if pool:
                    line = rng.choice(pool)
                    if kind == "drop-added":
                        op = ("delete", line)
                        what.append(f"delete {line.strip()!r} (an earlier patch's line)")
                    else:
                        op = ("replace", line, f"{line[:-1]} + {tag};")
                        what.append(f"edit {line.strip()!r} (an earlier patch's line)")
            elif kind == "drop-created":
                pool = [p for e in earlier for p in e.created if p in cur]
                if pool:
                    path = rng.choice(pool)
                    op = ("remove", path)
                    what.append(f"delete {path} (an earlier patch's file)")
            elif kind == "revert":
                e = rng.choice(earlier)
                changed = {
                    p for p in set(e.before) | set(e.after) if e.before.get(p) != e.after.get(p)
                }
                if changed and all(cur.get(p) == e.after.get(p) for p in changed):
                    op = ("set", {p: (e.after.get(p), e.before.get(p)) for p in changed})
                    what.append(f"revert {e.subject}")
            got = apply_op(cur, op) if op is not None else None
            if got is None or got == cur:
                del what[said:], added[grew:], created[made:]
                continue
            ops.append(op)
            cur = got
        if not ops:
            line = self.unique_lines(cur)[0]
            ops.append(("replace", line, f"{line[:-1]} + {tag};"))
            what.append(f"edit {line.strip()!r}")
            cur = apply_op(cur, ops[-1]) or cur
        return Patch(tag, ops, what, files, cur, added, created)

    def upstream(
        self, files: Files, patches: list[Patch], history: list[tuple[str, Files, list[str]]]
    ) -> list[tuple[Files, list[str]]]:
        """One upstream step: one commit, or two (a split take, a take and its revert)."""
        rng = self.rng
        kinds = ["edit-same", "wrap", "edit-far", "repeat", "move-within", "move-across"]
        weights = [4, 2, 3, 3, 2, 2]
        kinds += ["take", "take-split", "take-revert", "revert-earlier"]
        weights += [3, 2, 1, 1]
        kind = rng.choices(kinds, weights)[0]
        unique = self.unique_lines(files)
        touched = [
            ln
            for p in patches
            for op in p.ops
            if op[0] in ("replace", "insert_after", "delete")
            for ln in [op[1]]
            if ln in unique
        ]
        tag = self.fresh("up")
        if kind == "edit-same" and touched:
            line = rng.choice(touched)
            new = f"{line[:-1]} - {tag};" if line.endswith(";") else f"{line} /* {tag} */"
            got = apply_op(files, ("replace", line, new))
            return [(got, [f"edit {line.strip()!r} (a patch's line)"])] if got else []
        if kind == "wrap" and touched:
            line = rng.choice(touched)
            got = apply_ops(
                files,
                [
                    ("insert_before", line, [f"    if ({tag}) {{"]),
                    ("insert_after", line, ["    }"]),
                ],
            )
            return [(got, [f"wrap {line.strip()!r} in a block"])] if got else []
        if kind == "edit-far" and unique:
            line = rng.choice(unique)
            got = apply_op(files, ("replace", line, f"{line[:-1]} * 2;"))
            return [(got, [f"edit {line.strip()!r}"])] if got else []
        if kind == "repeat" and unique:
            line = rng.choice(unique)
            new = rng.choice([[""], ["    }", "    {"], ["", "    return x;"]])
            got = apply_op(files, ("insert_after", line, new))
            return [(got, [f"insert {new!r} after {line.strip()!r}"])] if got else []
        if kind in ("move-within", "move-across"):
            heads = self.headers(files)
            if not heads:
                return []
            path, header = rng.choice(heads)
            span = _function(files[path], header)
            if span is None:
                return []
            out = {p: list(ls) for p, ls in files.items()}
            block = out[path][span[0] : span[1]]
            del out[path][span[0] : span[1]]
            if kind == "move-within":
                out[path][2:2] = block  # to the top, after the file's comment
                return [(out, [f"move {header!r} to the top of {path}"])]
            others = [p for p in sorted(out) if p != path]
            to = rng.choice([*others, self.fresh("moved") + ".c"])
            out.setdefault(to, [f"/* {to} */", ""])
            out[to] += block
            return [(out, [f"move {header!r} from {path} to {to}"])]
        if kind.startswith("take") and patches:
            p = rng.choice(patches)
            got = apply_ops(files, p.ops)
            if got is None or got == files:
                return []
            if kind == "take-split" and len(p.ops) > 1:
                half = apply_ops(files, p.ops[:1])
                if half is not None and half != files and half != got:
                    return [
                        (half, [f"take {p.subject}, first part"]),
                        (got, [f"take {p.subject}, the rest"]),
                    ]
            if kind == "take-revert":
                return [(got, [f"take {p.subject}"]), (files, [f"revert taking {p.subject}"])]
            return [(got, [f"take {p.subject}"])]
        if kind == "revert-earlier" and len(history) >= 1:
            # revert an earlier upstream commit (a take, often): its files back where they
            # were, where nothing since changed them
            i = rng.randrange(len(history))
            after = history[i][1]
            before = history[i - 1][1] if i else None
            if before is None:
                return []
            changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
            if changed and all(files.get(p) == after.get(p) for p in changed):
                out = {p: list(ls) for p, ls in files.items()}
                for p in changed:
                    if p in before:
                        out[p] = list(before[p])
                    else:
                        out.pop(p, None)
                return [(out, [f"revert {history[i][0]}"])]
        return []


def make_case(seed: int) -> Case:
    gen = _Gen(seed)
    rng = gen.rng
    base = gen.base()
    patches: list[Patch] = []
    cur = base
    for k in range(1, rng.randint(3, 6) + 1):
        p = gen.patch(k, cur, patches)
        patches.append(p)
        cur = p.after
    chain: list[tuple[str, Files, list[str]]] = [("base", base, [])]
    up1: list[tuple[str, Files, list[str]]] = []
    up2: list[tuple[str, Files, list[str]]] = []
    for day, count in ((up1, rng.randint(2, 4)), (up2, rng.randint(1, 3))):
        for _ in range(count):
            for files, what in gen.upstream(chain[-1][1], patches, chain):
                if files != chain[-1][1]:
                    step = (f"up{len(chain)}", files, what)
                    chain.append(step)
                    day.append(step)
    return Case(seed, base, patches, up1, up2, rng.randint(0, 2))


# -- writing a case --------------------------------------------------------------------------


def _blob(ls: Lines) -> bytes:
    return "".join(ln + "\n" for ln in ls).encode()


def write_case(case: Case, path: Path) -> Repo:
    """Branches ``base``, ``work`` (the patches as commits), ``up1`` and ``up`` (day one's
    upstream, and the day after's on top of it), in one ``fast-import``."""
    path.mkdir(parents=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    out: list[bytes] = []
    marks = [0, EPOCH]

    def commit(ref: str, parent: int | None, subject: str, files: Files) -> int:
        marks[0] += 1
        marks[1] += 60
        msg = f"{subject}\n".encode()
        who = b"Ada Lovelace <ada@example.org> %d +0000" % marks[1]
        out.append(b"commit refs/heads/%s\nmark :%d\n" % (ref.encode(), marks[0]))
        out.append(b"author %s\ncommitter %s\ndata %d\n%s\n" % (who, who, len(msg), msg))
        if parent:
            out.append(b"from :%d\n" % parent)
        out.append(b"deleteall\n")
        for p, ls in sorted(files.items()):
            data = _blob(ls)
            out.append(b'M 100644 inline "%s"\ndata %d\n%s\n' % (p.encode(), len(data), data))
        out.append(b"\n")
        return marks[0]

    base = commit("base", None, "upstream base", case.base)
    parent = base
    for p in case.patches:
        parent = commit("work", parent, p.subject, p.after)
    parent = base
    for subject, files, what in case.up1:
        parent = commit("up1", parent, f"{subject}: {'; '.join(what)}", files)
    if not case.up1:
        out.append(b"reset refs/heads/up1\nfrom :%d\n\n" % base)
    out.append(b"reset refs/heads/up\nfrom :%d\n\n" % parent)
    for subject, files, what in case.up2:
        parent = commit("up", parent, f"{subject}: {'; '.join(what)}", files)
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"],
        cwd=path,
        input=b"".join(out) + b"done\n",
        check=True,
    )
    repo.git("checkout", "-q", "-B", "main", "base")
    return repo


# -- the oracle: git's merge-ort, one patch at a time ---------------------------------------


def resolve_markers(text: str) -> str | None:
    """A conflicted file resolved as the patch has it, hunk by hunk (the side after
    ``=======``); None when it has no markers."""
    out: list[str] = []
    state = ""
    seen = False
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<< ") and state == "":
            state, seen = "ours", True
        elif line.startswith("||||||| ") and state == "ours":
            state = "base"
        elif line.rstrip("\n") == "=======" and state in ("ours", "base"):
            state = "theirs"
        elif line.startswith(">>>>>>> ") and state == "theirs":
            state = ""
        elif state in ("", "theirs"):
            out.append(line)
    return "".join(out) if seen and state == "" else None


class Git:
    """The oracle's git: picks by ``merge-tree --write-tree`` (merge-ort, as ``git
    cherry-pick``: the patch's parent the merge base), on objects of the fork's repository."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.index = repo.path / ".git" / "oracle-index"
        self.memo: dict[tuple[str, str], tuple[str, str | None, list[str]]] = {}

    def run(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.repo.path,
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args}: {proc.stderr}")
        return proc.stdout

    def rev(self, name: str) -> str:
        return self.run("rev-parse", "--verify", "-q", name + "^{commit}").strip()

    def tree(self, commit: str) -> str:
        return self.run("rev-parse", commit + "^{tree}").strip()

    def commit(self, tree: str, parent: str, subject: str = "oracle") -> str:
        return self.run("commit-tree", tree, "-p", parent, "-m", subject).strip()

    def pick(self, onto: str, patch: str) -> tuple[str, str | None, list[str]]:
        """``patch`` (a commit) cherry-picked onto ``onto``: ("clean", tree), ("empty",
        tree) or ("conflict", tree with markers, the conflicted paths)."""
        key = (onto, patch)
        if key not in self.memo:
            ours = self.commit(self.tree(onto), patch + "^")
            proc = subprocess.run(
                ["git", "merge-tree", "--write-tree", "--name-only", "-z", ours, patch],
                cwd=self.repo.path,
                capture_output=True,
            )
            if proc.returncode not in (0, 1):
                raise AssertionError(proc.stderr)
            fields = proc.stdout.decode().split("\0")
            tree = fields[0]
            if proc.returncode == 1:
                paths = []
                for f in fields[1:]:
                    if not f:
                        break
                    paths.append(f)
                self.memo[key] = ("conflict", tree, sorted(set(paths)))
            else:
                self.memo[key] = ("empty" if tree == self.tree(onto) else "clean", tree, [])
        return self.memo[key]

    def resolved(self, onto: str, patch: str) -> str | None:
        """The commit of ``patch`` picked onto ``onto`` with its conflicts taken as the patch
        has them, hunk by hunk; None when a conflict has no markers (a file's existence)."""
        verdict, tree, paths = self.pick(onto, patch)
        if verdict != "conflict":
            return self.commit(tree, onto) if verdict == "clean" else onto
        env = {"GIT_INDEX_FILE": str(self.index)}
        self.run("read-tree", tree, env=env)
        for path in paths:
            listing = self.run("ls-tree", tree, "--", path).split()
            if not listing or listing[1] != "blob":
                return None
            text = self.run("cat-file", "blob", listing[2])
            fixed = resolve_markers(text)
            if fixed is None:
                return None
            blob = (
                subprocess.run(
                    ["git", "hash-object", "-w", "--stdin"],
                    cwd=self.repo.path,
                    input=fixed.encode(),
                    capture_output=True,
                    check=True,
                )
                .stdout.decode()
                .strip()
            )
            self.run("update-index", "--cacheinfo", f"{listing[0]},{blob},{path}", env=env)
        return self.commit(self.run("write-tree", env=env).strip(), onto)

    def chain(
        self, onto: str, patches: list[tuple[str, str]], resolve: frozenset[str] = frozenset()
    ) -> Chain:
        """``git rebase`` of ``patches`` ((name, commit), in order) onto ``onto``, each conflict
        skipped (or resolved as the patch has it, for the names of ``resolve``), each patch
        that becomes empty dropped."""
        head = onto
        out = Chain(onto)
        for name, commit in patches:
            out.at[name] = head
            verdict, tree, _paths = self.pick(head, commit)
            if verdict == "conflict" and name in resolve:
                fixed = self.resolved(head, commit)
                if fixed is not None:
                    out.resolved.append(name)
                    head = fixed
                    continue
            if verdict == "conflict":
                out.conflicts.append(name)
            elif verdict == "empty":
                out.empty.append(name)
            else:
                head = self.commit(tree, head)
        out.head = head
        return out

    def added_lines(self, commit: str) -> list[str]:
        diff = self.run("show", "--format=", "-M", "--no-color", commit)
        return [
            ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")
        ]

    def all_lines(self, commit: str) -> set[str]:
        out: set[str] = set()
        for path in self.run("ls-tree", "-r", "--name-only", commit).splitlines():
            out |= set(self.run("show", f"{commit}:{path}").splitlines())
        return out


@dataclass
class Chain:
    onto: str
    head: str = ""
    at: dict[str, str] = field(default_factory=dict)  # where each patch was placed
    conflicts: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)


# -- the checks -------------------------------------------------------------------------------


class Oracle:
    """Judges the labels of one case; ``findings`` collects every wrong one."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.git = Git(repo)
        self.findings: list[str] = []

    def fail(self, where: str, text: str, item: str = "") -> None:
        """A wrong label; ``item``: the bug of issue 33 it is an instance of, when known."""
        self.findings.append(f"{where}: {text}" + (f" [issue 33 item {item}]" if item else ""))

    # the definitions

    def holds(self, tree_commit: str, patch: str) -> bool:
        return self.git.pick(tree_commit, patch)[0] == "empty"

    def upstream_evidence(self, where: str, name: str, patch: str, ev: str, old: str, new: str):
        """``ev`` (an id or its prefix) brought ``patch``'s change: it is in old..new, the
        patch changes something on its parent and nothing on it, and it adds every line the
        patch adds that its parent lacked."""
        git = self.git
        full = git.run("rev-parse", "--verify", "-q", ev + "^{commit}", check=False).strip()
        in_range = git.run("rev-list", f"{old}..{new}").split()
        if full not in in_range:
            self.fail(
                where,
                f"{name}: evidence {ev[:12]} is not an upstream commit of the range",
                item="6",
            )
            return
        if not self.holds(full, patch):
            self.fail(
                where,
                f"{name}: upstream in {ev[:12]}, but git: the patch still changes "
                f"something on {ev[:12]} ({git.pick(full, patch)[0]})",
                item="6",
            )
            return
        if self.holds(full + "^", patch):
            self.fail(
                where,
                f"{name}: upstream in {ev[:12]}, but git: its parent already "
                "holds the change (that commit did not bring it)",
                item="6",
            )
            return
        had = git.all_lines(full + "^")
        brought = set(git.added_lines(full))
        missing = [ln for ln in git.added_lines(patch) if ln not in had and ln not in brought]
        if missing:
            self.fail(
                where, f"{name}: upstream in {ev[:12]}, but git show lacks {missing[:2]}", item="6"
            )

    def patch_file_commit(self, where: str, name: str, commit: str) -> None:
        """The patch file's change is ``commit``'s (its parent to it)."""
        git = self.git
        env = {"GIT_INDEX_FILE": str(git.index)}
        git.run("read-tree", commit + "^", env=env)
        patch = self.repo.path / "patches" / name
        proc = subprocess.run(
            ["git", "apply", "--cached", str(patch)],
            cwd=self.repo.path,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        made = git.run("write-tree", env=env).strip() if proc.returncode == 0 else None
        if made != git.tree(commit):
            self.fail(
                where,
                f"{name}: deferred at {commit[:12]}, but git: the patch file does "
                "not make that commit's change",
            )

    def culprits(self, where: str, report: dict, old: str, new: str) -> None:
        """Each upstream commit named for a primary hunk changed those lines."""
        git = self.git
        for hunk in report["hunks"]:
            named = [c["commit"] for c in hunk["upstream_commits"] if c["commit"]]
            if not named:
                continue
            path, now, expected = hunk["path"], hunk["now"], hunk["expected"]
            ok: set[str] = set()
            if now and hunk["line"] > 0:
                span = f"{hunk['line']},+{len(now)}:{path}"
                out = git.run("log", "--format=%H", "-s", "-L", span, f"{old}..{new}", check=False)
                ok |= {ln for ln in out.splitlines() if len(ln) >= 40}
            for line in set(now) ^ set(expected):
                if line.strip() and line.strip() not in "{}":
                    out = git.run("log", "--format=%H", "-S" + line, f"{old}..{new}")
                    ok |= set(out.split())
            for c in named:
                full = git.run("rev-parse", "--verify", "-q", c + "^{commit}", check=False).strip()
                if full not in ok:
                    self.fail(
                        where,
                        f"{report['patch']}: culprit {c[:12]} of {path}:"
                        f"{hunk['line']}, but git log -L/-S over those lines does not "
                        "name it",
                        item="6",
                    )

    def superseded(self, where: str, report: dict) -> None:
        sup = report.get("superseded_by")
        if not sup or not sup["commit"]:
            return
        full = self.git.rev(sup["commit"])
        brought = {ln.strip() for ln in self.git.added_lines(full)}
        for hunk in report["hunks"]:
            adds = [ln for ln in hunk["wanted"] if ln not in hunk["expected"] and ln.strip()]
            lacking = [ln for ln in adds if ln.strip() not in brought]
            if lacking:
                self.fail(
                    where,
                    f"{report['patch']}: superseded by {sup['commit'][:12]}, but "
                    f"git show lacks {lacking[:2]}",
                    item="6",
                )
                return

    def knock_on(self, where: str, name: str, root: str, onto: str, patches: list) -> None:
        """``name`` applies once ``root`` is applied (its conflict taken as it has it)."""
        order = [n for n, _c in patches]
        if root not in order or name not in order:
            self.fail(where, f"{name}: knock-on of {root}, which is not before it in the series")
            return
        if order.index(root) > order.index(name):
            self.fail(where, f"{name}: knock-on of {root}, which comes after it")
            return
        chain = self.git.chain(onto, patches[: order.index(name) + 1], frozenset([root]))
        if root not in chain.resolved and root in chain.conflicts:
            return  # its conflict is not in lines: the oracle cannot place it (unknown)
        if name in chain.conflicts:
            self.fail(
                where,
                f"{name}: knock-on of {root}, but git: with {root} applied it still conflicts",
                item="5",
            )

    # one command's labels

    def verdicts(
        self,
        where: str,
        entries: list[dict],
        ref: Chain,
        commits: dict[str, str],
        self_noop: set[str],
        old: str,
        new: str,
    ) -> None:
        for e in entries:
            name, verdict = e["name"], e["verdict"]
            if name not in commits:
                continue
            ev = (e.get("evidence") or {}).get("commit") or ""
            if verdict == "upstream":
                if name not in ref.empty:
                    said = "conflicts" if name in ref.conflicts else "changes something"
                    self.fail(where, f"{name}: upstream, but git: placed there it {said}")
                elif name in self_noop:
                    self.fail(
                        where,
                        f"{name}: upstream, but git: it changes nothing only "
                        "because a missing (deferred) patch before it is missing: a no-op",
                        item="2",
                    )
                elif ev:
                    self.upstream_evidence(where, name, commits[name], ev, old, new)
            elif verdict == "no-op":
                if name not in ref.empty:
                    self.fail(where, f"{name}: no-op, but git: placed there it changes something")
                elif name not in self_noop:
                    self.fail(
                        where,
                        f"{name}: no-op, but git: it changes something with every "
                        "missing patch present; upstream brought it",
                        item="2",
                    )
            elif verdict in ("unchanged", "offset", "merged"):
                if name in ref.conflicts:
                    self.fail(where, f"{name}: {verdict}, but git: it conflicts")
                elif name in ref.empty:
                    self.fail(where, f"{name}: {verdict}, but git: it changes nothing there")
            elif verdict == "conflict" and name not in ref.conflicts:
                self.fail(where, f"{name}: conflict, but git: it applies")

    def marks(self, where: str, status: dict, commits: dict[str, str], ref, self_noop, old, new):
        for p in status["patches"]:
            mark = p.get("mark")
            if not mark:
                continue
            name = p["name"]
            if mark["kind"] == "deferred":
                if p["applied"]:
                    self.fail(where, f"{name}: deferred, but it is applied")
                self.patch_file_commit(where, name, mark["commit"])
            elif mark["kind"] == "upstream" and name in commits:
                entry = {"name": name, "verdict": "upstream", "evidence": None}
                if mark.get("evidence"):
                    entry["evidence"] = {"commit": mark["evidence"]}
                self.verdicts(f"{where} (mark)", [entry], ref, commits, self_noop, old, new)


# -- the two days -------------------------------------------------------------------------------


def stack_of(repo: Repo, base: str) -> list[tuple[str, str]]:
    """The applied patches over ``base``: (name, commit), oldest first."""
    out = repo.git("log", "--reverse", "-z", "--format=%H%x01%B", f"{base}..HEAD")
    found = []
    for record in filter(None, out.split("\0")):
        commit, message = record.lstrip("\n").split("\x01", 1)
        for line in message.splitlines():
            if line.startswith("Patchstack-Patch: "):
                found.append((line.split(": ", 1)[1].strip(), commit))
    return found


def _json(repo: Repo, *args: str) -> dict:
    result = repo.ps(*args, "--json", code=None)
    assert result.exit_code in (0, 1), (args, result.output)
    return json.loads(result.stdout)


class Day:
    """One refresh onto ``new`` of the stack applied over ``old``, its labels checked."""

    def __init__(self, o: Oracle, label: str, old: str, new: str, ref_name: str) -> None:
        self.o, self.label, self.old, self.new, self.ref_name = o, label, old, new, ref_name
        repo = o.repo
        status = _json(repo, "status")
        self.order = [p["name"] for p in status["patches"]]
        self.deferred = {
            p["name"]: p["mark"]["commit"]
            for p in status["patches"]
            if p.get("mark") and p["mark"]["kind"] == "deferred"
        }
        # a patch marked upstream is placed again by the next refresh (git rebase would
        # carry it no more): judged alone, on the new base
        self.taken = {
            p["name"]: p["mark"]["commit"]
            for p in status["patches"]
            if p.get("mark") and p["mark"]["kind"] == "upstream"
        }
        self.applied = stack_of(repo, old)
        self.commits = {**self.deferred, **dict(self.applied)}
        self.ref = o.git.chain(new, self.applied)
        kept = [(n, c) for n, c in self.applied if n not in self.ref.conflicts]
        self.self_noop = set(o.git.chain(old, kept).empty)

    def in_order(self, present: set[str]) -> list[tuple[str, str]]:
        return [(n, self.commits[n]) for n in self.order if n in present and n in self.commits]

    def judge(self, where: str, entries: list[dict], reports: list[dict], now=()) -> None:
        o = self.o
        o.verdicts(where, entries, self.ref, self.commits, self.self_noop, self.old, self.new)
        for e in entries:
            if e["name"] in self.taken and e["verdict"] in ("conflict", "deferred"):
                if o.git.pick(self.new, self.taken[e["name"]])[0] != "conflict":
                    o.fail(
                        where,
                        f"{e['name']}: {e['verdict']} (marked upstream before), but "
                        "git: it applies on the new base",
                    )
                continue
            if e["verdict"] == "deferred" and e["name"] not in {*self.deferred, *now}:
                o.fail(where, f"{e['name']}: deferred, but the series does not defer it")
        applied = {n for n, _c in self.applied}
        for r in reports:
            present = applied | ({r["root"]} if r.get("root") else set())
            if r["kind"] == "knock-on" and r["root"]:
                o.knock_on(where, r["patch"], r["root"], self.new, self.in_order(present))
            elif r["kind"] == "primary":
                o.culprits(where, r, self.old, self.new)
                self.primary(where, r["patch"], set(r["files"]), applied)
            o.superseded(where, r)

    def primary(self, where: str, name: str, files: set[str], applied: set[str]) -> None:
        """A primary conflict is upstream's: no one missing patch before it, applied, lets it
        apply (judged where that patch's own conflict is in other files, so that taking it
        as the patch has it decides nothing in this one's files)."""
        if name not in self.order:
            return
        before = self.order[: self.order.index(name)]
        missing = [n for n in before if n in self.commits and n not in applied]
        missing += [n for n in before if n in self.ref.conflicts]
        for root in missing:
            present = (applied - set(self.ref.conflicts)) | {root, name}
            chain = self.o.git.chain(self.new, self.in_order(present), frozenset([root]))
            own = self.o.git.pick(chain.at[root], self.commits[root])[2] if root in chain.at else []
            if root in chain.resolved and name not in chain.conflicts and not files & set(own):
                self.o.fail(
                    where,
                    f"{name}: primary, but git: it applies once {root} "
                    "(missing) is applied: a knock-on",
                    item="5",
                )
                return

    def check(self) -> None:
        data = _json(self.o.repo, "check", "--onto", self.ref_name)
        where = f"{self.label} check"
        got = sorted(c["patch"] for c in data["conflicts"] if c["patch"] not in self.taken)
        if got != sorted(self.ref.conflicts):
            self.o.fail(where, f"conflicts {got}, git {sorted(self.ref.conflicts)}")
        self.judge(where, data["patches"], data["conflicts"])

    def refresh(self) -> dict:
        repo, o = self.o.repo, self.o
        data = _json(repo, "refresh", "--onto", self.ref_name, "--defer-conflicts")
        where = f"{self.label} refresh"
        got = sorted(c["patch"] for c in data["deferred"] if c["patch"] not in self.taken)
        if got != sorted(self.ref.conflicts):
            o.fail(where, f"deferred {got}, git skipped {sorted(self.ref.conflicts)}")
        if repo.tree() != o.git.tree(self.ref.head):
            o.fail(where, "the tree is not git rebase's (the same patches skipped)")
        self.judge(where, data["patches"], data["deferred"], self.ref.conflicts)
        status = _json(repo, "status")
        where = f"{self.label} status"
        o.marks(where, status, self.commits, self.ref, self.self_noop, self.old, self.new)
        for name in status["in_base"]:
            entry = {"name": name, "verdict": "upstream", "evidence": None}
            o.verdicts(
                f"{where} in_base",
                [entry],
                self.ref,
                self.commits,
                self.self_noop,
                self.old,
                self.new,
            )
        return data


def bring_back(o: Oracle, name: str, onto: str) -> None:
    """``push NAME`` of a deferred patch, its conflict resolved as the patch has it (the
    others skipped), against git picking it again at its place."""
    repo = o.repo
    status = _json(repo, "status")
    order = [p["name"] for p in status["patches"]]
    marks = {p["name"]: p["mark"] for p in status["patches"] if p.get("mark")}
    waiting = {name}
    for n in order:  # the knock-ons waiting for it come back with it
        m = marks.get(n)
        if m and m["kind"] == "deferred" and m.get("root") in waiting:
            waiting.add(n)
    commits = dict(stack_of(repo, onto))
    commits.update({n: marks[n]["commit"] for n in waiting})
    present = [(n, commits[n]) for n in order if n in commits]
    ref = o.git.chain(onto, present, frozenset([name]))
    where = f"push {name}"
    result = repo.ps("push", name, code=None)
    conflicts = name in ref.conflicts or name in ref.resolved
    for line in result.stdout.splitlines():
        if line.split()[:2] == ["upstream", name] and name not in ref.empty:
            said = "conflicts" if conflicts else "changes something"
            o.fail(where, f"upstream, but git: picked again at its place it {said}", item="1")
    if conflicts and result.exit_code == 0:
        o.fail(where, "exit 0 with no conflict, but git: it conflicts there", item="1")
        return
    for _ in range(2 * len(order) + 2):
        if result.exit_code == 0:
            break
        assert result.exit_code == 1, result.output
        stopped = _json(repo, "status")["stopped"]
        if stopped is None:
            return  # refused: nothing to compare
        if stopped["patch"] != name or name not in ref.resolved:
            if stopped["patch"] == name:
                repo.ps("refresh", "--abort")
                return  # not a conflict of lines: the oracle cannot resolve it
            result = repo.ps("refresh", "--skip", code=None)
            continue
        for path in stopped["conflicted"]:
            fixed = resolve_markers(repo.read(path))
            if fixed is None:
                repo.ps("refresh", "--abort")
                return
            repo.write(path, fixed)
        result = repo.ps("refresh", "--continue", code=None)
    if result.exit_code != 0:
        return
    if repo.tree() != o.git.tree(ref.head):
        o.fail(
            where,
            "the tree is not git's with the patch picked again at its place "
            f"(git: conflicts {ref.conflicts}, empty {ref.empty})",
            item="4",
        )


def run(case: Case, tmp: Path) -> list[str]:
    """Every wrong label of ``case`` over two days (empty: every label is right)."""
    repo = write_case(case, tmp / "fork")
    repo.ps("import", "commits", "base..work", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    o = Oracle(repo)
    base, up1, up = o.git.rev("base"), o.git.rev("up1"), o.git.rev("up")
    one = Day(o, "day one", base, up1, "up1")
    one.check()
    data = one.refresh()
    primaries = [c["patch"] for c in data["deferred"] if c["kind"] == "primary"]
    for name in primaries[: case.bring_back]:
        bring_back(o, name, up1)
    after = Day(o, "day after", up1, up, "up")
    after.check()
    after.refresh()
    return o.findings


def seeds_from_env(default: list[int]) -> list[int]:
    text = os.environ.get("PATCHSTACK_LABEL_SEEDS")
    return [int(s) for s in text.split(",")] if text else list(default)
