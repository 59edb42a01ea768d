#!/usr/bin/env python3
"""The human work of a real drift (issue 36, item 5): the conflict hunks a person must
resolve with ``git rebase`` alone, with ``git rebase`` + rerere, and with patchstack, and
every automatic result checked against the engineers' own merges.

    python tools/bench/human_work.py REPO BRANCH EARLIER LATER [--upstream main] [--steps]
    python tools/bench/human_work.py ~/sglang origin/dflash_v2 32c3dd0c2 9c0242d0a \
        --upstream origin/main --markdown out.md --json out.json

EARLIER and LATER are two merges on BRANCH's first-parent history that merged the upstream
into it (their second parents, E and T, are upstream commits; E is about a month of upstream
before T). List candidates with ``git log --first-parent --merges BRANCH`` and keep those
whose second parent is in the upstream's history and whose merge had conflicts.

The protocol, the same inputs for every tool:

- **The series** is BRANCH as it was just before EARLIER (its first parent P), onboarded as a
  patchstack user onboards it (``import branch P --upstream UPSTREAM --take-merge``, ``push
  --all``): the patches on B0, the merge base of P with the upstream. ``git rebase`` replays the
  same commits (the applied stack), so both tools start from the same patches.
- **Ground truth** is what the engineers committed: EARLIER's tree is the series carried onto
  E, LATER's tree the series carried onto T. It is exact for a file the patch in hand is the
  last to change (the file at the series' tip); for a patch that a later one changes again,
  the truth at that patch is the merge's file with the later patches' change of it taken back
  out (``git merge-file`` of the merge's file, the tip's and the patch's, base the tip's);
  when that does not merge cleanly, the truth at that stop is unknown. LATER's tree is no
  truth for a file the branch itself changed between EARLIER and LATER (a first-parent commit
  that is not a merge of the upstream): results in such files are "unverified".
- **The person** (an oracle) resolves every stop with that truth, the same for every tool (a
  file missing from it: deleted), and goes on. Within a step of ``refresh --steps`` the truth
  is also taken back to that step's upstream commit (the upstream's change of the file from
  there to T taken out the same way); when that does not merge cleanly it is unknown there.
- **The earlier drift records the resolutions**: the series carried onto E, every stop resolved
  by the person with EARLIER's truth, once by ``git rebase`` with ``rerere.enabled`` (rerere
  records at ``--continue``) and once by ``patchstack refresh --onto E`` with ``--continue``
  (patchstack records a resolution per conflict hunk, or of the whole file). So rerere and
  patchstack are handed the same resolutions, of the same conflicts, one month of upstream
  before the drift measured.
- **The drift measured** is the same series carried onto T:
  (a) ``git rebase`` alone: every conflict hunk at every stop is asked (a hunk is a diff3
  conflict region of ``git merge-file`` of the three index stages; a modify/delete or other
  conflict without both sides counts 1);
  (b) ``git rebase`` with the earlier rerere cache: a file rerere resolved is automatic (its
  hunks reused), the others asked;
  (c) ``patchstack refresh --onto T`` with the earlier records (and ``--steps`` with
  ``--steps``): hunks left with markers at a stop are asked, a conflicted file with no
  marker (modify/delete, a file's location) 1, as git's; a relocated file its markers, or 1
  when a hunk was carried nowhere (a modify/delete, as git counts it, not one per hunk); hunks
  records settled at a stop are automatic, each judged alone by its neighbouring lines in the
  truth (`hunk_verdict`); a patch settled by recorded resolutions is automatic
  (``reused_hunks``, or its merge's hunks for a whole-file record); a relocation's carried
  hunks are proposals the person confirms (not counted as asked, but checked).
  Every automatic result is compared with the truth at that patch: "agree", "refuted" or
  "unverified" (no truth). A resolver (``--resolver CMD``) is passed to the refresh when given.

For study: ``--dump DIR`` writes each file with markers at each stop of the refreshes measured
(``DIR/ps-N/NNN-patch/path``, with ``path.truth`` beside it where the truth is known);
``--skip-rebase`` measures patchstack only, ``--skip-oneshot`` (with ``--steps``) only the
stepped refresh. A hunk a built-in rule resolved at a stop (``reuse.proposed_at_stop``, named
in the stop's note) is automatic, judged as a record's hunk is.

Python 3.10+, stdlib only; patchstack runs from this checkout (``sys.executable -m
patchstack``). It is not part of the test suite (``tests/test_human_work.py`` runs its
counting on a generated drift with a known answer).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKERS = (b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>")
WHOLE_FILE = " (whole file)"  # ... of a file a record of its exact versions settled


def count_hunks(data: bytes) -> int:
    """The conflict regions of a merged file (lines that open one, as git writes them)."""
    n = 0
    for line in data.splitlines():
        if line == MARKERS[0] or line.startswith(MARKERS[0] + b" "):
            n += 1
    return n


@dataclass
class Check:
    """One automatic result (a file a tool resolved without the person), against the truth."""

    tool: str
    patch: str
    path: str
    hunks: int
    verdict: str  # agree, refuted, unverified
    how: str = ""  # rerere, hunk records, whole-file record, relocation, resolver
    diff: str = ""  # refuted: the engineers' file against the tool's


@dataclass
class Tally:
    tool: str
    stops: int = 0
    asked: int = 0  # conflict hunks the person resolved
    automatic: int = 0  # conflict hunks a tool resolved (recorded resolutions, resolver)
    proposed: int = 0  # relocated hunks the person confirms
    asked_files: int = 0
    checks: list[Check] = field(default_factory=list)
    error: str = ""
    per_stop: list[tuple[str, int, int]] = field(default_factory=list)  # patch, asked, auto
    recorded_at_stops: int = 0  # patchstack: hunks asked at a stop that a record matches
    sides_at_stops: int = 0  # ... that a record of its two sides over another base matches

    def verdicts(self) -> dict[str, int]:
        out = {"agree": 0, "refuted": 0, "unverified": 0}
        for c in self.checks:
            out[c.verdict] += c.hunks
        return out


class Box:
    """A scratch clone (``--shared``: REPO's objects, any revision of it) with its own config."""

    def __init__(self, where: Path, repo: str | None = None, copy_of: Path | None = None):
        self.dir = where / "clone"
        self.cfg = where / "gitconfig"
        where.mkdir(parents=True, exist_ok=True)
        if copy_of is not None:
            shutil.copytree(copy_of, self.dir, symlinks=True)
        self.cfg.write_text(
            "[user]\n\tname = Human Work\n\temail = human@example.invalid\n"
            "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n[merge]\n\tconflictStyle = diff3\n"
            "[advice]\n\tdetachedHead = false\n[rerere]\n\tenabled = false\n\tautoUpdate = false\n"
        )
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PATCHSTACK_"))
        }
        self.env.update(
            {
                "GIT_CONFIG_GLOBAL": str(self.cfg),
                "GIT_CONFIG_NOSYSTEM": "1",
                "LC_ALL": "C",
                "GIT_EDITOR": "true",
                "PAGER": "cat",
                "NO_COLOR": "1",
                "PYTHONPATH": os.pathsep.join(
                    p for p in (PROJECT, os.environ.get("PYTHONPATH")) if p
                ),
            }
        )
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        if repo is not None:
            self.run(
                "git", "clone", "-q", "--shared", "--no-checkout", repo, str(self.dir), at=where
            )

    def run(
        self, *argv: str, check: bool = True, at: Path | None = None, data: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        p = subprocess.run(
            list(argv), cwd=at or self.dir, env=self.env, capture_output=True, input=data
        )
        if check and p.returncode != 0:
            why = p.stderr.decode(errors="replace")[-1500:]
            raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): {why}")
        return p

    def git(self, *args: str, check: bool = True) -> str:
        return self.run("git", *args, check=check).stdout.decode().strip()

    def ps(self, *args: str) -> tuple[int, str, str]:
        p = self.run(sys.executable, "-m", "patchstack", *args, check=False)
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        if p.returncode not in (0, 1):
            raise RuntimeError(f"patchstack {' '.join(args)} failed ({p.returncode}): {err}")
        return p.returncode, out, err

    def blob(self, rev: str, path: str) -> bytes | None:
        p = self.run("git", "cat-file", "blob", f"{rev}:{path}", check=False)
        return p.stdout if p.returncode == 0 else None

    def merge_file(self, ours: bytes, base: bytes, theirs: bytes, *flags: str) -> bytes:
        tmp = Path(tempfile.mkdtemp(prefix="hw-mf-"))
        try:
            for name, data in (("o", ours), ("b", base), ("t", theirs)):
                (tmp / name).write_bytes(data)
            argv = ["git", "merge-file", "-p", *flags, "o", "b", "t"]
            return self.run(*argv, check=False, at=tmp).stdout
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def write(self, path: str, data: bytes | None) -> None:
        full = self.dir / path
        if data is None:
            if full.exists() or full.is_symlink():
                full.unlink()
            return
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data)

    def read(self, path: str) -> bytes | None:
        full = self.dir / path
        return full.read_bytes() if full.is_file() else None


