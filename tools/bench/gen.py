"""Generate the benchmark fixture: upstream repository, patch chain, series, upstream move.

Everything is deterministic for a given seed. The upstream history, the commit chain that the
series is made from, and the moved upstream are written with ONE `git fast-import` stream; the
patch files are then written by ONE batched `git format-patch` over the chain.

Fixture layout under WORKDIR:

    repo.git/             bare repository: refs/heads/{base,chain,moved,chain-N}
    series-N/             pristine series directories (series file + N patch files)
    pile-N/               the same patches as a git-pile directory (series + config)
    fixture.json          what was generated (commits, planned conflicts and traps)
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass, field

TAGS = ("essential", "diagnostic", "optimization")
AUTHOR = "Bench Bot <bench@example.invalid>"
EPOCH = 1_700_000_000
FROM_LINE = re.compile(rb"^From 0{40} Mon Sep 17 00:00:00 2001$", re.M)

WORDS = [
    "engine",
    "layers",
    "attention",
    "backends",
    "models",
    "managers",
    "entrypoints",
    "kernels",
    "moe",
    "quant",
    "distributed",
    "utils",
    "runtime",
    "sampling",
    "speculative",
    "scheduler",
    "memory",
    "cache",
    "io",
    "config",
    "tokenizer",
    "server",
    "client",
    "metrics",
    "lora",
    "ops",
    "triton",
    "cuda",
    "rocm",
    "cpu",
    "eagle",
    "routing",
    "communicator",
    "loader",
    "weights",
    "parallel",
    "pipeline",
    "tensor",
    "expert",
    "gather",
    "cast",
    "norm",
    "rotary",
]
VERBS = [
    "compute",
    "build",
    "load",
    "apply",
    "merge",
    "gather",
    "route",
    "scale",
    "cast",
    "check",
    "reset",
    "update",
]


def run(args, cwd=None, input=None, env=None):
    return subprocess.run(
        args, cwd=cwd, input=input, env=env, check=True, capture_output=True
    ).stdout


# --------------------------------------------------------------------------- content


class Text:
    """Generates Python-like lines that are unique within the run (so context is specific)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.n = 0

    def ident(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.rng.choice(WORDS)}_{self.n}"

    def function(self, indent: str = "") -> list[str]:
        rng = self.rng
        name = self.ident(rng.choice(VERBS))
        a, b = self.ident("arg"), self.ident("opt")
        out = [
            f"{indent}def {name}({a}, {b}=None):\n",
            f'{indent}    """{rng.choice(VERBS).capitalize()} the {rng.choice(WORDS)} '
            f'for {rng.choice(WORDS)} ({self.n})."""\n',
        ]
        for _ in range(rng.randint(2, 14)):
            v = self.ident("value")
            kind = rng.random()
            if kind < 0.5:
                out.append(
                    f"{indent}    {v} = {rng.choice(VERBS)}_{rng.choice(WORDS)}"
                    f"({a}, {rng.randint(0, 4096)})\n"
                )
            elif kind < 0.75:
                out.append(f"{indent}    if {v} is not None and {b}:\n")
                out.append(f"{indent}        {a} = {v} + {rng.randint(1, 64)}\n")
            else:
                out.append(f'{indent}    logger.debug("{v} %s", {a})  # {self.n}\n')
        out.append(f"{indent}    return {a}\n")
        out.append("\n")
        return out

    def module(self, n_lines: int, path: str) -> list[str]:
        rng = self.rng
        out = [
            f'"""{path}: {rng.choice(WORDS)} {rng.choice(WORDS)} support."""\n',
            "\n",
            "import logging\n",
            f"import {rng.choice(WORDS)}\n",
            "\n",
            "logger = logging.getLogger(__name__)\n",
            "\n",
        ]
        while len(out) < n_lines:
            if rng.random() < 0.3:
                out.append(f"class {self.ident('Cls').title().replace('_', '')}:\n")
                for _ in range(rng.randint(1, 4)):
                    out.extend(self.function("    "))
            else:
                out.extend(self.function())
                out.append("\n")
        return out

    def edit_lines(self, count: int, patch: int) -> list[str]:
        out = []
        for _ in range(count):
            if self.rng.random() < 0.3:
                out.append(f"    # patch {patch}: {self.rng.choice(VERBS)} {self.ident('note')}\n")
            else:
                out.append(
                    f"    {self.ident('tuned')} = {self.rng.choice(VERBS)}_"
                    f"{self.rng.choice(WORDS)}({self.n}, patch={patch})\n"
                )
        return out


