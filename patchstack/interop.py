"""Import and export: quilt series, git commit ranges and mboxes.

Import reads patches from elsewhere and writes them into the series directory in patchstack's
own form. It never touches the work tree, the index or the branch: it plans in the object
database and writes only files of the series directory (patch files first, the series file last,
each atomically). ``patchstack push --all`` then applies them.

How a patch is imported. Every patch is made a commit on a throwaway chain that starts at the
series base (or, with ``--append``, at the base plus every patch already in the series): patch k
is applied on the tree after patch k-1 with ``git apply --cached`` on a temporary index, which
allows line offsets but never fuzz. The patch files are then regenerated from that chain with
one ``git format-patch`` (full index lines, ``-p1``), so an imported file says exactly what
its commit does, and the ``-pN`` of a quilt entry is no longer needed.

A patch that does not apply exactly (quilt would need fuzz) is never applied with fuzz. It is
merged three-way instead, and the import report names it:

1. when its ``index`` lines name blobs this repository has, those are its real preimage: apply
   the patch to them and merge the result into the chain with ``merge-tree`` (what ``git am -3``
   does);
2. otherwise the preimage is rebuilt from the patch itself: find where each hunk belongs the way
   ``patch --fuzz=2`` would (`locate_preimage`), put the hunk's own context and removed lines
   there, apply the patch to that exactly, and merge. The lines fuzz would have ignored are then
   a change on "our" side, and git's merge refuses when it touches the patch's own lines, where
   fuzz would silently apply the change to the wrong code.

Commits of a range are carried like a cherry-pick: the commit's tree is used as it is when the
chain is at its parent, and merged three-way otherwise.

Tags: a quilt entry's comment is read as patchstack tags (``# essential, nvidia``) or as
Mercurial MQ / guilt guards (``#+essential #-foo``: a positive guard that names a tag sets it,
other guards are kept as labels); a commit's or mail's ``Patchstack-Tag:`` trailer sets its tag
(and ``Patchstack-Patch:`` its name). Patches still without a tag get ``--tag``; without it the
import stops with exit status 2 and lists them, having written nothing.

A series that already has patches is never silently extended: ``--append`` says so.

Export writes what other tools apply: ``export quilt`` a series file (tags in comments, which
quilt ignores) and the patch files, after proving that each applies exactly on the base plus the
patches before it (so ``quilt push -a --fuzz=0`` applies them); ``export mbox`` one mail per
patch from the canonical chain, with the ``Patchstack-Patch``/``Patchstack-Tag`` trailers, so
``git am`` applies it and ``import mbox`` or ``import commits`` gets names and tags back.
"""

from __future__ import annotations

import email.utils
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from .checkout import Checkout as Workspace
from .commands.state import make_engine, read_stack
from .engine.merging import conflict_hunks, merge
from .errors import ConflictError, GitFailure, InputError, PatchstackError, RefusedError
from .files import write_atomic
from .git import Git, TempIndex
from .model import trailers
from .model.conflict import Conflict
from .model.ids import Oid
from .model.patchfile import FileDiff, Patch, decode, parse_patch
from .model.quilt_tolerance import tolerate
from .model.series import TAGS, Entry, Series, new_series, parse_tags, validate_name
from .transaction import FileWrite, Plan, publish

MAX_FUZZ = 2  # quilt's (GNU patch's) default
_GUARD_RE = re.compile(r"#\s*([+-])([^\s#]+)")
_ANCHOR_IDENT = ("patchstack <patchstack@invalid>", "1000000000 +0000")


# -- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuiltLine:
    """One entry of a quilt series file."""

    file: str  # as written, relative to the quilt directory (may contain '/')
    strip: int
    tag: str | None
    labels: tuple[str, ...]
    lineno: int


@dataclass(frozen=True)
class Source:
    """One patch to import, read but not yet applied."""

    name: str
    origin: str  # for messages: a file, "mail 3 of FILE", "commit 1a2b3c4d5e6f"
    message: str  # subject, blank line, description; no patchstack trailers
    author: str | None  # "Name <email>"
    date: str | None  # anything git accepts
    tag: str | None = None
    labels: tuple[str, ...] = ()
    diff: bytes | None = None  # the patch to apply (quilt, mbox)
    strip: int = 1
    patch: Patch | None = None
    trees: tuple[Oid, Oid] | None = None  # (parent tree, tree) of a commit