@dataclass(frozen=True)
class Series:
    base: str
    names: tuple[str, ...]
    commits: tuple[str, ...]  # the applied commit of each patch, in order


def patch_side(data: bytes) -> bytes:
    """A merged file with each diff3 conflict hunk replaced by its last side (the patch's,
    in git's rebase and in patchstack's stops alike)."""
    out: list[bytes] = []
    state = 0  # 0 text, 1 ours, 2 base, 3 theirs
    for line in data.splitlines(keepends=True):
        bare = line.rstrip(b"\r\n")
        if bare == MARKERS[0] or bare.startswith(MARKERS[0] + b" "):
            state = 1
        elif state == 1 and (bare == MARKERS[1] or bare.startswith(MARKERS[1] + b" ")):
            state = 2
        elif state in (1, 2) and bare == MARKERS[2]:
            state = 3
        elif state == 3 and (bare == MARKERS[3] or bare.startswith(MARKERS[3] + b" ")):
            state = 0
        elif state in (0, 3):
            out.append(line)
    return b"".join(out)


class Truth:
    """What the engineers committed: the merge's file, taken back to the patch in hand. With
    no merge (``--synthetic``), a person who takes the patch's side of every hunk, known to
    no one."""

    def __init__(
        self,
        box: Box,
        series: Series,
        merge: str | None,
        unknown: frozenset[str],
        upstream: str | None = None,
    ):
        self.box, self.series, self.merge, self.unknown = box, series, merge, unknown
        self.upstream = upstream  # the upstream commit the merge brought

    def at(self, k: int, path: str, step: str | None = None) -> tuple[bytes | None, bool]:
        """(the file after patch k, whether that is known): None is deleted. With ``step``
        (an upstream commit before the merge's, where a stepped refresh stands), the
        upstream's change of the file from there to the merge's taken back out too."""
        out, known = self._at(k, path)
        if self.merge is None or step in (None, self.upstream) or out is None:
            return out, known
        final, there = self.box.blob(self.upstream, path), self.box.blob(step, path)
        if final == there:
            return out, known
        if final is None or there is None:
            return out, False
        back = self.box.merge_file(out, final, there)
        if count_hunks(back):
            return self.box.merge_file(out, final, there, "--ours"), False
        return back, known

    def _at(self, k: int, path: str) -> tuple[bytes | None, bool]:
        if self.merge is None:
            now = self.box.read(path)
            return (patch_side(now) if now is not None else None), False
        final = self.box.blob(self.merge, path)
        tip = self.box.blob(self.series.commits[-1], path)
        mine = self.box.blob(self.series.commits[k], path)
        if tip == mine:
            return final, path not in self.unknown
        if final is None or tip is None or mine is None:
            return (final if mine is not None else None), False
        out = self.box.merge_file(final, tip, mine)
        if count_hunks(out):
            return self.box.merge_file(final, tip, mine, "--ours"), False
        return out, path not in self.unknown


