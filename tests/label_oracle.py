"""The label oracle's git and its definitions (`labels` says what each label must be):
merge-ort picks through ``git merge-tree --write-tree`` (the patch's parent the merge base, as
``git cherry-pick``), the chain of picks that ``git rebase`` makes, and `Oracle`, which judges
one label against git and collects the wrong ones."""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from dataclasses import dataclass, field

from .conftest import Repo

# -- the oracle: git's merge-ort, one patch at a time ---------------------------------------


def resolve_markers(text: str, upstream_holds: bool = False) -> str | None:
    """A conflicted file resolved as the patch has it, hunk by hunk (the side after
    ``=======``); None when it has no markers. ``upstream_holds`` (diff3 markers): a hunk
    whose upstream side already holds the patch's change is resolved as upstream has it, as
    the stop proposes (`holds_patch`)."""
    out: list[str] = []
    sides: dict[str, list[str]] = {"ours": [], "base": [], "theirs": []}
    state = ""
    seen = False
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<< ") and state == "":
            state, seen = "ours", True
            sides = {"ours": [], "base": [], "theirs": []}
        elif line.startswith("||||||| ") and state == "ours":
            state = "base"
        elif line.rstrip("\n") == "=======" and state in ("ours", "base"):
            state = "theirs"
        elif line.startswith(">>>>>>> ") and state == "theirs":
            state = ""
            held = upstream_holds and holds_patch(sides["ours"], sides["base"], sides["theirs"])
            out.extend(sides["ours"] if held else sides["theirs"])
        elif state:
            sides[state].append(line)
        else:
            out.append(line)
    return "".join(out) if seen and state == "" else None


def holds_patch(ours: list[str], base: list[str], theirs: list[str]) -> bool:
    """The definition of "upstream's side already holds the patch's change" for one conflict
    hunk (DESIGN: a proposal, shown resolved at a stop): the patch's side (``theirs``) has a
    line that is not blank, upstream's side (``ours``) changed the base, and upstream's side is
    the patch's side with lines inserted only, none of them a line the patch took out of the
    base (no more copies of it than the patch's side keeps)."""
    if not any(line.strip() for line in theirs) or ours == base:
        return False
    rest = iter(ours)
    if not all(line in rest for line in theirs):  # in order: each found after the one before
        return False
    inserted = {line for line in ours if ours.count(line) > theirs.count(line)}
    return all(base.count(line) <= theirs.count(line) for line in inserted)