@dataclass(frozen=True)
class Imported:
    name: str
    tag: str
    labels: tuple[str, ...]
    origin: str
    method: str  # "exact", "three-way merge"
    notes: tuple[str, ...]  # why a merge was needed, per file and hunk


@dataclass(frozen=True)
class ImportResult:
    series_path: str
    base: Oid
    created: bool  # the series file was created by this import
    patches: tuple[Imported, ...]
    skipped: tuple[tuple[str, str], ...]  # (name or origin, why)
    warnings: tuple[str, ...] = ()  # what was read as GNU patch reads it (quilt_tolerance)

    @property
    def merged(self) -> list[Imported]:
        return [p for p in self.patches if p.method != "exact"]


@dataclass(frozen=True)
class ExportResult:
    path: str
    names: tuple[str, ...]


# -- pure helpers -------------------------------------------------------------------------------


def parse_quilt_series(text: str, path: str) -> list[QuiltLine]:
    """Entries of a quilt (or MQ / guilt) series file; comment and blank lines are skipped."""
    result: list[QuiltLine] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = raw.strip()
        if not body or body.startswith("#"):
            continue
        entry_part, hash_, comment = body.partition("#")
        words = entry_part.split()
        file = words[0]
        if file.startswith("/") or ".." in file.split("/"):
            raise InputError(path, lineno, f"patch path '{file}' leaves the quilt directory")
        strip = 1
        for word in words[1:]:
            m = re.fullmatch(r"-p(\d{1,2})", word)
            if m:
                strip = int(m.group(1))
            elif word == "-R":
                raise InputError(
                    path,
                    lineno,
                    f"reversed patch (-R) '{file}' is not supported",
                    "reverse the patch file (interdiff, or 'patch -R') and drop -R",
                )
            else:
                raise InputError(path, lineno, f"unknown option '{word}' for '{file}'")
        tag, labels = comment_tags(hash_ + comment, path, lineno)
        if file in seen:
            raise InputError(path, lineno, f"'{file}' listed twice (first on line {seen[file]})")
        seen[file] = lineno
        result.append(QuiltLine(file, strip, tag, labels, lineno))
    return result


def comment_tags(comment: str, path: str, lineno: int) -> tuple[str | None, tuple[str, ...]]:
    """Tag and labels from a series entry's comment: guards, or patchstack's own tag list."""
    guards = _GUARD_RE.findall(comment)
    if guards:
        tags = [name for sign, name in guards if sign == "+" and name in TAGS]
        if len(set(tags)) > 1:
            raise InputError(
                path,
                lineno,
                "more than one tag among the guards: " + ", ".join(tags),
                "a patch has exactly one of " + ", ".join(TAGS),
            )
        labels = tuple(sign + name for sign, name in guards if not (sign == "+" and name in TAGS))
        return (tags[0] if tags else None), labels
    text = comment.lstrip("#").strip()
    if not text:
        return None, ()
    try:
        return parse_tags(text, path, lineno)
    except InputError:
        return None, ()  # a free comment, not tags


def quilt_name(file: str) -> str:
    """A patchstack name for a quilt patch path: folders joined with '--', odd characters '_'."""
    name = unicodedata.normalize("NFC", "--".join(part for part in file.split("/") if part))
    name = "".join(ch if ch.isprintable() else "_" for ch in name)
    name = re.sub(r"[^\w.+@=~-]", "_", name)
    name = re.sub(r"\.\.+", ".", name)
    if not re.match(r"[^\W]", name):
        name = "_" + name
    return name


def slug(subject: str, limit: int = 52) -> str:
    """A file name from a subject, as ``git format-patch`` makes one (without the number)."""
    text = re.sub(r"[^A-Za-z0-9._]+", "-", subject)
    text = re.sub(r"\.\.+", ".", text).strip("-.")
    text = text[:limit].rstrip("-.")
    return (text or "patch") + ".patch"


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    k = 2
    while f"{stem}-{k}{dot}{ext}" in taken:
        k += 1
    return f"{stem}-{k}{dot}{ext}"