def _verdict(result: bytes | None, truth: bytes | None, known: bool) -> str:
    return "unverified" if not known else ("agree" if result == truth else "refuted")


def _differs(result: bytes | None, truth: bytes | None, most: int = 60) -> str:
    """The engineers' file against the tool's (a unified diff, cut), for a refuted result: the
    difference may lie in the reused hunk or elsewhere in the file."""
    a = (truth or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (result or b"").decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, "engineers", "tool", n=1))
    return "".join(lines[:most])


def branch_changed(box: Box, earlier: str, later: str, upstream: str) -> frozenset[str]:
    """Files a first-parent commit of EARLIER..LATER^1 changed that is not a merge of the
    upstream: LATER's file is no truth for the series there."""
    paths: set[str] = set()
    revs = box.git("rev-list", "--first-parent", "--parents", f"{earlier}..{later}^1")
    for line in revs.splitlines():
        commit, *parents = line.split()
        if len(parents) > 1:
            up = box.run("git", "merge-base", "--is-ancestor", parents[1], upstream, check=False)
            if up.returncode == 0:
                continue
        first = parents[0] if parents else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        names = box.git("diff-tree", "-r", "--name-only", "--no-renames", first, commit)
        paths.update(p for p in names.splitlines() if p)
    return frozenset(paths)


def prepare(box: Box, tip: str, upstream: str) -> Series:
    """The series: TIP onboarded (``import branch --take-merge``) and pushed."""
    box.git("checkout", "-q", "-B", "work", tip)
    code, out, err = box.ps(
        "import", "branch", tip, "--upstream", upstream, "--take-merge", "--tag", "essential"
    )
    if code:
        raise RuntimeError(f"import branch stopped: {out}{err}")
    box.ps("push", "--all")
    doc = json.loads(box.ps("series", "--json")[1])
    names = tuple(p["name"] for p in doc["patches"])
    commits = tuple(p["commit"] for p in doc["patches"])
    return Series(doc["base"], names, commits)


def _stage_hunks(box: Box, path: str, stages: dict[str, str]) -> int:
    if "2" not in stages or "3" not in stages:
        return 1
    parts = [
        box.run("git", "cat-file", "blob", stages[s]).stdout if s in stages else b""
        for s in ("2", "1", "3")
    ]
    return max(1, count_hunks(box.merge_file(*parts, "--diff3")))


