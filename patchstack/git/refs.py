"""Refs and configuration: revisions resolved to ids, and refs moved only in transactions that
expect their old values (``update-ref --stdin``), so a ref another process moved meanwhile makes
the whole transaction fail and nothing moves."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import GitFailure
from ..model.ids import Oid
from .objects import Objects


@dataclass(frozen=True)
class RefUpdate:
    ref: str
    new: Oid | None  # None: delete the ref
    old: Oid | None  # None: the ref must not exist


class RefTransactionFailed(GitFailure):
    """A ref transaction did not happen (a ref moved meanwhile, a hook refused, ...)."""

    def __init__(self, message: str, git_message: str) -> None:
        super().__init__(message)
        self.git_message = git_message

    @property
    def hook_refused(self) -> bool:
        return "hook" in self.git_message.lower()


class Refs(Objects):
    def rev_parse(self, rev: str) -> Oid | None:
        """The commit ``rev`` names, or None when it names none: asked of the persistent
        ``cat-file --batch-check``, which reads the refs again at each question (a process
        less each time: HEAD is asked several times a command)."""
        if "\n" in rev or not rev:
            return None
        try:
            header = self._batch_headers("--batch-check", [rev + "^{commit}"])[0]
        except GitFailure:  # git died of the name (``@{upstream}`` of a branch without one)
            args = ["rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"]
            proc = self.run(*args, check=False)
            return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None
        words = header.split(b" ")
        if len(words) != 3 or words[1] != b"commit":
            return None  # "<rev> missing", "<rev> ambiguous"
        return Oid(words[0].decode())

    def resolve(self, rev: str) -> Oid | None:
        """The object ``rev`` names, whatever its type, or None (a ref's id even when the
        object is missing: what is wrong with a broken ref is said from it)."""
        proc = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", rev, check=False)
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def head(self) -> Oid | None:
        return self.rev_parse("HEAD")

    def head_ref(self) -> str | None:
        """The branch HEAD points at (refs/heads/...), or None when detached."""
        if "head_ref" not in self._memo:  # patchstack never switches branches
            proc = self.run("symbolic-ref", "-q", "HEAD", check=False)
            self._memo["head_ref"] = proc.stdout.decode("utf-8", "surrogateescape").strip() or None
        ref: str | None = self._memo["head_ref"]
        return ref

    def knows_head_ref(self, ref: str | None) -> None:
        """What `head_ref` answers for this command, told by the process that found the
        repository (`repo.find_repo`)."""
        self._memo["head_ref"] = ref

    def upstream_of_head(self) -> str | None:
        proc = self.run(
            "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False
        )
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", "surrogateescape").strip() or None

    def remote_default(self) -> str | None:
        """The remote's default branch as ``origin/main``: of origin, else of the only remote;
        its ``refs/remotes/R/HEAD`` (what ``git clone`` and ``git remote set-head`` set), else
        ``R/main`` or ``R/master``. None without a remote or such a branch."""
        remotes = self.out("remote").split()
        remote = "origin" if "origin" in remotes else (remotes[0] if len(remotes) == 1 else None)
        if remote is None:
            return None
        proc = self.run("symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD", check=False)
        target = proc.stdout.decode("utf-8", "surrogateescape").strip()
        if proc.returncode == 0 and target.startswith("refs/remotes/"):
            return target.removeprefix("refs/remotes/")
        for name in ("main", "master"):
            if self.ref_exists(f"refs/remotes/{remote}/{name}"):
                return f"{remote}/{name}"
        return None

    def ref_transaction(self, updates: Sequence[RefUpdate], message: str = "") -> None:
        """Move every ref of ``updates`` at once, or none (`RefTransactionFailed`)."""
        if not updates:
            return
        for u in updates:
            self.forget_ref(u.ref)
        null = self.fmt.null
        lines = ["start"]
        for u in updates:
            old = u.old or null
            lines.append(f"update {u.ref} {u.new} {old}" if u.new else f"delete {u.ref} {old}")
        lines += ["prepare", "commit"]
        args = ["update-ref", "--stdin"] + (["-m", message] if message else [])
        proc = self.run(*args, input=("\n".join(lines) + "\n").encode(), check=False)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise RefTransactionFailed(f"git update-ref failed: {err}", err)

    def set_ref(self, ref: str, new: str | None, old: str | None) -> bool:
        """Move (or delete, ``new`` None) a ref if it still holds ``old``; False when it moved."""
        try:
            self.ref_transaction(
                [RefUpdate(ref, Oid(new) if new else None, Oid(old) if old else None)]
            )
        except RefTransactionFailed:
            return False
        return True

    def delete_ref(self, ref: str) -> None:
        self.forget_ref(ref)
        self.run("update-ref", "-d", ref, check=False)

    def forget_ref(self, ref: str) -> None:
        for key in [
            k for k in self._memo if isinstance(k, tuple) and k[0] == "log" and k[1] == ref
        ]:
            del self._memo[key]

    def tips_under(self, prefix: str) -> list[tuple[str, Oid, str]]:
        """(ref, commit, its message) of every ref under ``prefix``, in one process."""
        fmt = "--format=%(refname)%00%(objectname)%00%(contents)%00"
        out = self.run("for-each-ref", fmt, prefix).stdout.decode("utf-8", "surrogateescape")
        fields = out.split("\0")
        return [
            (fields[i].strip(), Oid(fields[i + 1]), fields[i + 2])
            for i in range(0, len(fields) - 2, 3)
        ]

    def read_as_absent(self, ref: str) -> None:
        """For the rest of this command, `messages` reads ``ref`` as absent (a command that
        only reads goes on past a log git cannot read, having said so)."""
        self._memo[("absent", ref)] = True

    def ref_names(self) -> list[str]:
        """Branches, remote-tracking branches and tags, named as git's own completion names
        them (``main``, ``origin/main``, ``v1.0``)."""
        out = self.out(
            "for-each-ref",
            "--format=%(refname:lstrip=2)",
            "refs/heads",
            "refs/remotes",
            "refs/tags",
        )
        return [name for name in out.splitlines() if name]

    def tagged_commits(self) -> dict[Oid, list[str]]:
        """The commit each tag names (an annotated tag peeled) -> the tags' names (``v1.0``)."""
        fmt = "--format=%(objectname) %(*objectname) %(refname:lstrip=2)"
        found: dict[Oid, list[str]] = {}
        for line in self.out("for-each-ref", fmt, "refs/tags").splitlines():
            words = line.split(" ", 2)
            if len(words) == 3:
                oid = words[1] or words[0]
                found.setdefault(Oid(oid), []).append(words[2])
        return found

    def _tip_message(self, ref: str) -> tuple[Oid, str] | None:
        """(commit, message) of the commit ``ref`` names, as ``log --format=%H%x01%B -n1``
        gives it, read whole from the batch ``cat-file``; None when it cannot be read so
        (then ``log`` says why) or when git would re-encode it (an ``encoding`` header)."""
        oid = self.rev_parse(ref)
        found = self.read_object(oid) if oid is not None else None
        if oid is None or found is None or found[0] != "commit":
            return None
        head, sep, message = found[1].partition(b"\n\n")
        if not sep or b"\nencoding " in b"\n" + head:
            return None
        return oid, message.decode("utf-8", "surrogateescape")

    def ref_exists(self, ref: str) -> bool:
        """Whether ``ref`` names something: the batch ``cat-file`` answers when it names an
        object there; ``rev-parse`` says whether a ref names a missing one."""
        if "\n" not in ref and ref:
            words = self._batch_headers("--batch-check", [ref])[0].split(b" ")
            if len(words) == 3 and words[2].isdigit():
                return True
        return self.run("rev-parse", "--verify", "--quiet", ref, check=False).returncode == 0

    def operation_in_progress(self) -> tuple[str, str] | None:
        """A git operation stopped half way in this work tree, as (name, the file that shows
        it): merge, rebase, cherry-pick, revert, am or bisect; None when there is none."""
        import os

        marks = (
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
            ("BISECT_LOG", "bisect"),
        )
        for name, op in marks:
            path = os.path.join(self.git_dir, name)
            if os.path.lexists(path):
                if name == "rebase-apply" and os.path.exists(os.path.join(path, "applying")):
                    op = "am"
                return op, path
        todo = os.path.join(self.git_dir, "sequencer", "todo")
        if os.path.exists(todo):
            with open(todo, encoding="utf-8", errors="replace") as f:
                first = f.readline().split()
            return ("revert" if first[:1] == ["revert"] else "cherry-pick"), todo
        return None

    def messages(self, ref: str, limit: int | None = None) -> list[tuple[Oid, str]]:
        """(commit, message) along the first-parent chain of ``ref``, newest first; [] when
        there is no such ref (a `GitFailure` when there is one git cannot read)."""
        key = ("log", ref, limit)
        if key in self._memo:
            return list(self._memo[key])
        if ("absent", ref) in self._memo:
            return []
        if not self.ref_exists(ref):
            if os.path.isfile(os.path.join(self.common_dir, *ref.split("/"))):
                raise GitFailure(f"{ref} is broken (git reads no object id in its file)")
            self._memo[key] = []
            return []
        if limit == 1:  # the tip (every command reads it): from the batch ``cat-file``
            tip = self._tip_message(ref)
            if tip is not None:
                self._memo[key] = [tip]
                return [tip]
        args = ["log", "--first-parent", "-z", "--format=%H%x01%B"]
        if limit is not None:
            args.append(f"-n{limit}")
        out = self.run(*args, "--end-of-options", f"{ref}^{{commit}}", "--").stdout
        result = []
        for rec in out.decode("utf-8", "surrogateescape").split("\0"):
            if rec.strip():
                oid, _, message = rec.lstrip("\n").partition("\x01")
                result.append((Oid(oid), message))
        self._memo[key] = list(result)
        return result