def split_own_trailers(message: str) -> tuple[str, str | None, str | None]:
    """(message without patchstack trailers, tag, name) from a commit message or mail body."""
    found = trailers.read(message)
    return trailers.strip(message), found.tag, found.patch


def patch_message(patch: Patch, fallback: str) -> str:
    """A commit message for a patch read from a file: subject, description, DEP-3 fields."""
    subject, description = patch.subject, patch.description
    if subject is None and description:
        # A free-text header (quilt's): its first line is the subject when it stands alone.
        first, _, rest = description.partition("\n")
        if first.strip() and (not rest or not rest.split("\n", 1)[0].strip()) and len(first) < 100:
            subject, description = first.strip(), rest.strip("\n")
    subject = subject or fallback
    parts = [subject]
    if description.strip():
        parts.append(description.strip("\n"))
    if patch.fields:
        parts.append("\n".join(f"{k}: {v}" for k, v in patch.fields))
    return "\n\n".join(parts) + "\n"


def normalize_author(text: str | None) -> str | None:
    """ "Name <email>" from a From:/Author: value, or None when there is none."""
    if not text or not text.strip():
        return None
    text = " ".join(text.split())
    if "<" not in text and "@" not in text:
        return f"{text} <>"  # a name alone (DEP-3 allows it); git accepts an empty email
    name, addr = email.utils.parseaddr(text)
    if not name and not addr:
        return None
    name = (name or addr.split("@")[0]).strip().replace("<", "").replace(">", "")
    return f"{name} <{addr.strip()}>"


def normalize_date(text: str | None) -> str | None:
    """A date git accepts ("<epoch> <+hhmm>"), or None when ``text`` is not a full date."""
    if not text or not text.strip():
        return None
    text = text.strip()
    if re.fullmatch(r"\d+ [+-]\d{4}", text):
        return text
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
    if when.tzinfo is None:
        return None
    offset = int(when.utcoffset().total_seconds()) // 60
    sign = "+" if offset >= 0 else "-"
    return f"{int(when.timestamp())} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def locate_preimage(
    old: bytes, fd: FileDiff, max_fuzz: int = MAX_FUZZ
) -> tuple[bytes, tuple[int, ...]] | None:
    """The file ``old`` with each hunk's preimage put where ``patch --fuzz`` would place it.

    Hunks are placed in order, nearest to where their header says first (carrying the offset
    of the previous hunk), with all context, else up to ``max_fuzz`` context lines ignored at
    either end. The ignored lines are replaced by the hunk's own, so that the patch applies to
    the result exactly. Returns (that file, the fuzz each hunk needed) or None when a hunk fits
    nowhere.
    """
    cur = decode(old).splitlines(keepends=True)
    keys = [ln[:-1] if ln.endswith("\n") else ln for ln in cur]
    out: list[str] = []
    pos = offset = 0
    fuzzes = []
    for h in fd.hunks:
        body = [ln for ln in h.lines if not ln.startswith("\\")]
        pre: list[str] = []
        for i, ln in enumerate(h.lines):
            if ln[:1] in (" ", "-"):
                no_newline = i + 1 < len(h.lines) and h.lines[i + 1].startswith("\\")
                pre.append(ln[1:] + ("" if no_newline else "\n"))
        pre_keys = [ln[:-1] if ln.endswith("\n") else ln for ln in pre]
        lead = next((i for i, ln in enumerate(body) if ln[:1] != " "), len(body))
        trail = next((i for i, ln in enumerate(reversed(body)) if ln[:1] != " "), len(body))
        nominal = h.old_start - 1 if h.old_len else h.old_start
        found = None
        for fuzz in range(max_fuzz + 1):
            front, back = min(fuzz, lead), min(fuzz, trail)
            if fuzz and not (front or back):
                break
            core = pre_keys[front : len(pre_keys) - back]
            want = nominal + offset + front
            lo, hi = pos + front, len(keys) - len(core) - back
            for p in _nearest_first(want, lo, hi):
                if keys[p : p + len(core)] == core:
                    found = (p - front, p + len(core) + back, max(front, back))
                    break
            if found:
                break
        if found is None:
            return None
        start, end, used = found
        out.extend(cur[pos:start])
        out.extend(pre)
        pos = end
        offset = start - nominal
        fuzzes.append(used)
    out.extend(cur[pos:])
    return "".join(out).encode("utf-8", "surrogateescape"), tuple(fuzzes)