def gen_paths(rng: random.Random, n_files: int) -> list[str]:
    dirs = [w for w in rng.sample(WORDS, 6)]
    n_dirs = max(8, n_files // 12)
    while len(dirs) < n_dirs:
        parent = rng.choice(dirs)
        if parent.count("/") >= 6:
            continue
        dirs.append(
            f"{parent}/{rng.choice(WORDS)}{rng.randint(0, 9) if rng.random() < 0.5 else ''}"
        )
    dirs = sorted(set(d for d in dirs if d.count("/") >= 1)) or ["src/pkg"]
    paths: set[str] = set()
    while len(paths) < n_files:
        d = rng.choice(dirs)
        paths.add(f"{d}/{rng.choice(VERBS)}_{rng.choice(WORDS)}_{len(paths)}.py")
    return sorted(paths)


# --------------------------------------------------------------------------- model


@dataclass
class Hunk:
    start: int  # 0-based line in the file content before the patch
    remove: int
    add: list[str]


@dataclass
class Patch:
    index: int
    name: str
    tag: str
    subject: str
    body: str
    files: dict[str, list[str]] = field(default_factory=dict)  # path -> new content
    first_touch: list[tuple[str, Hunk]] = field(default_factory=list)
    trap: bool = False


@dataclass
class Fixture:
    base_files: dict[str, list[str]]
    modes: dict[str, str]
    patches: list[Patch]
    # (message, changed files, the file of a planned conflict or None)
    upstream: list[tuple[str, dict[str, list[str]], str | None]]
    plan: dict


def apply_hunks(lines: list[str], hunks: list[Hunk]) -> list[str]:
    out = list(lines)
    for h in sorted(hunks, key=lambda h: h.start, reverse=True):
        out[h.start : h.start + h.remove] = h.add
    return out


def plan_hunks(
    rng: random.Random, n_lines: int, budget: int, text: Text, patch: int, n_hunks: int
) -> list[Hunk]:
    """Non-overlapping hunks at least 10 lines apart, away from both ends of the file."""
    lo, hi = 8, n_lines - 6
    if hi - lo < 4:
        return []
    hunks: list[Hunk] = []
    for _ in range(n_hunks):
        share = max(2, budget // n_hunks)
        remove = rng.randint(0, min(6, share - 1))
        add = max(1, share - remove)
        for _attempt in range(20):
            start = rng.randint(lo, max(lo, hi - remove))
            if all(start + remove + 10 < h.start or h.start + h.remove + 10 < start for h in hunks):
                hunks.append(Hunk(start, remove, text.edit_lines(add, patch)))
                break
    return hunks


def build(
    rng: random.Random,
    base_files: dict[str, list[str]],
    modes: dict[str, str],
    n_patches: int,
    n_upstream: int,
    dup_blocks: dict[str, tuple[int, int, int]],
    text: Text,
) -> Fixture:
    paths = sorted(base_files)
    current: dict[str, list[str]] = {}  # files changed by the chain so far
    touched: dict[bool, list[str]] = {False: [], True: []}
    owner: dict[str, bool] = {}
    reserved: set[str] = set()
    patches: list[Patch] = []
    # Patches that are set up to be mis-applied by context matching (see README).
    n_traps = max(1, round(n_patches * 0.005)) if n_patches >= 5 else 0
    trap_at = set(
        sorted(
            {
                max(1, int(math.exp(rng.uniform(math.log(3), math.log(n_patches)))))
                for _ in range(n_traps)
            }
        )
    )
    eligible = [p for p in paths if len(base_files[p]) >= 40]
    dup_files = [p for p in dup_blocks]
    rng.shuffle(dup_files)
    for i in range(1, n_patches + 1):
        tag = TAGS[(i - 1) % 3]
        area = rng.choice(WORDS)
        subject = f"{area}: {rng.choice(VERBS)} {rng.choice(WORDS)} for {rng.choice(WORDS)}"
        slug = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")[:48]
        name = f"{i:04d}-{slug}.patch"
        body = (
            f"{tag.capitalize()} change number {i}: keeps the fork's {area} behaviour.\n\n"
            f"Needed because upstream {rng.choice(VERBS)}s {rng.choice(WORDS)} differently."
        )
        p = Patch(i, name, tag, subject, body)
        if i in trap_at:
            path = next((f for f in dup_files if f not in current and f not in reserved), None)
            if path is None:
                path = next(
                    f
                    for f in rng.sample(eligible, len(eligible))
                    if f not in current and f not in reserved
                )
                start = len(base_files[path]) // 3
            else:
                start = dup_blocks[path][0] + 6
            h = Hunk(start, 2, text.edit_lines(rng.randint(2, 4), i))
            p.files[path] = apply_hunks(base_files[path], [h])
            p.first_touch.append((path, h))
            p.trap = True
            reserved.add(path)
        else:
            budget = rng.randint(2, 40)
            n_files = rng.choices((1, 2, 3), (6, 3, 1))[0]
            chosen: list[str] = []
            # Diagnostic patches stack only on files that other diagnostic patches touch (and
            # the others only on theirs), so that `pop --only diagnostic` has one exact answer.
            klass = tag == "diagnostic"
            mine = touched[klass]
            for _ in range(n_files):
                cand = rng.choice(mine) if mine and rng.random() < 0.5 else rng.choice(paths)
                if cand not in reserved and cand not in chosen and owner.get(cand, klass) == klass:
                    chosen.append(cand)
            if rng.random() < 0.03 or not chosen:
                d = os.path.dirname(rng.choice(paths))
                newp = f"{d}/added_{rng.choice(WORDS)}_{i}.py"
                p.files[newp] = text.module(rng.randint(10, 60), newp)
                current[newp] = p.files[newp]
                reserved.add(newp)  # keep new files simple: never edited again
            for path in chosen:
                share = max(2, budget // len(chosen))
                old = current.get(path, base_files[path])
                hunks = plan_hunks(rng, len(old), share, text, i, rng.choice((1, 1, 2)))
                if not hunks:
                    continue
                p.files[path] = apply_hunks(old, hunks)
                if path not in current:
                    p.first_touch.extend((path, h) for h in hunks)
                    touched[klass].append(path)
                    owner[path] = klass
            if not p.files:  # every candidate was too short: add a file instead
                newp = f"{os.path.dirname(paths[0])}/added_fallback_{i}.py"
                p.files[newp] = text.module(20, newp)
                reserved.add(newp)
        current.update(p.files)
        patches.append(p)

    # ------------------------------------------------------------------ upstream move
    def logpick(cands):
        """Pick a candidate, favouring early patches so that small series get some too."""
        idx = int(math.exp(rng.uniform(0, math.log(len(cands)))))
        return cands[min(len(cands), idx) - 1]

    by_patch = [(p, path, h) for p in patches for path, h in p.first_touch]
    touches: dict[str, int] = {}
    for p in patches:
        for path in p.files:
            touches[path] = touches.get(path, 0) + 1
    used: set[str] = set()
    specials: list[tuple[str, Patch, str, Hunk]] = []
    for p, path, h in by_patch:
        if p.trap:
            specials.append(("trap", p, path, h))
            used.add(path)
    want = {
        "conflict": max(1, n_patches // 90),
        "threeway": max(2, n_patches // 20),
        "offset": max(2, n_patches // 12),
    }
    for kind, count in want.items():
        pool = [
            (p, path, h)
            for p, path, h in by_patch
            if not p.trap
            and (kind != "conflict" or h.remove >= 1)
            # an edit next to a hunk must merge cleanly: no later patch on that file
            and (kind != "threeway" or touches[path] == 1)
        ]
        for _ in range(count * 4):
            if count == 0 or not pool:
                break
            p, path, h = logpick(pool)
            if path in used:
                continue
            used.add(path)
            specials.append((kind, p, path, h))
            count -= 1
    rng.shuffle(specials)
    untouched = [f for f in paths if f not in current and len(base_files[f]) > 12]
    up: dict[str, list[str]] = {}
    upstream = []
    for n in range(n_upstream):
        changed: dict[str, list[str]] = {}
        conflict_path = None
        msg = f"upstream: {rng.choice(VERBS)} {rng.choice(WORDS)} ({n + 1})"
        if specials and (rng.random() < len(specials) / max(1, n_upstream - n)):
            kind, p, path, h = specials.pop()
            lines = list(base_files[path])
            if kind == "offset":
                lines[2:2] = text.edit_lines(rng.randint(3, 20), 0)
            elif kind in ("threeway", "trap"):
                lines[h.start - 2] = f"    # upstream reworded {text.ident('line')}\n"
                if kind == "trap" and path not in dup_blocks:
                    # upstream copies the block further down (a copy-paste refactor)
                    block = base_files[path][h.start - 6 : h.start + h.remove + 6]
                    lines[len(lines) - 3 : len(lines) - 3] = ["\n", *block, "\n"]
            else:  # conflict: upstream rewrites a line that the patch also rewrites
                lines[h.start] = f"    upstream_{text.ident('conflict')} = True\n"
            changed[path] = lines
            msg += f" [{kind} vs {p.name}]"
            if kind == "conflict":
                conflict_path = path
        for _ in range(rng.randint(0 if changed else 1, 2)):
            path = rng.choice(untouched)
            lines = list(up.get(path, base_files[path]))
            at = rng.randint(1, len(lines) - 2)
            lines[at : at + rng.randint(0, 3)] = text.edit_lines(rng.randint(1, 8), 0)
            changed[path] = lines
        up.update(changed)
        upstream.append((msg, changed, conflict_path))
    plan = {"traps": [p.name for p in patches if p.trap], "upstream_edits": {}}
    for msg, _, _ in upstream:
        m = re.search(r"\[(\w+) vs (\S+)\]", msg)
        if m:
            plan["upstream_edits"].setdefault(m.group(1), []).append(m.group(2))
    for v in plan["upstream_edits"].values():
        v.sort()
    return Fixture(base_files, modes, patches, upstream, plan)


# --------------------------------------------------------------------------- writing


def _data(buf: list[bytes], payload: bytes) -> None:
    buf.append(b"data %d\n" % len(payload))
    buf.append(payload)
    buf.append(b"\n")


def _commit(buf, ref, mark, when, msg, parent, files, modes):
    buf.append(f"commit {ref}\nmark :{mark}\n".encode())
    buf.append(f"author {AUTHOR} {when} +0000\ncommitter {AUTHOR} {when} +0000\n".encode())
    _data(buf, msg.encode())
    if parent:
        buf.append(f"from {parent}\n".encode())
    for path, lines in files.items():
        buf.append(f"M {modes.get(path, '100644')} inline {path}\n".encode())
        _data(buf, "".join(lines).encode("utf-8", "surrogateescape"))


def write_fixture(
    workdir: str, fx: Fixture, sizes: list[int], base_ref: str | None, base_chunks: int = 20
) -> dict:
    repo = os.path.join(workdir, "repo.git")
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--done"], cwd=repo, stdin=subprocess.PIPE
    )
    mark = 0
    buf: list[bytes] = []

    def flush():
        proc.stdin.write(b"".join(buf))
        buf.clear()

    when = EPOCH
    if base_ref is not None:
        # After the real base, as a `git pull` brings them: commits dated before their parent
        # make every walk of a range (`git log A..B`, merge-base) read the whole history
        # (Megatron-LM's 9,632 commits: 65 ms a walk instead of 8 ms).
        stamp = run(["git", "log", "-1", "--format=%ct", base_ref], cwd=repo).decode().strip()
        when = max(when, int(stamp))
    if base_ref is None:  # generated upstream: a short history that adds the files
        paths = sorted(fx.base_files)
        step = math.ceil(len(paths) / base_chunks)
        parent = None
        for k in range(0, len(paths), step):
            mark += 1
            chunk = {p: fx.base_files[p] for p in paths[k : k + step]}
            _commit(
                buf,
                "refs/heads/base",
                mark,
                when,
                f"upstream: import part {k // step}\n",
                parent,
                chunk,
                fx.modes,
            )
            parent = f":{mark}"
            when += 60
            flush()
        base = parent
    else:
        base = base_ref
    parent = base
    chain_marks = []
    for p in fx.patches:
        mark += 1
        when += 60
        _commit(
            buf,
            "refs/heads/chain",
            mark,
            when,
            f"{p.subject}\n\n{p.body}\n",
            parent,
            p.files,
            fx.modes,
        )
        parent = f":{mark}"
        chain_marks.append(mark)
        if len(buf) > 2000:
            flush()
    # "moved": the upstream move; "moved-clean": the same commits without the edits that
    # make real conflicts (so that every tool must reach one exact tree).
    for ref, clean in (("moved", False), ("moved-clean", True)):
        parent = base
        for msg, files, conflict_path in fx.upstream:
            mark += 1
            when += 60
            if clean and conflict_path:
                files = {k: v for k, v in files.items() if k != conflict_path}
                msg = msg.split(" [")[0]
            _commit(buf, f"refs/heads/{ref}", mark, when, msg + "\n", parent, files, fx.modes)
            parent = f":{mark}"
            if len(buf) > 2000:
                flush()
    buf.append(b"done\n")
    flush()
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    base_sha = (
        run(["git", "rev-parse", "base"], cwd=repo).decode().strip()
        if base_ref is None
        else base_ref
    )
    chain = run(["git", "rev-list", "--reverse", f"{base_sha}..chain"], cwd=repo).decode().split()
    assert len(chain) == len(fx.patches), (len(chain), len(fx.patches))
    moved = run(["git", "rev-parse", "moved"], cwd=repo).decode().strip()
    moved_clean = run(["git", "rev-parse", "moved-clean"], cwd=repo).decode().strip()
    run(["git", "update-ref", "refs/heads/base", base_sha], cwd=repo)
    for n in sizes:
        run(["git", "update-ref", f"refs/heads/chain-{n}", chain[n - 1]], cwd=repo)

    # one batched format-patch over the chain, split into one file per commit
    mbox = run(
        [
            "git",
            "format-patch",
            "--stdout",
            "--zero-commit",
            "--full-index",
            "--no-signature",
            "--no-renames",
            "--binary",
            "--no-numbered",
            f"{base_sha}..chain",
        ],
        cwd=repo,
    )
    starts = [m.start() for m in FROM_LINE.finditer(mbox)] + [len(mbox)]
    texts = [mbox[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    assert len(texts) == len(fx.patches)
    allp = os.path.join(workdir, "patches-all")
    os.makedirs(allp, exist_ok=True)
    for p, t in zip(fx.patches, texts, strict=True):
        with open(os.path.join(allp, p.name), "wb") as f:
            f.write(t)
    for n in sizes:
        sdir = os.path.join(workdir, f"series-{n}")
        pdir = os.path.join(workdir, f"pile-{n}")
        for d in (sdir, pdir):
            os.makedirs(d, exist_ok=True)
        lines = [f"# base: {base_sha}\n"]
        lines += [f"{p.name} # {p.tag}\n" for p in fx.patches[:n]]
        with open(os.path.join(sdir, "series"), "w") as f:
            f.writelines(lines)
        with open(os.path.join(pdir, "series"), "w") as f:
            f.writelines(f"{p.name}\n" for p in fx.patches[:n])
        with open(os.path.join(pdir, "config"), "w") as f:
            f.write(f"BASELINE={base_sha}\n")
        for p in fx.patches[:n]:
            for d in (sdir, pdir):
                shutil.copyfile(os.path.join(allp, p.name), os.path.join(d, p.name))
    info = {
        "base": base_sha,
        "moved": moved,
        "moved_clean": moved_clean,
        "chain": chain,
        "sizes": sizes,
        "files": len(fx.base_files),
        "upstream_commits": len(fx.upstream),
        "patches": [{"name": p.name, "tag": p.tag} for p in fx.patches],
        "plan": fx.plan,
    }
    with open(os.path.join(workdir, "fixture.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


# --------------------------------------------------------------------------- entry points


def generated_base(rng: random.Random, text: Text, n_files: int):
    files: dict[str, list[str]] = {}
    dups: dict[str, tuple[int, int, int]] = {}
    for path in gen_paths(rng, n_files):
        n = int(min(1500, max(15, rng.lognormvariate(4.6, 0.8))))
        lines = text.module(n, path)
        if rng.random() < 0.03 and len(lines) > 60:
            # a duplicated block (copy-pasted code): same 16 lines at two places
            body: list[str] = []
            while len(body) < 14:  # long enough to hold a hunk and its context
                body += text.function("    ")
            block = body[:14] + ["        pass\n", "\n"]
            b1 = len(lines) // 4
            lines[b1:b1] = block
            b2 = len(lines) - 5
            lines[b2:b2] = block
            dups[path] = (b1, b2, len(block))
        files[path] = lines
    return files, {}, dups


def load_real(repo: str):
    """Text files of the clone's HEAD (binary and huge files are left alone)."""
    ls = run(["git", "ls-tree", "-r", "-z", "HEAD"], cwd=repo).split(b"\0")
    entries = []
    for e in ls:
        if not e:
            continue
        meta, path = e.split(b"\t", 1)
        mode, typ, sha = meta.split()
        if typ == b"blob" and mode in (b"100644", b"100755"):
            entries.append((path.decode("utf-8", "surrogateescape"), mode.decode(), sha))
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    files, modes = {}, {}
    import threading

    def feed():
        for _, _, sha in entries:
            proc.stdin.write(sha + b"\n")
        proc.stdin.close()

    t = threading.Thread(target=feed)
    t.start()
    for path, mode, _ in entries:
        header = proc.stdout.readline().split()
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        if size > 512_000 or b"\0" in data or "\n" in path or '"' in path:
            continue
        text = data.decode("utf-8", "surrogateescape")
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            continue  # keep clear of "\ No newline at end of file"
        if any(c in line for line in lines for c in ("\r",)):
            continue
        files[path] = lines
        modes[path] = mode
    t.join()
    proc.wait()
    return files, modes


def generate(
    workdir: str,
    *,
    n_files: int,
    sizes: list[int],
    n_upstream: int,
    seed: int,
    real_repo: str | None = None,
) -> dict:
    rng = random.Random(seed)
    text = Text(rng)
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    repo = os.path.join(workdir, "repo.git")
    if real_repo:
        run(["git", "clone", "-q", "--bare", real_repo, repo])
        base_ref = run(["git", "rev-parse", "HEAD"], cwd=repo).decode().strip()
        files, modes = load_real(repo)
        dups: dict[str, tuple[int, int, int]] = {}
    else:
        run(["git", "init", "-q", "--bare", repo])
        base_ref = None
        files, modes, dups = generated_base(rng, text, n_files)
    fx = build(rng, files, modes, max(sizes), n_upstream, dups, text)
    info = write_fixture(workdir, fx, sizes, base_ref)
    info["tracked_text_files"] = len(files)
    info["real_repo"] = real_repo
    info["duplicate_block_files"] = len(dups)
    return info