def _unmerged(box: Box) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    raw = box.run("git", "ls-files", "-u", "-z").stdout.decode("utf-8", "surrogateescape")
    for entry in raw.split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            _mode, oid, stage = meta.split()
            out.setdefault(path, {})[stage] = oid
    return out


def _rerere_preimages(box: Box) -> dict[str, bytes]:
    """Path -> rerere's preimage of its conflict (the merge's hunks, before rerere resolved
    them), from ``MERGE_RR``."""
    found: dict[str, bytes] = {}
    merge_rr = Path(box.git("rev-parse", "--path-format=absolute", "--git-path", "MERGE_RR"))
    cache = Path(box.git("rev-parse", "--path-format=absolute", "--git-path", "rr-cache"))
    if not merge_rr.is_file():
        return found
    for item in merge_rr.read_bytes().split(b"\0"):
        if b"\t" not in item:
            continue
        rr_id, path = item.decode("utf-8", "surrogateescape").split("\t", 1)
        name, _dot, variant = rr_id.partition(".")
        pre = cache / name / (f"preimage.{variant}" if variant else "preimage")
        if pre.is_file():
            found[path] = pre.read_bytes()
    return found


def rebase_drift(
    box: Box,
    series: Series,
    onto: str,
    truth: Truth,
    rerere: bool,
    tally: Tally,
    max_stops: int = 500,
) -> str:
    """``git rebase`` of the series onto ONTO, the person resolving each stop with the truth
    (rerere, when enabled, first); returns the resulting HEAD."""
    box.git("config", "rerere.enabled", "true" if rerere else "false")
    box.git("checkout", "-q", "--detach", series.commits[-1])
    index = {c: i for i, c in enumerate(series.commits)}
    state = Path(box.git("rev-parse", "--path-format=absolute", "--git-path", "rebase-merge"))
    p = box.run("git", "rebase", "-q", "--onto", onto, series.base, check=False)
    while p.returncode != 0 and state.exists():
        if tally.stops >= max_stops:
            raise RuntimeError(f"more than {max_stops} stops")
        done = (state / "done").read_text().splitlines()[-1].split()[1]
        k = index[box.git("rev-parse", done)]
        unmerged = _unmerged(box)
        if not unmerged:  # nothing to resolve: an empty commit, or a failure
            p = box.run("git", "rebase", "--skip", check=False)
            continue
        tally.stops += 1
        asked, automatic = tally.asked, tally.automatic
        preimages = _rerere_preimages(box) if rerere else {}
        for path, stages in sorted(unmerged.items()):
            now = box.read(path)
            # the hunks as the person sees them: merge-ort's markers in the file (or, where
            # rerere resolved it, in its preimage); git merge-file's count when neither
            hunks = count_hunks(now or b"") or count_hunks(preimages.get(path, b""))
            hunks = hunks or _stage_hunks(box, path, stages)
            want, known = truth.at(k, path)
            both = "2" in stages and "3" in stages
            if rerere and both and now is not None and not count_hunks(now):
                # rerere wrote its resolution (rerere.autoUpdate off: still unmerged)
                tally.automatic += hunks
                verdict = _verdict(now, want, known)
                tally.checks.append(
                    Check(
                        tally.tool,
                        series.names[k],
                        path,
                        hunks,
                        verdict,
                        "rerere",
                        _differs(now, want) if verdict == "refuted" else "",
                    )
                )
                continue
            tally.asked += hunks
            tally.asked_files += 1
        tally.per_stop.append((series.names[k], tally.asked - asked, tally.automatic - automatic))
        for path in unmerged:
            want, _known = truth.at(k, path)
            box.write(path, want)
            box.run("git", "add", "-A", "--", path)
        p = box.run("git", "rebase", "--continue", check=False)
        if p.returncode != 0 and state.exists() and not _unmerged(box):
            status = box.git("status", "--porcelain", "--untracked-files=no")
            if not status:  # resolved to nothing: the commit is empty
                p = box.run("git", "rebase", "--skip", check=False)
    if state.exists():
        raise RuntimeError("git rebase did not finish: " + p.stderr.decode(errors="replace"))
    return box.git("rev-parse", "HEAD")


def _patch_files(box: Box, commit: str) -> list[str]:
    names = box.git("diff-tree", "-r", "--name-only", "--no-renames", f"{commit}^", commit)
    return [n for n in names.splitlines() if n]