def _nearest_first(want: int, lo: int, hi: int):
    if lo > hi:
        return
    want = min(max(want, lo), hi)
    yield want
    for d in range(1, hi - lo + 1):
        if want - d >= lo:
            yield want - d
        if want + d <= hi:
            yield want + d
        if want - d < lo and want + d > hi:
            return


# -- reading sources ----------------------------------------------------------------------------


def read_quilt(
    directory: str, display: str, exists: Callable[[str], bool] = lambda _p: False
) -> tuple[list[Source], list[tuple[str, str]], list[str]]:
    """The patches of a quilt series, read as GNU patch reads them (`tolerate`), with the
    warnings that says; ``exists`` tells which paths the tree they start on has."""
    series_path = os.path.join(directory, "series")
    shown = os.path.join(display, "series")
    if not os.path.isfile(series_path):
        raise PatchstackError(
            f"no quilt series file at {shown}", "give the folder that holds 'series'"
        )
    with open(series_path, encoding="utf-8", errors="surrogateescape") as f:
        lines = parse_quilt_series(f.read(), shown)
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    warnings: list[str] = []
    names: dict[str, str] = {}
    created: set[str] = set()
    top = os.path.realpath(directory)
    for ql in lines:
        file_shown = os.path.join(display, ql.file)
        path = os.path.join(directory, ql.file)
        if not os.path.isfile(path):
            raise InputError(shown, ql.lineno, f"patch file '{ql.file}' not found")
        if os.path.commonpath([os.path.realpath(path), top]) != top:
            raise InputError(
                shown,
                ql.lineno,
                f"patch file '{ql.file}' is a symbolic link out of the quilt directory",
                "copy the patch into the quilt directory instead of linking to it",
            )
        name = quilt_name(ql.file)
        problem = validate_name(name)
        if problem:
            raise InputError(shown, ql.lineno, problem)
        if name in names:
            raise InputError(
                shown,
                ql.lineno,
                f"'{ql.file}' and '{names[name]}' both become '{name}'",
                "rename one of the patch files",
            )
        names[name] = ql.file
        with open(path, "rb") as fh:
            data = fh.read()
        if not _has_diff(data):
            skipped.append((ql.file, "holds no diff"))
            continue
        tolerated = tolerate(data, file_shown, ql.strip, lambda p: p in created or exists(p))
        warnings.extend(tolerated.warnings)
        data = tolerated.data
        if not _has_diff(data):
            skipped.append((ql.file, "holds only binary changes without data"))
            continue
        patch = parse_patch(data, file_shown, ql.strip)
        created.update(f.new_path for f in patch.files if f.new_path and not f.old_path)
        message = patch_message(patch, name.removesuffix(".patch").removesuffix(".diff"))
        if tolerated.notes:
            message = message.rstrip("\n") + "\n\n" + "\n".join(tolerated.notes) + "\n"
        sources.append(
            Source(
                name,
                file_shown,
                message,
                normalize_author(patch.author),
                normalize_date(patch.date),
                ql.tag,
                ql.labels,
                diff=data,
                strip=ql.strip,
                patch=patch,
            )
        )
    return sources, skipped, warnings


def _has_diff(data: bytes) -> bool:
    return re.search(rb"^(diff --git |--- |@@ )", data, re.MULTILINE) is not None


