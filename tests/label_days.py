"""The label oracle's two days: one refresh with its check and status (`Day`), and a
deferred patch brought back with ``push NAME`` (`bring_back`), each label judged by `Oracle`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from .conftest import Repo
from .label_oracle import Oracle, resolve_markers, untaken

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
        self.after: dict = {}  # the status after the refresh (`refresh`)
        repo = o.repo
        status = _json(repo, "status")
        self.order = [p["name"] for p in status["patches"]]
        self.deferred = {
            p["name"]: p["mark"]["commit"]
            for p in status["patches"]
            if p.get("mark") and p["mark"]["kind"] == "deferred"
        }
        # a patch marked upstream is placed again by the next refresh, at its place with the
        # change of its mark's commit: git rebase of the series with it picked there, which
        # drops it while the base holds it, applies it again once upstream reverted it
        # (never lost), and skips it when it conflicts (it is judged alone, on the new base)
        self.taken = {
            p["name"]: p["mark"]["commit"]
            for p in status["patches"]
            if p.get("mark") and p["mark"]["kind"] == "upstream"
        }
        self.applied = stack_of(repo, old)
        self.commits = {**self.deferred, **dict(self.applied)}
        carried = {**self.taken, **dict(self.applied)}
        self.carried = [(n, carried[n]) for n in self.order if n in carried]
        self.against(set())

    def against(self, held: set[str]) -> None:
        """git's reference for patchstack's ``held`` patches (`engine.needs`: left out with a
        left-out patch whose lines they change): ``git rebase`` with them dropped as well, as
        `tests/differential.py` compares."""
        self.held = held
        placed = [(n, c) for n, c in self.carried if n not in held]
        self.ref = self.o.git.chain(self.new, placed)
        self.conflicts = sorted(n for n in self.ref.conflicts if n not in self.taken)
        kept = [(n, c) for n, c in placed if n not in self.ref.conflicts]
        on_old = self.o.git.chain(self.old, kept)
        # a no-op for want of the missing patches: it changes nothing on the old base without
        # them either, or it conflicts there (it leans on them) and no upstream commit brought
        # the nothing it changes on the new base (`Oracle.not_brought`: a line it removes that
        # a missing patch made was never upstream's)
        commits = dict(kept)
        self.self_noop = set(on_old.empty) | {
            n
            for n in on_old.conflicts
            if n in self.ref.empty and not self.o.brought_by(commits[n], self.old, self.new)
        }

    def judge_held(self, where: str, reports: list[dict]) -> list[dict]:
        """The reports of patches held (`against`), each judged by git; the others back."""
        held = {r["patch"] for r in reports if r.get("held")}
        self.against(held)
        self.o.held(where, self.applied, held, set(self.ref.conflicts))
        return [r for r in reports if r["patch"] not in held]

    def in_order(self, present: set[str]) -> list[tuple[str, str]]:
        # one marked upstream is placed again by the refresh: with the commit of its mark
        commits = {**self.taken, **self.commits}
        return [(n, commits[n]) for n in self.order if n in present and n in commits]

    def judge(self, where: str, entries: list[dict], reports: list[dict], now=()) -> None:
        o = self.o
        # a held patch's "conflict" is its holding, judged by git in `judge_held`
        entries = [
            e for e in entries if not (e["name"] in self.held and e["verdict"] == "conflict")
        ]
        o.verdicts(where, entries, self.ref, self.commits, self.self_noop, self.old, self.new)
        for e in entries:
            if e["name"] in self.taken and e["verdict"] in ("conflict", "deferred"):
                if e["name"] not in self.ref.conflicts:
                    o.fail(
                        where,
                        f"{e['name']}: {e['verdict']} (marked upstream before), but "
                        "git: it applies at its place on the new base",
                    )
                continue
            if e["verdict"] == "deferred" and e["name"] not in {*self.deferred, *now}:
                o.fail(where, f"{e['name']}: deferred, but the series does not defer it")
        applied = {n for n, _c in self.carried}
        # a knock-on waits for its root; so does a held patch, primary too (deferred after it)
        roots = {
            r["patch"]: r["root"]
            for r in reports
            if (r["kind"] == "knock-on" or r.get("held")) and r["root"]
        }
        for r in reports:
            waits = set()  # the root, and the root it waits for in turn (a knock-on's)
            at = r.get("root")
            while at and at not in waits:
                waits.add(at)
                at = roots.get(at)
            present = applied | {r["patch"]} | waits
            if r["kind"] == "knock-on" and r["root"]:
                o.knock_on(where, r["patch"], r["root"], self.new, self.in_order(present), waits)
            elif r["kind"] == "primary":
                o.culprits(where, r, self.old, self.new, self.merged(r["patch"]))
                if r.get("held") and r["root"]:
                    self.held_primary(where, r["patch"], r["root"], applied, waits)
                else:
                    self.primary(where, r["patch"], set(r["files"]), applied)
            o.superseded(where, r)

    def again(self) -> None:
        """After `refresh`: ``check --verbose``, which shows each deferred patch's conflict
        again as it is on the new base (placed with its deferral's change after the patches
        applied before it): it conflicts there (git's pick), a knock-on is one, and a primary
        hunk's upstream commits are traced from the base the change was made on (the merge
        base of its deferral's commit and the new base: a patch still deferred from day one
        was made before day one's base, `commands.refresh.stopped.made_on`)."""
        o, repo = self.o, self.o.repo
        status = self.after  # the status the refresh was read with (`refresh`)
        marks = {
            p["name"]: p["mark"]["commit"]
            for p in status["patches"]
            if p.get("mark") and p["mark"]["kind"] == "deferred"
        }
        data = _json(repo, "check", "--onto", self.ref_name, "--verbose")
        where = f"{self.label} check --verbose"
        applied = {
            n for n, _c in self.carried if n not in self.ref.conflicts and n not in self.held
        }
        commits = {**self.commits, **marks}
        roots = {r["patch"]: r["root"] for r in data["deferred"] if r["root"]}
        for r in data["deferred"]:
            name = r["patch"]
            if name not in marks:
                o.fail(where, f"{name}: shown again as deferred, but the series does not defer it")
                continue
            o.saw("conflict")
            onto = self.placed_at(name, applied)
            if r["kind"] == "primary" and not r["root"]:
                verdict, tree, paths = o.git.pick(onto, commits[name], diff3=True)
                if verdict != "conflict":
                    o.fail(where, f"{name}: conflict, but git: it applies at its place")
                    continue
                merged = {p: o.git.run("show", f"{tree}:{p}", check=False) for p in paths}
                made = o.git.run("merge-base", commits[name], self.new, check=False).strip()
                old = made if made and made != self.new else self.old
                o.culprits(where, r, old, self.new, merged)
            elif r["kind"] == "knock-on" and r["root"]:
                waits, at = set(), r["root"]
                while at and at not in waits:
                    waits.add(at)
                    at = roots.get(at)
                present = applied | {name} | waits
                order = [n for n in self.order if n in present and n in commits]
                o.knock_on(
                    where, name, r["root"], self.new, [(n, commits[n]) for n in order], waits
                )

    def placed_at(self, name: str, applied: set[str]) -> str:
        """Where a patch left out of git's rebase would be placed: after the patches before it
        that the rebase applied (the commit of the next one's place, else its head)."""
        after = self.order[self.order.index(name) + 1 :]
        return next(
            (self.ref.at[n] for n in after if n in self.ref.at and n in applied), self.ref.head
        )

    def merged(self, name: str) -> dict[str, str]:
        """git's merged files of ``name``'s conflict where git's rebase places it (a held
        patch, which the rebase leaves out: where it would have been, after the patches
        before it), with patchstack's markers."""
        commit = {**self.taken, **self.commits}.get(name)
        onto = self.ref.at.get(name)
        if onto is None and name in self.held and name in self.order:
            after = self.order[self.order.index(name) + 1 :]
            onto = next((self.ref.at[n] for n in after if n in self.ref.at), self.ref.head)
        if commit is None or onto is None:
            return {}
        verdict, tree, paths = self.o.git.pick(onto, commit, diff3=True)
        if verdict != "conflict":
            return {}
        return {p: self.o.git.run("show", f"{tree}:{p}", check=False) for p in paths}

    def primary(self, where: str, name: str, files: set[str], applied: set[str]) -> None:
        """A primary conflict is upstream's: no one missing patch before it, applied, lets it
        apply (judged where that patch applies or its own conflict is in other files, so that
        taking it as the patch has it decides nothing in this one's files)."""
        if name not in self.order or name in self.taken:
            return  # one marked upstream is judged alone on the new base (`judge`)
        before = self.order[: self.order.index(name)]
        missing = [n for n in before if n in self.commits and n not in applied]
        missing += [n for n in before if n in self.ref.conflicts or n in self.held]
        for root in missing:
            present = (applied - set(self.ref.conflicts) - self.held) | {root, name}
            chain = self.o.git.chain(self.new, self.in_order(present), frozenset([root]))
            commit = {**self.taken, **self.commits}[root]
            own = self.o.git.pick(chain.at[root], commit)[2] if root in chain.at else []
            placed = root in chain.at and root not in (*chain.conflicts, *chain.empty)
            if placed and name not in chain.conflicts and not files & set(own):
                self.o.fail(
                    where,
                    f"{name}: primary, but git: it applies once {root} "
                    "(missing) is applied: a knock-on",
                    item="5",
                )
                return

    def held_primary(
        self, where: str, name: str, root: str, applied: set[str], waits: set[str]
    ) -> None:
        """A patch held for ``root`` (`engine.needs`) is never placed without it: it is
        primary when, with ``root`` and the roots it waits for in turn (``waits``) applied
        where it would have been placed, each conflict taken as that patch has it, git's pick
        of it still conflicts. Another missing patch alone is no test of it (label seed
        5262589: p4, held for p3, which waits for p2, applies after deferred p1 alone, a
        placement patchstack never makes; with p2 and p3 in place it conflicts in b.c, as
        reported). Unknown when a root's conflict has no lines to take (`untaken`)."""
        if name not in self.order or name in self.taken:
            return
        present = (applied - set(self.ref.conflicts) - self.held) | waits | {name}
        chain = self.o.git.chain(self.new, self.in_order(present), frozenset(waits))
        left = untaken(chain, waits)
        if left:
            self.o.cannot("primary", f"{where}: {name}: {left[0]}'s conflict is not in lines")
        elif name not in chain.conflicts:
            self.o.fail(
                where,
                f"{name}: primary, but git: with {root} (it is held for it) applied, and the "
                "roots that one waits for, it applies: a knock-on",
                item="5",
            )

    def check(self) -> None:
        data = _json(self.o.repo, "check", "--onto", self.ref_name)
        where = f"{self.label} check"
        own = self.judge_held(where, data["conflicts"])
        got = sorted(c["patch"] for c in own if c["patch"] not in self.taken)
        if got != self.conflicts:
            self.o.fail(where, f"conflicts {got}, git {self.conflicts}")
        self.judge(where, data["patches"], data["conflicts"])

    def refresh(self) -> dict:
        repo, o = self.o.repo, self.o
        data = _json(repo, "refresh", "--onto", self.ref_name, "--defer-conflicts")
        where = f"{self.label} refresh"
        own = self.judge_held(where, data["deferred"])
        got = sorted(c["patch"] for c in own if c["patch"] not in self.taken)
        if got != self.conflicts:
            o.fail(where, f"deferred {got}, git skipped {self.conflicts}")
        if repo.tree() != o.git.tree(self.ref.head):
            # found here, not in issue 33: a deferred patch's change leaks into the next
            # patch's commit when a patch marked upstream is in the series (a shortcut)
            leak = bool(self.taken) and not os.environ.get("PATCHSTACK_NO_FAST_PATH")
            o.fail(
                where,
                "the tree is not git rebase's (the same patches skipped)",
                item="deferred-leak" if leak else "",
            )
        status = self.after = _json(repo, "status")
        now_applied = {p["name"] for p in status["patches"] if p["applied"]}
        # a deferral waiting for a root keeps what triage found: primary or a knock-on
        marks = {p["name"]: p.get("mark") or {} for p in status["patches"]}
        for r in data["deferred"]:
            mark = marks.get(r["patch"], {})
            if mark.get("kind") == "deferred" and r["root"] and mark.get("root") == r["root"]:
                said = "primary" if mark.get("primary") else "knock-on"
                if said != r["kind"]:
                    text = f"{r['patch']}: marked {said}, waiting for {r['root']}"
                    o.fail(where, f"{text}, but the refresh reported it {r['kind']}")
        for name in self.taken:
            back = name not in (*self.ref.conflicts, *self.ref.empty, *self.held)
            if back and name not in now_applied:
                o.fail(
                    where,
                    f"{name}: marked upstream before, left unapplied, but git: the base no "
                    "longer holds it (at its place it changes something)",
                )
        left_out = {*self.ref.conflicts, *self.held, *self.deferred}
        # a no-op for want of a left-out patch is deferred after it (`# deferred: NAME C after
        # ROOT`), when git finds it one: empty here, changing something with every patch there
        after = {
            p["name"]
            for p in status["patches"]
            if p.get("mark")
            and p["mark"]["kind"] == "deferred"
            and p["mark"].get("root") in left_out
            and p["name"] in self.ref.empty
            and p["name"] in self.self_noop
        }
        self.judge(
            where, data["patches"], data["deferred"], {*self.ref.conflicts, *self.held, *after}
        )
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


def bring_back(
    o: Oracle,
    name: str,
    onto: str,
    original: dict[str, str],
    resolve: Callable[[str], str | None] = resolve_markers,
) -> None:
    """``push NAME`` of a deferred patch, its conflict resolved as the patch has it (the
    others skipped; ``resolve``: a conflicted file's text so resolved, None when it cannot
    be), against git picking it again at its place: ``git rebase`` of the series
    as it was written (``original``: each patch's commit before the refresh that deferred it;
    a later patch placed without it, as refreshed, unless git proves it is not its own change
    without it) with the patches still deferred left out."""
    repo = o.repo
    status = _json(repo, "status")
    order = [p["name"] for p in status["patches"]]
    marks = {p["name"]: p["mark"] for p in status["patches"] if p.get("mark")}
    waiting = {name}
    for n in order:  # the knock-ons waiting for it come back with it
        m = marks.get(n)
        if m and m["kind"] == "deferred" and m.get("root") in waiting:
            waiting.add(n)
    # A patch applied after one coming back was placed without it by the refresh (its day-one
    # tree is git rebase's, checked), its file rewritten from there: git's pick of it at its
    # place is of that commit (git rebase -i of the refreshed branch with the patch picked
    # again before it). It can differ from the original where upstream made the difference
    # (it took the patch coming back, or one this one follows; repeated lines merge otherwise
    # without it). Only one git proves is not its own change without the patches coming back
    # (`Git.commutes` False: a clean pick, a different tree, where `engine.needs` holds it and
    # a refresh must not lose its hunk) is picked as written; None (a conflict on the way)
    # proves nothing, as in `engine.needs`.
    #
    # A patch applied before every one coming back stays as it is applied: ``push NAME`` does
    # not touch it, nor does ``git rebase -i`` of the branch with NAME picked again after it
    # (its pick is kept). Its tree was judged when it was made (the refresh's, or an earlier
    # push's, reference). Picking it again as written instead re-places it: where upstream
    # made its lines stand twice, git's merge of the commit as written can choose the other
    # copy than the one it is applied in (seed 9600028: p2 and p3, refreshed on day one into
    # a_f2's copy at the top of a.c and judged so by ``push p1``, picked as written by
    # ``push p4``'s reference went to the copy in p1_fn1). By hand: ``git cherry-pick`` of
    # p4 as written onto the applied p3, then of p5 and p6 as applied, gives push p4's tree.
    stack = list(original.items())
    commits = {}
    for n, now in stack_of(repo, onto):
        left = [m for m in order[: order.index(n)] if m in waiting and m in original]
        if not any(m in waiting for m in order[: order.index(n)]):
            commits[n] = now
            continue
        own = bool(left) and n in original and o.git.commutes(stack, n, left) is not False
        commits[n] = now if own else original[n]
    commits.update({n: original.get(n, marks[n]["commit"]) for n in waiting})
    # A patch marked upstream is a commit of the branch as written too: git rebase picks it
    # at its place, dropped as empty while the base holds its change, applied where the patch
    # brought back makes it change something again (it undoes or edits that patch's lines):
    # leaving it out would keep the brought-back patch's lines that it removes. patchstack
    # places the mark's change again at its place likewise.
    commits.update(
        {n: original.get(n, m["commit"]) for n, m in marks.items() if m["kind"] == "upstream"}
    )
    present = [(n, commits[n]) for n in order if n in commits]
    ref = o.git.chain(onto, present, frozenset([name, *o.brought]), proposal=True)
    where = f"push {name}"
    o.saw("push")
    result = repo.ps("push", name, code=None)
    conflicts = name in ref.conflicts or name in ref.resolved
    for line in result.stdout.splitlines():
        said = line.split()[:2]
        if len(said) < 2 or said[0] != "upstream" or said[1] not in commits:
            continue
        other = said[1]
        if other not in ref.empty:
            does = "conflicts" if other in (*ref.conflicts, *ref.resolved) else "changes something"
            o.fail(where, f"upstream {other}, but git: placed at its place it {does}", item="1")
    if conflicts and result.exit_code == 0:
        o.fail(where, "exit 0 with no conflict, but git: it conflicts there", item="1")
        return
    for _ in range(2 * len(order) + 2):
        if result.exit_code != 1:
            break
        stopped = _json(repo, "status")["stopped"]
        if stopped is None:
            return  # refused: nothing to compare
        at = stopped["patch"]
        if at not in (*ref.conflicts, *ref.resolved):
            o.fail(where, f"stops at a conflict in {at}, but git: it applies there")
            repo.ps("refresh", "--abort")
            return
        if at != name:
            result = repo.ps("refresh", "--skip", code=None)
            continue
        fixed = {}
        for path in stopped["conflicted"]:
            text = (repo.path / path).read_text() if (repo.path / path).is_file() else ""
            fixed[path] = resolve(text)
        if name not in ref.resolved or None in fixed.values():
            repo.ps("refresh", "--abort")
            return  # not a conflict of lines: the oracle cannot resolve it
        for path, text in fixed.items():
            repo.write(path, text)
        result = repo.ps("refresh", "--continue", code=None)
    if result.exit_code not in (0, 1):
        o.fail(where, f"exit {result.exit_code}: {result.stderr.strip()[:200]}")
    if result.exit_code != 0:
        return
    o.brought.add(name)
    if repo.tree() != o.git.tree(ref.head):
        o.fail(
            where,
            "the tree is not git's with the patch picked again at its place "
            f"(git: conflicts {ref.conflicts}, empty {ref.empty})",
            item="4",
        )