def _records(box: Box) -> list[object]:
    """The series' recorded resolutions of conflict hunks, read as patchstack reads them."""
    folder = box.dir / "patches" / "resolutions"
    if not folder.is_dir():
        return []
    if PROJECT not in sys.path:
        sys.path.insert(0, PROJECT)
    from patchstack.commands.refresh import hunks, resolutions

    found = []
    for name in sorted(os.listdir(folder)):
        record = resolutions.parse_record((folder / name).read_bytes(), str(folder / name))
        if isinstance(record, hunks.HunkRecord):
            found.append(record)
    return found


def _with_record(data: bytes | None, records: Sequence[object]) -> tuple[int, int]:
    """(by key, by its two sides only) the conflict hunks of a stopped file that a hunk record
    matches: by patchstack's key (sides and base), or only by its two sides, byte for byte
    (rerere's key, which leaves the base out): what a lookup by the sides would add."""
    if data is None or not records:
        return 0, 0
    from patchstack.commands.refresh import hunks

    keys = {r.key for r in records}  # type: ignore[attr-defined]
    sides = {tuple(sorted((r.hunk.ours, r.hunk.theirs))) for r in records}  # type: ignore[attr-defined]
    found = [p for p in hunks.split(data) or [] if isinstance(p, hunks.Hunk)]
    by_key = sum(1 for h in found if h.key in keys)
    by_sides = sum(
        1 for h in found if h.key not in keys and tuple(sorted((h.ours, h.theirs))) in sides
    )
    return by_key, by_sides


RULE = "proposed by a built-in rule, as "  # a stop's note of the hunks a rule resolved


def _settled_at_stop(
    note: str, path: str, opening: str = "recorded resolutions settle "
) -> list[str]:
    """ "path:line" (with " (base differed)") of each hunk of PATH a stop's note says recorded
    resolutions settled (`reuse.settle_hunks`' notes), or (OPENING `RULE`) a built-in rule
    resolved (`reuse.proposed_at_stop`)."""
    out: list[str] = []
    for item in note.split("; "):
        head = f" of {path} ("
        if not item.startswith(opening) or head not in item:
            continue
        rest = item.split(head, 1)[1]
        depth = 1
        for end, ch in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                out += [h for h in rest[:end].split(", ") if h.startswith(path + ":")]
                break
    return out


def _context(lines: Sequence[bytes], start: int, stop: int, most: int = 3) -> list[bytes]:
    """Up to MOST lines of lines[start:stop], nearest the other end first cut at a marker."""
    out: list[bytes] = []
    step = 1 if start <= stop else -1
    for i in range(start, stop, step):
        if len(out) == most or lines[i].startswith(MARKERS):
            break
        out.append(lines[i])
    return out if step == 1 else out[::-1]


def _find_all(lines: Sequence[bytes], want: Sequence[bytes]) -> list[int]:
    n = len(want)
    return [i for i in range(len(lines) - n + 1) if list(lines[i : i + n]) == list(want)]


def hunk_verdict(
    shown: bytes, line: int, resolutions: Sequence[bytes], truth: bytes | None, known: bool
) -> str:
    """Whether the engineers' file agrees with one hunk a record settled at a stop: the stop's
    file (SHOWN) holds the record's resolution at LINE; its neighbours (up to 3 lines each side,
    never a marker) with the resolution between them stand in the truth: agree; both
    neighbours stand there once each, in order, with something else between: refuted;
    otherwise (a neighbour the engineers changed, not unique) no truth."""
    if not known or truth is None:
        return "unverified"
    lines = shown.splitlines(keepends=True)
    at = line - 1
    fits = [
        r.splitlines(keepends=True)
        for r in resolutions
        if lines[at : at + len(r.splitlines())] == r.splitlines(keepends=True)
    ]
    if not fits:
        return "unverified"
    body = max(fits, key=len)
    before = _context(lines, at - 1, -1)
    after = _context(lines, at + len(body), len(lines))
    want = truth.splitlines(keepends=True)
    if not before and not after:
        return "agree" if want == body else "refuted"
    if _find_all(want, [*before, *body, *after]):
        return "agree"
    one, two = _find_all(want, before), _find_all(want, after)
    if before and after and len(one) == 1 and len(two) == 1 and one[0] + len(before) <= two[0]:
        return "refuted"
    return "unverified"