def read_commits(git: Git, rng: str) -> tuple[list[Source], list[tuple[str, str]], Oid | None]:
    """Sources for the commits of ``rng``, and the parent of the first (the natural base)."""
    if ".." not in rng:
        raise PatchstackError(f"'{rng}' is not a range", "give A..B, e.g. origin/main..HEAD")
    commits = git.commit_range(rng)
    if not commits:
        raise PatchstackError(f"the range '{rng}' holds no commits", "give A..B with A below B")
    merges = [c.oid[:12] for c in commits if len(c.parents) > 1]
    if merges:
        raise PatchstackError(
            "merge commits cannot become patches: " + ", ".join(merges),
            "import a linear range (rebase it first), or split the range around the merges",
        )
    trees = {c.oid: c.tree for c in commits}
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    taken: set[str] = set()
    for c in commits:
        parent_tree = (
            git.fmt.empty_tree
            if not c.parents
            else trees.get(c.parents[0]) or git.tree_of(c.parents[0])
        )
        message, _tag, _name = split_own_trailers(c.message)
        if parent_tree == c.tree:
            skipped.append((f"commit {c.oid[:12]}", "changes nothing"))
            continue
        name = _chosen_name(_name, message, taken)
        sources.append(
            Source(
                name,
                f"commit {c.oid[:12]}",
                message,
                c.author,
                c.date,
                _tag,
                (),
                trees=(parent_tree, c.tree),
            )
        )
    first = commits[0]
    return sources, skipped, (first.parents[0] if first.parents else None)


def _chosen_name(wanted: str | None, message: str, taken: set[str]) -> str:
    name = wanted if wanted and validate_name(wanted) is None else None
    if name is None:
        subject = " ".join(message.split("\n\n", 1)[0].split())
        name = slug(subject)
    name = unique_name(name, taken)
    taken.add(name)
    return name


def read_mbox(git: Git, path: str, display: str) -> tuple[list[Source], list[tuple[str, str]]]:
    if not os.path.isfile(path):
        raise PatchstackError(f"no such file: {display}", "give an mbox file")
    sources: list[Source] = []
    skipped: list[tuple[str, str]] = []
    taken: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="patchstack-mbox-") as tmp:
        split_dir = os.path.join(tmp, "split")
        os.mkdir(split_dir)
        mails = git.mailsplit(path, split_dir)
        for k, mail_path in enumerate(mails, start=1):
            where = f"mail {k} of {display}"
            with open(mail_path, "rb") as f:
                info, body, diff = git.mailinfo(f.read(), tmp)
            if not diff.strip():
                skipped.append((where, "holds no patch (a cover letter?)"))
                continue
            patch = parse_patch(diff, where)
            text, tag, wanted = split_own_trailers(decode(body).strip("\n"))
            subject = info.get("Subject", "").strip() or "patch"
            message = subject + ("\n\n" + text.strip("\n") if text.strip() else "") + "\n"
            author = None
            if info.get("Email") or info.get("Author"):
                author = normalize_author(f"{info.get('Author', '')} <{info.get('Email', '')}>")
            sources.append(
                Source(
                    _chosen_name(wanted, message, taken),
                    where,
                    message,
                    author,
                    normalize_date(info.get("Date")),
                    tag,
                    (),
                    diff=diff,
                    strip=1,
                    patch=patch,
                )
            )
    return sources, skipped


# -- importing ----------------------------------------------------------------------------------


