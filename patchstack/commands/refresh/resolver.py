"""``refresh --resolver CMD``: each conflict no recorded resolution settles is handed to a
command (a structured merger such as Mergiraf, a script, a coding agent) as one JSON packet,
and its proposal is taken only when it is verified.

The protocol (the packet, the scratch folder, the answer) is `model.proposal`'s; the packet's
schema is ``patchstack/schemas/resolver.json``. The command is the user's: ``--resolver`` or
the ``patchstack.resolver`` git configuration (the user's or the repository's, read by git),
never anything of the series folder, which arrives through teammates' pull requests. It runs
as the user's programs run (`sessions`: a session of its own, ``program_env``, without git's
repository variables), in a scratch folder, and is killed at its time limit.

A proposal is accepted only when the command exits 0, it changes only the files the patch may
change, it leaves no conflict marker, and the patch's probe (when it has one) is effective on
it: it passes on the proposed tree and fails on the tree without the patch, each written into
a plain scratch folder. Asking for a resolver is asking for that probe to run. An accepted
proposal settles the conflict as a recorded resolution does, and is recorded as one
``resolved by CMD`` (`Resolutions.record`); the refresh that took it is one entry of the
operation log, so ``undo`` takes it back. A refused one stops the refresh as before, its
report saying why the proposal was refused. A knock-on (a conflict only because a patch
before it is left out, as `knockons.triaged` tells) is never handed over: it is deferred with
its root, as without a resolver.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

from ... import lock
from ...checkout import Checkout
from ...engine.culprits import attribute
from ...engine.replay import Step
from ...engine.triage import KNOCK_ON
from ...errors import PatchstackError
from ...git import Git, MergeResult
from ...git.process import program_env
from ...model import proposal
from ...model.ids import Oid
from ...model.proposal import Proposal
from ...model.series import Series
from .. import sessions
from .knockons import KnockOns, triaged
from .resolutions import FILE_MODES, Resolutions
from .stopped import State

_TAIL = 400  # characters of a command's standard error quoted in a refusal


@dataclass(frozen=True)
class Setting:
    command: str
    seconds: float


def setting(ws: Checkout, command: str | None, seconds: float | None) -> Setting | None:
    """The resolver the user asked for: ``--resolver``, else the ``patchstack.resolver``
    configuration; "" turns it off."""
    git = ws.git
    found = command if command is not None else git.config(proposal.CONFIG)
    if not found or not found.strip():
        return None
    if seconds is None:
        text = git.config(proposal.CONFIG_SECONDS)
        try:
            seconds = float(text) if text else proposal.DEFAULT_SECONDS
        except ValueError:
            raise PatchstackError(
                f"{proposal.CONFIG_SECONDS} = {text!r} is not a number of seconds",
                f"git config {proposal.CONFIG_SECONDS} 300",
            ) from None
        if seconds <= 0:
            raise PatchstackError(
                f"{proposal.CONFIG_SECONDS} must be more than 0",
                f"git config {proposal.CONFIG_SECONDS} 300",
            )
    return Setting(found.strip(), seconds)


def proposer_of(ws: Checkout, series: Series, state: State, knock_ons: KnockOns) -> Proposer | None:
    """The resolver the refresh was started with (kept in its stopped state for
    ``--continue``), or None."""
    if not state.resolver:
        return None
    how = Setting(state.resolver, state.resolver_seconds or proposal.DEFAULT_SECONDS)
    return Proposer(ws, series, knock_ons, how)


def notes(recorded: str, proposer: Proposer | None, name: str) -> str:
    """A stop's note: a record that did not match, and why a proposal was refused."""
    said = [n for n in (recorded, proposer.note(name) if proposer else "") if n]
    return "; ".join(said)


@dataclass(frozen=True)
class _Ran:
    status: int | None  # None: timed out, killed
    stdout: bytes
    stderr: str