def ps_drift(
    box: Box,
    series: Series,
    onto: str,
    truth: Truth,
    tally: Tally,
    extra: Sequence[str] = (),
    max_stops: int = 500,
    dump: Path | None = None,
) -> dict[str, dict[str, object]]:
    """``patchstack refresh --onto ONTO`` (with EXTRA), the person resolving each stop with
    the truth and going on with ``--continue``; returns the verdict of each patch."""
    index = {n: i for i, n in enumerate(series.names)}
    verdicts: dict[str, dict[str, object]] = {}
    code, out, err = box.ps("refresh", "--onto", onto, "--json", *extra)
    while True:
        doc = json.loads(out)
        for p in doc["patches"]:
            verdicts[p["name"]] = p
        stop = doc["stopped"]
        if code == 0 or stop is None:
            break
        if tally.stops >= max_stops:
            raise RuntimeError(f"more than {max_stops} stops")
        tally.stops += 1
        asked = tally.asked
        name = stop["patch"]
        k = index[name]
        step = str(doc["new_base"])  # a stepped refresh stops within a step
        touched = set(stop["files"])
        relocated: set[str] = set()
        for rel in stop.get("relocations") or []:
            carried = [h for h in rel["hunks"] if h["dest"]]
            # counted as git counts the file: its markers, or (a modify/delete) 1 when a hunk
            # is left to the person, not one per hunk carried nowhere
            left = len(rel["hunks"]) > len(carried)
            tally.asked += count_hunks(box.read(rel["path"]) or b"") or int(left)
            tally.proposed += len(carried)
            relocated.add(rel["path"])
            for dest in sorted({h["dest"] for h in carried}):
                want, known = truth.at(k, dest, step)
                now = box.read(dest)
                verdict = _verdict(now, want, known)
                n = sum(1 for h in carried if h["dest"] == dest)
                diff = _differs(now, want) if verdict == "refuted" else ""
                tally.checks.append(Check(tally.tool, name, dest, n, verdict, "relocation", diff))
                relocated.add(dest)
        records = _records(box)
        note = str(stop.get("note") or "")
        merged_hunks: dict[str, int] = {}
        for h in stop.get("hunks") or []:
            merged_hunks[h["path"]] = merged_hunks.get(h["path"], 0) + 1
        for path in sorted(touched - relocated):
            now = box.read(path)
            n = count_hunks(now) if now is not None else 0
            if dump is not None and n:  # the file as the person meets it, for study
                where = dump / f"{tally.stops:03d}-{name}" / path
                where.parent.mkdir(parents=True, exist_ok=True)
                where.write_bytes(now or b"")
                want, known = truth.at(k, path, step)
                if known and want is not None:  # the engineers' file, to judge a rule by
                    where.with_name(where.name + ".truth").write_bytes(want)
            # Hunks recorded resolutions settled in the work tree at the stop (the others keep
            # their markers): automatic; the person then writes the whole file, so the truth
            # cannot judge these hunks alone: unverified.
            if f"a recorded resolution of {path}'s very versions settles it whole" in note:
                tally.automatic += 1  # a file recorded whole beside hunk records
                want, known = truth.at(k, path, step)
                verdict = _verdict(now, want, known)
                why = "whole-file record at a stop"
                tally.checks.append(Check(tally.tool, name, path, 1, verdict, why, ""))
                touched.discard(path)
                continue
            pre = merged_hunks.get(path, 0) - n if now is not None else 0
            settled = _settled_at_stop(note, path) if now is not None else []
            ruled = _settled_at_stop(note, path, RULE) if now is not None else []
            for h in ruled:  # the rule's resolution is one side of the hunk, as the stop said
                want, known = truth.at(k, path, step)
                sides = [
                    b"".join(line.encode() + b"\n" for line in x[side])
                    for x in stop.get("hunks") or []
                    if x["path"] == path
                    for side in ("now", "wanted")
                ]
                at = int(h[len(path) + 1 :].split(" ", 1)[0])
                verdict = hunk_verdict(now or b"", at, sides, want, known)
                tally.checks.append(Check(tally.tool, name, h, 1, verdict, "built-in rule"))
            if pre > 0 or settled or ruled:
                tally.automatic += max(pre, len(settled) + len(ruled))
                want, known = truth.at(k, path, step)
                datas = [r.data for r in records]  # type: ignore[attr-defined]
                for h in settled:
                    at = int(h[len(path) + 1 :].split(" ", 1)[0])
                    verdict = hunk_verdict(now or b"", at, datas, want, known)
                    why = "hunk records at a stop"
                    tally.checks.append(Check(tally.tool, name, h, 1, verdict, why, ""))
                if pre > len(settled) + len(ruled):  # (a note that did not name them)
                    why = "hunk records at a stop"
                    n_left = pre - len(settled) - len(ruled)
                    tally.checks.append(Check(tally.tool, name, path, n_left, "unverified", why))
            by_key, by_sides = _with_record(now, records)
            tally.recorded_at_stops += by_key
            tally.sides_at_stops += by_sides
            if n == 0 and pre <= 0 and not settled and not ruled:
                # a conflict with no marker (modify/delete, a file's location after a folder
                # rename): 1, as git's count of its unmerged file
                n = 1
            tally.asked += n
            tally.asked_files += n > 0
            if n == 0 and now is not None:
                touched.discard(path)  # settled by records: left as they made it
        tally.per_stop.append((name, tally.asked - asked, 0))
        for path in sorted(touched | relocated):
            want, _known = truth.at(k, path, step)
            box.write(path, want)
        code, out, err = box.ps("refresh", "--continue", "--json")
    applied = json.loads(box.ps("series", "--json")[1])["patches"]
    commits = {p["name"]: p["commit"] for p in applied}
    for name, v in verdicts.items():
        if not v.get("recorded") and not str(v.get("note", "")).startswith("resolved by"):
            continue
        k, commit = index[name], commits.get(name)
        reused = [str(h) for h in v.get("reused_hunks") or []]
        how = "hunk records" if reused else "whole-file record"
        per_file: dict[str, list[str]] = {}
        for h in reused:
            path = h[: -len(WHOLE_FILE)] if h.endswith(WHOLE_FILE) else h
            per_file.setdefault(path.rsplit(":", 1)[0], []).append(h)
        if not reused:
            per_file = {f: [f] for f in _patch_files(box, series.commits[k])}
        for path, which in sorted(per_file.items()):
            want, known = truth.at(k, path)
            now = box.blob(commit, path) if commit else None
            verdict = _verdict(now, want, known)
            tally.automatic += len(which)
            diff = _differs(now, want) if verdict == "refuted" else ""
            tally.checks.append(Check(tally.tool, name, path, len(which), verdict, how, diff))
    return verdicts