def import_quilt(
    ws: Workspace, directory: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    full = os.path.abspath(os.path.join(ws.cwd, directory))
    if os.path.isdir(full) and os.path.abspath(ws.series_dir) == full:
        raise RefusedError(
            f"{directory} is the series directory itself; importing would overwrite its files",
            f"move it first (mv {directory} quilt-patches) and import from there",
        )
    tree = _start_tree(ws, base)
    listing: list[dict[str, tuple[str, str]]] = []

    def exists(path: str) -> bool:
        if not listing:
            listing.append(ws.git.ls_tree(tree))
        return path in listing[0]

    sources, skipped, warnings = read_quilt(full, ws.display(full), exists)
    result = _import(ws, sources, skipped, tag, append, base, None)
    return replace(result, warnings=tuple(warnings))


def _start_tree(ws: Workspace, base: str | None) -> Oid:
    """The tree a quilt series is imported onto (for GNU patch's "does this file exist")."""
    if base:
        return ws.git.tree_of(_base(ws.git, base))
    if ws.exists():
        series = ws.load_series()
        if series.base:
            return ws.git.tree_of(Oid(series.base))
    return ws.git.tree_of(read_stack(ws.git).base)


def import_commits(
    ws: Workspace, rng: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    sources, skipped, natural = read_commits(ws.git, rng)
    return _import(ws, sources, skipped, tag, append, base, natural)


def import_mbox(
    ws: Workspace, path: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    full = os.path.abspath(os.path.join(ws.cwd, path))
    sources, skipped = read_mbox(ws.git, full, ws.display(full))
    return _import(ws, sources, skipped, tag, append, base, None)


def _import(
    ws: Workspace,
    sources: list[Source],
    skipped: list[tuple[str, str]],
    tag_text: str | None,
    append: bool,
    base_rev: str | None,
    natural_base: Oid | None,
) -> ImportResult:
    git = ws.git
    if not sources:
        raise PatchstackError("nothing to import: no patch found", None)
    sources = _resolve_tags(sources, tag_text)
    created = not ws.exists()
    if created:
        if append:
            raise PatchstackError("--append: there is no series to append to", "drop --append")
        base = _base(git, base_rev) if base_rev else natural_base or read_stack(git).base
        ref = base_rev if base_rev and base_rev != base else None
        series = new_series(base, ref)
        start_tree = git.tree_of(base)
    else:
        series = ws.load_series()
        if series.entries and not append:
            raise RefusedError(
                f"the series at {ws.display(ws.series_path)} already has"
                f" {len(series.entries)} patch(es)",
                "add --append to put the imported patches after them, or import into another"
                " series directory (--dir)",
            )
        stack = read_stack(git)
        if series.base is None:
            series = series.with_base(stack.base)
        base = Oid(series.base)
        if base_rev and _base(git, base_rev) != base:
            raise PatchstackError(
                f"--base {base_rev} is not the series base {base[:12]}",
                "drop --base: patches are imported onto the series base",
            )
        engine = make_engine(ws, series, stack)
        try:
            start_tree = engine.canonical(len(series.entries))
        finally:
            engine.close()
    clash = [s.name for s in sources if s.name in series]
    if clash:
        raise PatchstackError(
            "already in the series: " + ", ".join(clash), "rename the patches, or drop them"
        )
    built, more_skipped = _build(git, base, start_tree, sources)
    writes = []
    for src, data, _method, _notes in built:
        target = ws.patch_path(src.name)
        if os.path.exists(target):
            with open(target, "rb") as f:
                if f.read() != data:
                    raise RefusedError(
                        f"{ws.display(target)} already exists and is not in the series",
                        "remove or rename it, then import again; nothing was changed",
                    )
        writes.append((target, data))
    last = series.names[-1] if series.names else None
    for src, _data, _m, _n in built:
        series = series.insert(Entry(src.name, src.tag or "", src.labels), last)
        last = src.name
    files = [FileWrite(target, data) for target, data in writes]
    files.append(FileWrite(ws.series_path, series.format().encode("utf-8", "surrogateescape")))
    head = read_stack(git).head
    publish(ws, Plan("import", head, head, tuple(files)))
    return ImportResult(
        ws.series_path,
        base,
        created,
        tuple(
            Imported(s.name, s.tag or "", s.labels, s.origin, method, notes)
            for s, _d, method, notes in built
        ),
        tuple(skipped + more_skipped),
    )


def _base(git: Git, rev: str) -> Oid:
    oid = git.rev_parse(rev)
    if oid is None:
        raise PatchstackError(f"unknown revision '{rev}'", "give a commit, branch or tag")
    return oid


def _resolve_tags(sources: list[Source], tag_text: str | None) -> list[Source]:
    default = parse_tags(tag_text, "--tag", 0) if tag_text else None
    result, untagged, bad = [], [], []
    for s in sources:
        if s.tag is not None and s.tag not in TAGS:
            bad.append(f"{s.name} ('{s.tag}')")
        elif s.tag is None:
            if default is None:
                untagged.append(s.name)
            else:
                s = replace(s, tag=default[0], labels=s.labels + default[1])
        result.append(s)
    if bad:
        raise PatchstackError(
            "unknown tag on: " + ", ".join(bad), "a tag is one of " + ", ".join(TAGS)
        )
    if untagged:
        raise PatchstackError(
            f"{len(untagged)} patch(es) without a tag: " + ", ".join(untagged),
            "give --tag TAG for them (or tag them at the source: a '#+essential' guard in the"
            " quilt series, a 'Patchstack-Tag:' trailer); nothing was changed",
        )
    return result


def _build(
    git: Git, base: Oid, start_tree: Oid, sources: Sequence[Source]
) -> tuple[list[tuple[Source, bytes, str, tuple[str, ...]]], list[tuple[str, str]]]:
    """Apply each source on the chain; regenerate every patch file from the chain's commits."""
    default: list[tuple[str, str]] = []

    def default_ident() -> tuple[str, str]:
        if not default:
            date = git.commit_date(base)
            default.append((git.ident()[0], date))
        return default[0]

    anchor = git.commit_tree(start_tree, [], "patchstack import\n", *_ANCHOR_IDENT)
    parent, tree = anchor, start_tree
    done: list[tuple[Source, str, tuple[str, ...]]] = []
    skipped: list[tuple[str, str]] = []
    held: list[Oid | None] = [None]  # the tree the temporary index holds, when known
    with git.temp_index() as idx:
        for src in sources:
            new_tree, method, notes = _place(git, idx, tree, src, held)
            if new_tree == tree:
                skipped.append((src.name, "changes nothing on top of the patches before it"))
                continue
            author = src.author or default_ident()[0]
            date = src.date or default_ident()[1]
            message = src.message.rstrip("\n") + "\n"
            message = trailers.write(message, src.name, src.tag or "")
            parent = git.commit_tree(new_tree, [parent], message, author, date)
            tree = new_tree
            done.append((src, method, notes))
    mails = git.format_patches(anchor, parent) if done else []
    if len(mails) != len(done):
        raise GitFailure(f"format-patch gave {len(mails)} patches for {len(done)} commits")
    built = []
    for (src, method, notes), mail in zip(done, mails, strict=True):
        data = trailers.strip_from_mail(mail)
        parse_patch(data, src.name)  # what we write must read back
        built.append((src, data, method, notes))
    return built, skipped


def _place(
    git: Git, idx: TempIndex, tree: Oid, src: Source, held: list[Oid | None]
) -> tuple[Oid, str, tuple[str, ...]]:
    """The tree after ``src`` on ``tree``: exact, or by a three-way merge; never with fuzz."""
    if src.trees is not None:
        parent_tree, commit_tree = src.trees
        if parent_tree == tree:
            return commit_tree, "exact", ()
        merged = merge(git, parent_tree, tree, commit_tree, ("imported so far", src.name))
        if not merged.clean:
            _conflict(git, src, merged.tree, merged.conflicted, merged.messages)
        return merged.tree, "three-way merge", ("its parent differs from the patches before it",)
    assert src.diff is not None and src.patch is not None
    if held[0] != tree:
        idx.read_tree(tree)
    held[0] = None
    ok, err = idx.apply(src.diff, src.strip)
    if ok:
        held[0] = idx.write_tree()
        return held[0], "exact", ()
    for preimage in (_preimage_from_ids, _preimage_from_hunks):
        found = preimage(git, idx, tree, src)
        if found is None:
            continue
        pre_tree, notes = found
        idx.read_tree(pre_tree)
        ok2, _ = idx.apply(src.diff, src.strip)
        if not ok2:
            continue
        post_tree = idx.write_tree()
        merged = merge(git, pre_tree, tree, post_tree, ("imported so far", src.name))
        if merged.clean:
            return merged.tree, "three-way merge", notes
        _conflict(git, src, merged.tree, merged.conflicted, merged.messages)
    raise ConflictError(
        f"{src.origin} does not apply, not even by a three-way merge, on the base plus the"
        " patches before it",
        Conflict(src.name, src.patch.paths, detail=err.strip()),
        "fix the patch (or the --base); nothing was changed",
    )


def _preimage_from_ids(
    git: Git, idx: TempIndex, tree: Oid, src: Source
) -> tuple[Oid, tuple[str, ...]] | None:
    """The tree with each file as the patch's index lines name it, when git has those blobs."""
    files = [f for f in src.patch.files if f.old_path and f.old_id and set(f.old_id) != {"0"}]
    if not files:
        return None
    found = git.resolve_blobs(f.old_id for f in files)
    if not all(found.values()):
        return None
    listing = git.ls_tree(tree)
    entries = []
    for f in files:
        mode = f.old_mode or listing.get(f.old_path, ("100644", ""))[0]
        entries.append((mode, found[f.old_id], f.old_path))
    idx.read_tree(tree)
    idx.set_entries(entries)
    notes = tuple(f"{f.old_path}: merged from the blob its index line names" for f in files)
    return idx.write_tree(), notes


def _preimage_from_hunks(
    git: Git, idx: TempIndex, tree: Oid, src: Source
) -> tuple[Oid, tuple[str, ...]] | None:
    """The tree with each hunk's own context where ``patch --fuzz`` would have put it."""
    listing = git.ls_tree(tree)
    entries, notes = [], []
    for f in src.patch.files:
        if f.old_path is None or f.binary or f.renamed or f.copied:
            continue
        if f.old_path not in listing:
            return None
        mode, blob = listing[f.old_path]
        located = locate_preimage(git.read_blob(blob), f)
        if located is None:
            return None
        text, fuzzes = located
        for h, fuzz in zip(f.hunks, fuzzes, strict=True):
            if fuzz:
                notes.append(f"{f.old_path}: hunk at line {h.old_start} needed fuzz {fuzz}")
        entries.append((mode, git.write_blob(text), f.old_path))
    if not notes:
        return None
    idx.read_tree(tree)
    idx.set_entries(entries)
    return idx.write_tree(), tuple(notes)


def _conflict(git: Git, src: Source, merged: Oid, files: Sequence[str], detail: str) -> None:
    hunks = conflict_hunks(git, merged, files)
    raise ConflictError(
        f"{src.origin} conflicts with the base plus the patches before it",
        Conflict(src.name, tuple(files), tuple(hunks), (), detail, merged),
        "fix the patch (or choose another --base); nothing was changed",
    )


# -- exporting ----------------------------------------------------------------------------------


def _chain(ws: Workspace) -> tuple[Series, list[tuple[str, Oid]], Oid]:
    """The series and its canonical chain as commits [(name, commit)], from the base."""
    git = ws.git
    series = ws.load_series()
    if not series.entries:
        raise PatchstackError("the series has no patches", "nothing to export")
    stack = read_stack(git)
    engine = make_engine(ws, series, stack)
    try:
        base = engine.canonical_base
        parent = base
        chain = []
        for k, entry in enumerate(series.entries, start=1):
            parent = engine.commit(parent, engine.canonical(k), entry.name)
            chain.append((entry.name, parent))
    finally:
        engine.close()
    return series, chain, base


def _refuse_existing(ws: Workspace, path: str, what: str) -> None:
    if os.path.isdir(path) and os.listdir(path) or os.path.isfile(path):
        state = "" if os.path.isfile(path) else " and is not empty"
        raise RefusedError(
            f"{ws.display(path)} already exists{state}",
            f"remove it or choose another {what}; nothing was changed",
        )


def export_quilt(ws: Workspace, directory: str) -> ExportResult:
    full = os.path.abspath(os.path.join(ws.cwd, directory))
    _refuse_existing(ws, full, "folder")
    series, _chain_commits, _base = _chain(ws)  # proves every patch applies exactly
    os.makedirs(full, exist_ok=True)
    for entry in series.entries:
        shutil.copyfile(ws.patch_path(entry.name), os.path.join(full, entry.name))
    write_atomic(os.path.join(full, "series"), series.format().encode("utf-8", "surrogateescape"))
    return ExportResult(full, series.names)


def export_mbox(ws: Workspace, path: str) -> tuple[ExportResult, bytes]:
    """The mbox bytes; written to ``path`` unless it is '-'."""
    full = path if path == "-" else os.path.abspath(os.path.join(ws.cwd, path))
    if path != "-":
        _refuse_existing(ws, full, "file")
    series, chain, base = _chain(ws)
    data = b"".join(ws.git.format_patches(base, chain[-1][1]))
    if path != "-":
        write_atomic(full, data)
    return ExportResult(full, series.names), data