class Git:
    """The oracle's git: picks by ``merge-tree --write-tree`` (merge-ort, as ``git
    cherry-pick``: the patch's parent the merge base), on objects of the fork's repository."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.index = repo.path / ".git" / "oracle-index"
        self.memo: dict[tuple[str, str, bool], tuple[str, str | None, list[str]]] = {}

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

    def pick(self, onto: str, patch: str, diff3: bool = False) -> tuple[str, str | None, list[str]]:
        """``patch`` (a commit) cherry-picked onto ``onto``: ("clean", tree), ("empty",
        tree) or ("conflict", tree with markers, the conflicted paths). ``diff3``: the
        markers patchstack's merges write, whose regions are its report's hunks (git's
        default markers join two regions a changed line apart into one: label seed 5170)."""
        key = (onto, patch, diff3)
        if key not in self.memo:
            ours = self.commit(self.tree(onto), patch + "^")
            style = ["-c", "merge.conflictStyle=diff3"] if diff3 else []
            proc = subprocess.run(
                ["git", *style, "merge-tree", "--write-tree", "--name-only", "-z", ours, patch],
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

    def revert(self, onto: str, patch: str) -> tuple[str, str | None]:
        """``git revert`` of ``patch`` (a commit) onto ``onto``, as merge-ort does it (the
        patch the merge base, its parent theirs): ("clean", commit) or ("conflict", None)."""
        ours = self.commit(self.tree(onto), patch)
        theirs = self.commit(self.tree(patch + "^"), patch)
        proc = subprocess.run(
            ["git", "merge-tree", "--write-tree", "-z", ours, theirs],
            cwd=self.repo.path,
            capture_output=True,
        )
        if proc.returncode not in (0, 1):
            raise AssertionError(proc.stderr)
        if proc.returncode == 1:
            return "conflict", None
        return "clean", self.commit(proc.stdout.decode().split("\0")[0], onto)

    def commutes(self, stack: list[tuple[str, str]], name: str, left: list[str]) -> bool | None:
        """Does ``name`` (of ``stack``: (name, commit) in order, each commit's parent the one
        before) commute with the left-out patches ``left`` before it? On the old stack: the
        left-out ones reverted, ``name`` cherry-picked, they picked again; True when that gives
        ``name``'s own tree (`tests/differential.held_oracle`), None when git meets a conflict
        on the way (it cannot judge)."""
        commits = dict(stack)
        head = commits[name] + "^"
        for m in reversed(left):
            verdict, head_or_none = self.revert(head, commits[m])
            if head_or_none is None:
                return None
            head = head_or_none
        for m in [name, *left]:
            verdict, tree, _paths = self.pick(head, commits[m])
            if verdict == "conflict":
                return None
            head = self.commit(tree, head)
        return self.tree(head) == self.tree(commits[name])

    def resolved(self, onto: str, patch: str, proposal: bool = False) -> str | None:
        """The commit of ``patch`` picked onto ``onto`` with its conflicts taken as the patch
        has them, hunk by hunk; None when a conflict has no markers (a file's existence).
        ``proposal``: a hunk whose upstream side holds the patch's change taken as upstream
        has it, as a stop shows it (`holds_patch`): a patch brought back with ``push``; a
        knock-on's or a primary's proof takes the patch's side, as the definition says
        (`engine.triage`; label seed 9100009)."""
        verdict, tree, paths = self.pick(onto, patch, diff3=True)
        if verdict != "conflict":
            return self.commit(tree, onto) if verdict == "clean" else onto
        env = {"GIT_INDEX_FILE": str(self.index)}
        self.run("read-tree", tree, env=env)
        for path in paths:
            listing = self.run("ls-tree", tree, "--", path).split()
            if not listing or listing[1] != "blob":
                return None
            text = self.run("cat-file", "blob", listing[2])
            fixed = resolve_markers(text, upstream_holds=proposal)
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
        self,
        onto: str,
        patches: list[tuple[str, str]],
        resolve: frozenset[str] = frozenset(),
        proposal: bool = False,
    ) -> Chain:
        """``git rebase`` of ``patches`` ((name, commit), in order) onto ``onto``, each conflict
        skipped (or resolved as the patch has it, for the names of ``resolve``; ``proposal``:
        with the stop's proposal, `resolved`), each patch that becomes empty dropped."""
        head = onto
        out = Chain(onto)
        for name, commit in patches:
            out.at[name] = head
            verdict, tree, _paths = self.pick(head, commit)
            if verdict == "conflict" and name in resolve:
                fixed = self.resolved(head, commit, proposal)
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
        return self.changed_lines(commit, "+")

    def removed_lines(self, commit: str) -> list[str]:
        return self.changed_lines(commit, "-")

    def changed_lines(self, commit: str, sign: str) -> list[str]:
        diff = self.run("show", "--format=", "-M", "--no-color", commit)
        return [ln[1:] for ln in diff.splitlines() if ln[:1] == sign and ln[:3] != sign * 3]

    def all_lines(self, commit: str) -> set[str]:
        out: set[str] = set()
        for path in self.run("ls-tree", "-r", "--name-only", commit).splitlines():
            out |= set(self.run("show", f"{commit}:{path}").splitlines())
        return out


def untaken(chain: Chain, roots: set[str]) -> list[str]:
    """Those of ``roots`` that ``chain`` left out: each conflicts, and its conflict could
    not be taken as it has it (no markers)."""
    return [n for n in chain.conflicts if n in roots and n not in chain.resolved]


@dataclass
class Chain:
    onto: str
    head: str = ""
    at: dict[str, str] = field(default_factory=dict)  # where each patch was placed
    conflicts: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)


Region = tuple[int, list[str], list[str], list[str]]


def regions(merged: str) -> tuple[list[Region], list[str]]:
    """The conflict regions of ``merged`` (git's merged file, diff3 markers): where each
    starts among the lines of the file's first sides, and its three sides (ours, base,
    theirs); and those lines."""
    ours: list[str] = []
    found: list[Region] = []
    state = ""
    sides: dict[str, list[str]] = {}
    for line in merged.split("\n"):
        if line.startswith("<<<<<<<") and state == "":
            state, sides = "ours", {"ours": [], "base": [], "theirs": []}
            found.append((len(ours), sides["ours"], sides["base"], sides["theirs"]))
        elif line.startswith("|||||||") and state == "ours":
            state = "base"
        elif line == "=======" and state in ("ours", "base"):
            state = "theirs"
        elif line.startswith(">>>>>>>") and state == "theirs":
            state = ""
        else:
            if state:
                sides[state].append(line)
            if state in ("", "ours"):
                ours.append(line)
    return found, ours


def base_line(merged: str, j: int, base: list[str], hunk: dict | None = None) -> int:
    """Where the ``j``-th conflict region of ``merged`` (git's merged file) starts in
    ``base`` (the file it was merged onto; 1-based), aligning the merged file's first sides
    with it; 0 when it cannot tell. With ``hunk`` (a report's), the region is the one whose
    sides are the hunk's: a held patch's report is its conflict with its root applied, where
    git's merge without the root has one region more before it (label seed 6531759)."""
    found, ours = regions(merged)
    if hunk is not None:
        sides = (hunk["now"], hunk["expected"], hunk["wanted"])
        same = [i for i, (_s, *r) in enumerate(found) if tuple(r) == sides]
        j = same[0] if len(same) == 1 else j
    if not 0 <= j < len(found):
        return 0
    start = found[j][0]
    blocks = difflib.SequenceMatcher(None, ours, base, autojunk=False).get_matching_blocks()
    for a, b, n in blocks:
        if a <= start < a + n or (n and a == start):
            return b + (start - a) + 1
    before = [(a, b, n) for a, b, n in blocks if n and a + n <= start]
    return before[-1][1] + before[-1][2] + 1 if before else 0


# -- the checks -------------------------------------------------------------------------------


def tag(item: str) -> str:
    """A known bug: an item of issue 33 (a number), or one this oracle found (a word)."""
    return f"issue 33 item {item}" if item.isdigit() else f"new: {item}"


class Oracle:
    """Judges the labels of one case; ``findings`` collects every wrong one."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.git = Git(repo)
        self.findings: list[str] = []
        self.judged: dict[str, int] = {}  # how many labels of each kind were checked
        self.tainted = ""  # the item of a push NAME that went wrong, when one did
        self.brought: set[str] = set()  # deferred patches brought back, resolved as they have it

    def saw(self, kind: str) -> None:
        self.judged[kind] = self.judged.get(kind, 0) + 1

    def cannot(self, kind: str, why: str) -> None:
        """A label of ``kind`` the oracle cannot judge (unknown, never wrong): kept by
        `tools/trial/check_labels.py`'s oracle, which counts them."""

    def fail(self, where: str, text: str, item: str = "") -> None:
        """A wrong label; ``item``: the known bug it is an instance of (`tag`). After
        ``push NAME`` went wrong (a known item), what follows is that item's doing too."""
        if item and where.startswith("push "):
            self.tainted = self.tainted or item
        elif self.tainted and not item.isdigit():
            item, text = self.tainted, text + " (after push NAME went wrong)"
        self.findings.append(f"{where}: {text}" + (f" [{tag(item)}]" if item else ""))

    # the definitions

    def holds(self, tree_commit: str, patch: str) -> bool:
        return self.git.pick(tree_commit, patch)[0] == "empty"

    def upstream_evidence(self, where: str, name: str, patch: str, ev: str, old: str, new: str):
        """``ev`` (an id or its prefix) brought ``patch``'s change (`not_brought`)."""
        self.saw("evidence")
        full = self.git.run("rev-parse", "--verify", "-q", ev + "^{commit}", check=False).strip()
        why = self.not_brought(patch, full, old, new)
        if why:
            self.fail(where, f"{name}: upstream in {ev[:12]}, but git: {why}", item="6")

    def not_brought(self, patch: str, full: str, old: str, new: str) -> str:
        """Why the upstream commit ``full`` did not bring ``patch``'s change ("": it did): it
        must be in old..new, the patch change something on its parent and nothing on it, it
        must add every line the patch adds that its parent lacked, and every line the patch
        removes that it lacks must have been upstream's (in the old base or a version since,
        up to its parent): a line no upstream version had was made by a fork patch, and the
        base lacks it because that patch is missing, not because upstream removed it."""
        git = self.git
        if full not in git.run("rev-list", f"{old}..{new}").split():
            return "it is not an upstream commit of the range"
        if not self.holds(full, patch):
            return f"the patch still changes something there ({git.pick(full, patch)[0]})"
        if self.holds(full + "^", patch):
            return "its parent already holds the change (that commit did not bring it)"
        had = git.all_lines(full + "^")
        brought = set(git.added_lines(full))
        missing = [ln for ln in git.added_lines(patch) if ln not in had and ln not in brought]
        if missing:
            return f"git show lacks {missing[:2]}"
        lacks = set(git.removed_lines(patch)) - git.all_lines(full)
        for version in [old, *git.run("rev-list", f"{old}..{full}^").split()]:
            lacks -= git.all_lines(version)
        if lacks:
            return f"no upstream version had {sorted(lacks)[:2]}, which the patch removes"
        return ""

    def brought_by(self, patch: str, old: str, new: str) -> str:
        """The first-parent commit of old..new that brought ``patch``'s change (`not_brought`),
        newest first; "" when none did."""
        for commit in self.git.run("rev-list", "--first-parent", f"{old}..{new}").split():
            if not self.not_brought(patch, commit, old, new):
                return commit
        return ""

    def patch_file_commit(self, where: str, name: str, commit: str) -> None:
        """The patch file's change is ``commit``'s (its parent to it)."""
        self.saw("deferred")
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

    def culprits(
        self, where: str, report: dict, old: str, new: str, merged: dict[str, str] | None = None
    ) -> None:
        """Each upstream commit named for a primary hunk changed those lines (``merged``:
        git's merged file of each path, where the oracle made the same merge, to find where
        a hunk's lines stand in the new base)."""
        git = self.git
        seen: dict[str, int] = {}
        for hunk in report["hunks"]:
            path, now, expected = hunk["path"], hunk["now"], hunk["expected"]
            j = seen[path] = seen.get(path, -1) + 1
            named = [c["commit"] for c in hunk["upstream_commits"] if c["commit"]]
            if not named:
                continue
            ok: set[str] = set()
            near = hunk["line"]
            if merged and path in merged:
                base = git.run("show", f"{new}:{path}", check=False).split("\n")
                near = base_line(merged[path], j, base, hunk) or near
            ours = now
            at = self.place(new, path, ours, near)
            if not at:
                # upstream's side holds lines of earlier patches applied on the new base (seed
                # 7038: p1's ``p1_debug`` below up2's blank line), which the new base lacks:
                # its lines there are the rest, and -L over them names up2
                there = set(git.run("show", f"{new}:{path}", check=False).split("\n"))
                ours = [ln for ln in now if ln in there]
                at = self.place(new, path, ours, near)
            if at:
                span = f"{at},+{len(ours)}:{path}"
                out = git.run("log", "--format=%H", "-s", "-L", span, f"{old}..{new}", check=False)
                ok |= {ln for ln in out.splitlines() if len(ln) >= 40}
            for line in set(now) ^ set(expected):
                if line.strip() and line.strip() not in "{}":
                    out = git.run("log", "--format=%H", "-S" + line, f"{old}..{new}")
                    ok |= set(out.split())
            for c in named:
                self.saw("culprit")
                full = git.run("rev-parse", "--verify", "-q", c + "^{commit}", check=False).strip()
                if full in ok or self.created(full, path, now):
                    continue
                if not self.touches(full, path, expected, hunk["line"]):
                    self.fail(
                        where,
                        f"{report['patch']}: culprit {c[:12]} of {path}:"
                        f"{hunk['line']}, but git log -L/-S over those lines does not "
                        "name it",
                        item="6",
                    )

    def created(self, commit: str, path: str, now: list[str]) -> bool:
        """``commit`` made ``path`` (a new file, or one moved or copied there): the trace of a
        hunk's lines ends there by definition (docs/architecture.md), while ``log -L`` follows
        a move past it and ``-S`` and `touches` cannot judge a path its parent lacks. Only for
        upstream's lines: a hunk whose upstream side is empty has none it brought."""

        def has(rev: str) -> bool:
            return bool(self.git.run("rev-parse", "--verify", "-q", rev, check=False).strip())

        return bool(now) and has(f"{commit}:{path}") and not has(f"{commit}^:{path}")

    def touches(self, commit: str, path: str, expected: list[str], near: int) -> bool:
        """``commit`` changes ``path`` inside the span the hunk's base lines (``expected``)
        have in its parent: its diff (`changed`) removes some of them or inserts between them
        (a move within the file, a block wrapped around them, which ``-S`` does not see and
        ``-L`` over lines now gone cannot follow)."""
        text = self.git.run("show", f"{commit}^:{path}", check=False).split("\n")
        start = self.place(f"{commit}^", path, expected, near)
        if start:
            first, last = start, start + len(expected) - 1
        else:  # earlier upstream commits changed the span: its first and last own lines
            there = set(text)
            own = [ln for ln in expected if ln.strip() and ln.strip() not in "{}" and ln in there]
            if not own:
                return False
            at = [i + 1 for i, ln in enumerate(text) if ln == own[0]]
            end = [i + 1 for i, ln in enumerate(text) if ln == own[-1]]
            # pinned by the own lines the file holds once: a repeated last line (``return
            # x;`` of a function an earlier patch added after them, absent here) ended the
            # span at its nearest copy, short of the hunk's other lines, so a commit that
            # moved those away was not seen to change them (label seed 1098)
            pins = [text.index(ln) + 1 for ln in own if text.count(ln) == 1]
            if pins:
                lo, hi = min(pins), max(pins)
                first = max([i for i in at if i <= lo], default=lo)
                last = min([i for i in end if i >= hi], default=hi)
            else:
                if not at or not end:
                    return False
                first = min(at, key=lambda i: abs(i - near))
                after = [i for i in end if i >= first]
                if not after:
                    return False
                last = min(after)
            # and the base lines beside them that stand there as the hunk has them (a ``}``
            # above its last own line that a revert took out: label seed 5031)
            if text[first - 1] == own[0]:
                k = expected.index(own[0])
                while k > 0 and first > 1 and text[first - 2] == expected[k - 1]:
                    first, k = first - 1, k - 1
            if text[last - 1] == own[-1]:
                k = len(expected) - 1 - expected[::-1].index(own[-1])
                while k + 1 < len(expected) and last < len(text) and text[last] == expected[k + 1]:
                    last, k = last + 1, k + 1
        for a, n in self.changed(commit, path):
            if (n == 0 and first <= a < last) or (n and a <= last and a + n - 1 >= first):
                return True
        return False

    def changed(self, commit: str, path: str) -> list[tuple[int, int]]:
        """The lines of its parent's ``path`` that ``commit``'s diff changes, as (start, count)
        of each ``-U0`` hunk's old side (count 0: an insertion after line start): the diff of
        the whole commit with renames detected, as ``git log -L`` follows them, so a rename
        alone changes no line and a rename with edits changes those lines only; a file the
        commit deletes, every line."""
        diff = self.git.run(
            "-c",
            "core.quotePath=false",
            "diff",
            "-U0",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            f"{commit}^",
            commit,
        )
        spans: list[tuple[int, int]] = []
        old: str | None = None
        for line in diff.split("\n"):
            if line.startswith("diff --git "):
                old = None
            elif line.startswith("--- "):
                name = line[4:].rstrip("\t")
                old = name[2:] if name.startswith("a/") else None
            elif line.startswith("@@ -") and old == path:
                m = re.match(r"@@ -(\d+)(?:,(\d+))? ", line)
                if m:
                    spans.append((int(m.group(1)), int(m.group(2) or "1")))
        return spans

    def place(self, rev: str, path: str, lines: list[str], near: int) -> int:
        """Where ``lines`` stand in ``rev``'s ``path`` (1-based; the match nearest ``near``, a
        line of the merged file); 0 when they are not there."""
        if not lines:
            return 0
        text = self.git.run("show", f"{rev}:{path}", check=False).split("\n")
        n = len(lines)
        hits = [i + 1 for i in range(len(text) - n + 1) if text[i : i + n] == lines]
        return min(hits, key=lambda i: abs(i - near)) if hits else 0

    def superseded(self, where: str, report: dict) -> None:
        sup = report.get("superseded_by")
        if not sup or not sup["commit"]:
            return
        self.saw("superseded")
        full = self.git.rev(sup["commit"])
        brought = {ln.strip() for ln in self.git.added_lines(full)}

        def holds(rev: str, path: str, lines: list[str]) -> bool:
            text = self.git.run("show", f"{rev}:{path}", check=False)
            return {ln.strip() for ln in lines} <= {ln.strip() for ln in text.splitlines()}

        wants = [
            (h["path"], [ln for ln in h["wanted"] if ln not in h["expected"] and ln.strip()])
            for h in report["hunks"]
        ]
        if all(holds(full, p, adds) for p, adds in wants) and not all(
            holds(full + "^", p, adds) for p, adds in wants
        ):
            return  # it completes them, upstream taking the patch in parts
        for _path, adds in wants:
            lacking = [ln for ln in adds if ln.strip() not in brought]
            if lacking:
                self.fail(
                    where,
                    f"{report['patch']}: superseded by {sup['commit'][:12]}, but "
                    f"git show lacks {lacking[:2]}",
                    item="6",
                )
                return

    def held(self, where: str, stack: list[tuple[str, str]], held: set[str], out: set[str]):
        """Each patch held with a left-out one (``held``; ``out``: those left out for their
        own conflict) does not commute with the left-out patches before it, on the old stack
        (`Git.commutes`): it would be its own change without them, and holding it is wrong."""
        order = [n for n, _c in stack]
        for name in order:
            if name not in held:
                continue
            self.saw("held")
            before = order[: order.index(name)]
            left = [n for n in before if n in out or n in held]
            if not left:
                self.fail(where, f"{name}: held, but no patch before it is left out")
            elif self.git.commutes(stack, name, left):
                self.fail(where, f"{name}: held, but git: it commutes with {left} on the old base")

    def knock_on(
        self, where: str, name: str, root: str, onto: str, patches: list, waits: set[str]
    ) -> None:
        """``name`` applies once ``root`` is applied (its conflict taken as it has it), with
        the roots it waits for in turn (``waits``: a knock-on root comes back with its own).
        Unknown when git's pick of one of them conflicts where there are no lines to take (a
        file's existence: `resolved`): the chain would leave it out, and ``name`` conflict
        for want of it, not of ``root`` as defined (a knock-on of a knock-on of a patch with
        a modify/delete: kernel-timers' feat-new-flags.patch)."""
        self.saw("knock-on")
        order = [n for n, _c in patches]
        if root not in order or name not in order:
            self.fail(where, f"{name}: knock-on of {root}, which is not before it in the series")
            return
        if order.index(root) > order.index(name):
            self.fail(where, f"{name}: knock-on of {root}, which comes after it")
            return
        chain = self.git.chain(onto, patches[: order.index(name) + 1], frozenset(waits))
        if untaken(chain, {root, *waits}):
            return  # a conflict not in lines: the oracle cannot place it (unknown)
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
            self.saw(verdict)
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