@dataclass
class Report:
    branch: str
    earlier: str
    later: str
    series_base: str
    patches: int
    upstream_earlier: int  # upstream commits from the series' base to E
    upstream_later: int  # ... to T
    no_truth: list[str]
    earlier_rebase: Tally
    earlier_patchstack: Tally
    tallies: list[Tally]
    resolver: str = ""
    synthetic: bool = False


def measure(
    repo: str,
    branch: str,
    earlier: str,
    later: str,
    upstream: str,
    work: Path,
    steps: str | None = None,
    resolver: str | None = None,
    log: Callable[[str], None] = lambda s: None,
    synthetic: bool = False,
    dump: Path | None = None,
    skip_rebase: bool = False,
    skip_oneshot: bool = False,
) -> Report:
    """Every run of the protocol (module docstring) in scratch clones under WORK. With
    ``synthetic``, EARLIER and LATER are upstream commits, the series is BRANCH and the person
    takes the patch's side of every hunk (no truth)."""
    top = Box(work / "prepared", repo=repo)
    rev = {  # resolved in REPO: the clone shares its objects, not its refs
        n: top.git("-C", os.path.abspath(repo), "rev-parse", "--verify", f"{r}^{{commit}}")
        for n, r in (("earlier", earlier), ("later", later), ("upstream", upstream))
    }
    top.git("update-ref", "refs/heads/upstream", rev["upstream"])
    log("import branch")
    truth_e: str | None
    truth_t: str | None
    if synthetic:
        e_up, t_up, truth_e, truth_t = rev["earlier"], rev["later"], None, None
        tip = top.git("-C", os.path.abspath(repo), "rev-parse", "--verify", f"{branch}^{{commit}}")
        no_truth: frozenset[str] = frozenset()
    else:
        e_up = top.git("rev-parse", f"{rev['earlier']}^2")
        t_up = top.git("rev-parse", f"{rev['later']}^2")
        truth_e, truth_t = rev["earlier"], rev["later"]
        tip = top.git("rev-parse", f"{rev['earlier']}^1")
        no_truth = branch_changed(top, rev["earlier"], rev["later"], rev["upstream"])
    series = prepare(top, tip, "upstream")
    report = Report(
        branch,
        rev["earlier"],
        rev["later"],
        series.base,
        len(series.names),
        int(top.git("rev-list", "--count", f"{series.base}..{e_up}")),
        int(top.git("rev-list", "--count", f"{series.base}..{t_up}")),
        sorted(no_truth),
        Tally("git rebase (earlier drift)"),
        Tally("patchstack (earlier drift)"),
        [],
        synthetic=synthetic,
    )

    def copy(name: str) -> Box:
        return Box(work / name, copy_of=top.dir)

    if not skip_rebase:
        # (a) git rebase alone; (b) with rerere: the earlier drift records, then the drift
        for name, label, rerere in (
            ("plain", "git rebase", False),
            ("rerere", "git rebase + rerere", True),
        ):
            box = copy(name)
            if rerere:
                log(f"{label}: the earlier drift")
                earlier_truth = Truth(box, series, truth_e, frozenset(), e_up)
                rebase_drift(box, series, e_up, earlier_truth, True, report.earlier_rebase)
            log(f"{label}: the drift" if rerere else f"{label} alone")
            tally = Tally(label)
            truth = Truth(box, series, truth_t, no_truth, t_up)
            rebase_drift(box, series, t_up, truth, rerere, tally)
            report.tallies.append(tally)
            shutil.rmtree(work / name, ignore_errors=True)
    # (c) patchstack: the earlier drift records, its records copied into a fresh copy
    log("patchstack: the earlier drift")
    box = copy("ps-earlier")
    earlier_truth = Truth(box, series, truth_e, frozenset(), e_up)
    ps_drift(box, series, e_up, earlier_truth, report.earlier_patchstack)
    folder = "patches"  # import branch's series folder
    records = box.dir / folder / "resolutions"
    runs: list[tuple[str, list[str]]] = [] if skip_oneshot else [("patchstack", [])]
    if steps:
        runs.append((f"patchstack --steps {steps}", ["--steps", steps]))
    if resolver:
        report.resolver = resolver
        runs = [(f"{t} --resolver", [*x, "--resolver", resolver]) for t, x in runs]
    for tool, extra in runs:
        log(tool)
        name = "ps-" + str(len(report.tallies))
        box = copy(name)
        if records.is_dir():
            shutil.copytree(records, box.dir / folder / "resolutions", dirs_exist_ok=True)
        tally = Tally(tool)
        try:
            truth = Truth(box, series, truth_t, no_truth, t_up)
            where = dump / name if dump is not None else None
            ps_drift(box, series, t_up, truth, tally, extra, dump=where)
        except RuntimeError as e:
            tally.error = str(e)[-600:]
        report.tallies.append(tally)
        shutil.rmtree(work / name, ignore_errors=True)
    shutil.rmtree(work / "ps-earlier", ignore_errors=True)
    return report


