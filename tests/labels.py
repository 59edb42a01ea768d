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
each label against git (`label_oracle`: merge-ort picks by ``git merge-tree`` on the fork's
own objects, as ``git cherry-pick`` and ``git rebase`` make them):

- ``upstream`` (a verdict, a ``# upstream:`` mark, ``status``'s ``in_base``): placing the patch
  where it goes changes nothing; its evidence C, when named: the patch changes something on
  C's parent and nothing on C, and ``git show C`` adds each line the patch adds that C's
  parent lacked;
- ``no-op``: it changes nothing there, and on the old base without the missing (deferred,
  conflicting) patches it changes nothing either (one of them would make it change something);
  ``upstream`` for such a patch is wrong;
- a knock-on of R: the patch applies once R is applied (R's own conflict taken as R has it);
  a primary conflict: no one missing patch, applied, lets it apply (judged where that patch's
  conflict is in other files);
- a primary conflict's upstream commits: each changed those lines (``git log -L`` over the
  hunk's lines now, or ``git log -S`` of a line the hunk expected or has now, over the range);
- ``superseded_by`` C: ``git show C`` adds every line the patch adds there;
- ``deferred``: not applied, and its mark's commit makes the patch file's change; one waiting
  for a root is marked primary or a knock-on as the refresh's triage reported it;
- trees: each refresh's tree is ``git rebase``'s with the same patches skipped, and a patch
  brought back gives what git gives when it is picked again at its place.

"unknown" (no evidence, no upstream commit) is never wrong; a wrong label is a finding, each
one sentence naming the label and what git says. ``PATCHSTACK_LABEL_SEEDS=5,17`` runs seeds.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .conftest import Repo
from .differential import SWITCHES
from .label_days import Day, bring_back, stack_of
from .label_oracle import Oracle

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


def run(
    case: Case, tmp: Path, judged: dict[str, int] | None = None, shortcuts: bool = True
) -> list[str]:
    """Every wrong label of ``case`` over two days (empty: every label is right);
    ``judged`` gets how many labels of each kind were checked. ``shortcuts=False``: the
    plain path (`differential.SWITCHES`), which must print the same labels."""
    saved = {k: os.environ.get(k) for k in SWITCHES}
    if not shortcuts:
        os.environ.update(SWITCHES)
    try:
        o = _two_days(case, tmp)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if judged is not None:
        judged.update(o.judged)
    return o.findings


def _two_days(case: Case, tmp: Path) -> Oracle:
    repo = write_case(case, tmp / "fork")
    repo.ps("import", "commits", "base..work", "--tag", "essential")
    (repo.path / ".git" / "info" / "exclude").write_text("patches/\n")
    repo.ps("push", "--all")
    o = Oracle(repo)
    base, up1, up = o.git.rev("base"), o.git.rev("up1"), o.git.rev("up")
    original = dict(stack_of(repo, base))
    one = Day(o, "day one", base, up1, "up1")
    one.check()
    data = one.refresh()
    # a held patch that also conflicts is primary, waiting for its root: it comes back with it
    primaries = [c["patch"] for c in data["deferred"] if c["kind"] == "primary" and not c["root"]]
    for name in primaries[: case.bring_back]:
        bring_back(o, name, up1, original)
    after = Day(o, "day after", up1, up, "up")
    after.check()
    after.refresh()
    after.again()
    return o


def seeds_from_env(default: list[int]) -> list[int]:
    text = os.environ.get("PATCHSTACK_LABEL_SEEDS")
    return [int(s) for s in text.split(",")] if text else list(default)