class Proposer:
    """The replay's hook: ``propose(step, tree, merged)`` is a verified proposal's tree, or
    None (the conflict stops the refresh as before); `proposals` says what became of each."""

    def __init__(self, ws: Checkout, series: Series, knock_ons: KnockOns, how: Setting) -> None:
        self.ws = ws
        self.git = ws.git
        self.series = series
        self.knock_ons = knock_ons
        state = knock_ons.state
        self.bases = (state.old_base, state.new_base)  # where the culprits are traced
        self.how = how
        self.proposals: list[Proposal] = []
        self.unsettled: list[tuple[str, Oid, MergeResult]] = []  # left out: missing after

    def note(self, name: str) -> str:
        """Why the last proposal for ``name`` was refused (for its conflict report), or ""."""
        for p in reversed(self.proposals):
            if p.patch == name:
                return "" if p.accepted else f"the proposal of '{p.command}' was refused: {p.why}"
        return ""

    def propose(
        self, records: Resolutions, step: Step, tree: Oid, merged: MergeResult
    ) -> Oid | None:
        if step.name not in self.series:
            return None
        if self._knock_on(step.name, tree, merged):
            self.unsettled.append((step.name, tree, merged))
            return None
        folder = tempfile.mkdtemp(prefix="patchstack-resolver-")
        try:
            found, why = self._try(step, tree, merged, folder)
        except OSError as exc:  # a file of the scratch folder it could not write or read
            found, why = None, f"its scratch folder failed: {exc}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self.proposals.append(Proposal(step.name, self.how.command, found is not None, why))
        if found is None:
            self.unsettled.append((step.name, tree, merged))
            return None
        records.record(
            step.name,
            step.before,
            tree,
            step.after,
            merged.tree,
            found,
            merged.conflicted,
            by=self.how.command,
        )
        records.used.append(step.name)
        return found

    def _knock_on(self, name: str, tree: Oid, merged: MergeResult) -> bool:
        return knock_on(self.knock_ons, self.unsettled, name, tree, merged)

    # -- one proposal --------------------------------------------------------------------

    def _try(
        self, step: Step, tree: Oid, merged: MergeResult, folder: str
    ) -> tuple[Oid | None, str]:
        git = self.git
        entry = self.series.entry(step.name)
        data, patch = self.ws.read_patch(entry)
        wrote = git.changed_paths(tree, merged.tree)
        allowed = sorted({*patch.paths, *merged.conflicted, *wrote})
        there = git.entries_at(merged.tree, allowed)
        left = {p: _blob(git, there.get(p)) for p in allowed}
        for path, body in left.items():
            if body is not None:
                _write(folder, proposal.RESULT, path, body, there[path][0])
        files = self._sides(step, tree, merged, folder)
        summary = self.ws.proven_bytes(entry)[1]
        from ...model import fields  # (a skip that asks no resolver needs it not)

        probe = fields.probe_of(fields.read(summary.description, summary.fields))
        doc = proposal.packet(
            {
                "name": step.name,
                "subject": patch.subject or "",
                "description": patch.description,
                "probe": probe,
                "diff": data.decode("utf-8", "replace"),
            },
            files,
            *self._hunks(merged, left),
            {"seconds": self.how.seconds, "files": allowed},
            folder,
        )
        packet = os.path.join(folder, proposal.PACKET)
        with open(packet, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        ran = self._run(folder, packet)
        if ran.status is None:
            return None, f"it ran out of its {self.how.seconds:g} s and was killed"
        if ran.status != 0:
            said = f": {ran.stderr}" if ran.stderr else ""
            return None, f"it exited with status {ran.status}{said}"
        try:
            proposed = proposal.answer(ran.stdout)
            if proposed is None:
                proposed = _read_result(folder, left)
        except ValueError as exc:
            return None, str(exc)
        why = proposal.refusal(proposed, left, allowed)
        if why is not None:
            return None, why
        changes: dict[str, tuple[str, str] | None] = {}
        for path, body in proposed.items():
            mode = there[path][0] if path in there and there[path][0] in FILE_MODES else "100644"
            changes[path] = (mode, git.write_blob(body)) if body is not None else None
        found = git.edit_tree(merged.tree, changes)
        if probe:
            why = self._verify(step.name, probe, found, tree)
            if why:
                return None, why
            return found, "its probe passes on it and fails without the patch"
        return found, "no conflict marker, only the patch's files (the patch has no probe)"

    def _sides(
        self, step: Step, tree: Oid, merged: MergeResult, folder: str
    ) -> list[dict[str, object]]:
        git = self.git
        paths = list(merged.conflicted)
        sides = [git.entries_at(t, paths) for t in (step.before, tree, step.after)]
        files: list[dict[str, object]] = []
        for path in paths:
            item: dict[str, object] = {"path": path}
            for name, side in zip(proposal.SIDES, sides, strict=True):
                body = _blob(git, side.get(path))
                if body is not None:
                    _write(folder, name, path, body, side[path][0])
                item[name] = proposal.text_of(body)
            files.append(item)
        return files

    def _hunks(
        self, merged: MergeResult, left: Mapping[str, bytes | None]
    ) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        """The conflict regions, each with the upstream commits that changed its lines, and
        those commits' diffs of the file (`engine.culprits`)."""
        git = self.git
        old, new = self.bases
        paths = [p for p in merged.conflicted if left.get(p) is not None]
        base = git.entries_at(git.tree_of(new), paths)
        files = [(p, _blob(git, base.get(p)), left[p] or b"") for p in paths]
        hunks: list[dict[str, object]] = []
        shown: dict[tuple[str, str], str] = {}
        for per_file in attribute(git, old, new, files):
            for h in per_file:
                hunks.append(
                    {
                        "path": h.path,
                        "line": h.line,
                        "expected": list(h.expected),
                        "now": list(h.now),
                        "wanted": list(h.wanted),
                        "upstream": [{"commit": u.oid, "subject": u.subject} for u in h.upstream],
                    }
                )
                for u in h.upstream[: proposal.CULPRITS_SHOWN]:
                    shown.setdefault((u.oid, h.path), u.subject)
        culprits: list[dict[str, object]] = [
            {
                "commit": oid,
                "subject": subject,
                "path": path,
                "diff": git.commit_diff(oid, [path]).decode("utf-8", "replace"),
            }
            for (oid, path), subject in shown.items()
        ]
        return hunks, culprits

    def _run(self, folder: str, packet: str) -> _Ran:
        env = program_env(
            os.environ,
            {"PATCHSTACK_RESOLVER_PACKET": packet, "PATCHSTACK_RESOLVER_DIR": folder},
        )
        # The packet's path is the command's last argument, as "$@" after what the user gave.
        argv = ["/bin/sh", "-c", self.how.command + ' "$@"', "patchstack-resolver", packet]
        return _session(argv, folder, env, self.how.seconds, packet)

    def _verify(self, name: str, probe: str, found: Oid, without: Oid) -> str:
        return probe_refutes(self.git, name, probe, found, without, self.how.seconds)


def knock_on(
    k: KnockOns,
    unsettled: list[tuple[str, Oid, MergeResult]],
    name: str,
    tree: Oid,
    merged: MergeResult,
) -> bool:
    """Whether the conflict is a knock-on of a patch left out before it (triaged as the
    replay will triage it, with the conflicts met so far and ``unsettled``): deferred with its
    root, never resolved without it."""
    order = {s.name: i for i, s in enumerate(k.state.steps)}
    before = {c[0]: c for c in [*k.seen, *unsettled] if c[0] != name}
    seen = [*sorted(before.values(), key=lambda c: order[c[0]]), (name, tree, merged)]
    return triaged(k.ws, k.state, k.series, seen, False, k.needs.held)[-1].kind == KNOCK_ON


def probe_refutes(git: Git, name: str, probe: str, found: Oid, without: Oid, seconds: float) -> str:
    """Why the probe does not prove the proposal ("" when it does): it must pass on the
    proposed tree and fail on the tree without the patch."""
    env = program_env(os.environ, {"PATCHSTACK_PROBE_PATCH": name})
    for tree, want in ((found, True), (without, False)):
        with tempfile.TemporaryDirectory(prefix="patchstack-resolver-probe-") as there:
            with git.temp_index() as idx:
                idx.read_tree(tree)
                idx.checkout_to(there)
            ran = _session(["/bin/sh", "-c", probe], there, env, seconds, None)
        passed = ran.status == 0
        if passed != want:
            how = "ran out of time" if ran.status is None else f"exit {ran.status}"
            if want:
                return f"the patch's probe fails on the proposal ({how})"
            return "the patch's probe passes without the patch too: it proves nothing here"
    return ""


def _session(
    argv: list[str], cwd: str, env: Mapping[str, str], seconds: float, stdin: str | None
) -> _Ran:
    """Run a user's program in a session of its own, killed (with what it left running) at
    ``seconds``."""
    with contextlib.ExitStack() as stack:
        out: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())
        err: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())
        source: IO[bytes] | None = stack.enter_context(open(stdin, "rb")) if stdin else None
        with lock.critical():
            proc = sessions.start(
                argv,
                cwd,
                env,
                stdout=out,
                stderr=err,
                hint="the resolver runs with /bin/sh -c",
                stdin=source if source is not None else sessions.DEVNULL,
            )
        started = time.monotonic()
        try:
            while proc.poll() is None and time.monotonic() - started < seconds:
                time.sleep(0.02)
            status = proc.poll()
        finally:
            sessions.end(proc)
        out.seek(0)
        err.seek(0)
        said = err.read()[-_TAIL:].decode("utf-8", "replace").strip()
        return _Ran(status, out.read(proposal.ANSWER_LIMIT), said.split("\n")[-1] if said else "")


def _blob(git: Git, entry: tuple[str, str] | None) -> bytes | None:
    """A tree entry's bytes when it is a regular file, else None."""
    return git.read_blob(entry[1]) if entry is not None and entry[0] in FILE_MODES else None


def _write(folder: str, side: str, path: str, body: bytes, mode: str) -> None:
    full = os.path.join(folder, side, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(body)
    if mode == "100755":
        os.chmod(full, 0o755)


def _read_result(folder: str, merged: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """The proposal ``result/`` holds: every file there, and None for a file of the merge
    it removed. `ValueError` for what is not a file."""
    top = os.path.join(folder, proposal.RESULT)
    found: dict[str, bytes | None] = {}
    for here, dirs, names in os.walk(top):
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(here, d)))]:
            full = os.path.join(here, name)
            path = os.path.relpath(full, top).replace(os.sep, "/")
            if not stat.S_ISREG(os.lstat(full).st_mode):
                raise ValueError(f"result/{path} is not a regular file")
            with open(full, "rb") as f:
                found[path] = f.read()
    for path, body in merged.items():
        if body is not None and path not in found:
            found[path] = None
    return {p: b for p, b in found.items() if p not in merged or merged[p] != b}