def markdown(reports: Sequence[Report]) -> str:
    out = [
        "| drift | tool | stops | hunks asked | of which a record matches (by key / by its two"
        " sides only) | hunks automatic"
        " | relocated hunks proposed | automatic and proposed: agree / refuted / no truth"
        " | asked / rerere's asked |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        rr = next((t.asked for t in r.tallies if t.tool == "git rebase + rerere"), 0)
        what = (
            f"`{r.branch}`: {r.patches} patches; recorded onto {r.earlier[:9]}"
            f"{'' if r.synthetic else '^2'} ({r.upstream_earlier} upstream commits), measured"
            f" onto {r.later[:9]}{'' if r.synthetic else '^2'} ({r.upstream_later})"
        )
        for t in r.tallies:
            v = t.verdicts()
            ratio = f"{t.asked / rr:.2f}" if rr else "n/a"
            err = f" (error: {t.error[:120]})" if t.error else ""
            ps = t.tool.startswith("patchstack")
            matched = f"{t.recorded_at_stops} / {t.sides_at_stops}" if ps else ""
            out.append(
                f"| {what} | {t.tool}{err} | {t.stops} | {t.asked} | {matched} | {t.automatic}"
                f" | {t.proposed} | {v['agree']} / {v['refuted']} / {v['unverified']}"
                f" | {ratio} |"
            )
            what = ""
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo")
    ap.add_argument("branch")
    ap.add_argument("earlier", help="the merge of the upstream whose resolutions are recorded")
    ap.add_argument("later", help="a later merge of the upstream: the drift measured")
    ap.add_argument("--upstream", default="main")
    ap.add_argument("--steps", help="also measure refresh --steps VALUE (culprits, tags, N)")
    ap.add_argument("--resolver", help="pass --resolver CMD to the refreshes measured")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--workdir")
    ap.add_argument(
        "--synthetic",
        action="store_true",
        help="for a branch with no merge to learn from: EARLIER and LATER are upstream"
        " commits, the series is BRANCH, and the person takes the patch's side of every hunk",
    )
    ap.add_argument("--dump", help="write each file with markers at each stop under DUMP")
    ap.add_argument("--skip-rebase", action="store_true", help="measure patchstack only")
    ap.add_argument("--skip-oneshot", action="store_true", help="with --steps: only the steps")
    opts = ap.parse_args()
    work = Path(opts.workdir or tempfile.mkdtemp(prefix="ps-human-"))
    try:
        report = measure(
            opts.repo,
            opts.branch,
            opts.earlier,
            opts.later,
            opts.upstream,
            work,
            opts.steps,
            opts.resolver,
            log=lambda s: print(f"... {s}", file=sys.stderr),
            synthetic=opts.synthetic,
            dump=Path(opts.dump) if opts.dump else None,
            skip_rebase=opts.skip_rebase,
            skip_oneshot=opts.skip_oneshot,
        )
    finally:
        if not opts.workdir:
            shutil.rmtree(work, ignore_errors=True)
    text = markdown([report])
    print(text)
    if opts.markdown:
        Path(opts.markdown).write_text(text)
    if opts.json:
        Path(opts.json).write_text(json.dumps(asdict(report), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
