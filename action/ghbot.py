"""The refresh bot of the patchstack Action (``command: refresh``): standard library only.

One run: fetch upstream's branch (into FETCH_HEAD only), refresh the series onto it deferring
conflicts, in a scratch worktree of its own (the workspace's files and HEAD are never
touched), and keep one pull request of the fork up to date on a branch of its own:

- the series change as at most two commits on the fork's branch: first the patch files whose
  patch only moved (``unchanged`` or ``offset``: rewritten context or line numbers) with the
  series file when only its base line changed, then everything else (merged patches, marks);
- the body: what went upstream with its evidence, every deferred patch with its culprit
  commits and the command that brings it back, then the per-patch review;
- with ``publish: ff`` (the default, `ghpublish`), a merge on top of those commits whose
  tree is the refreshed fork (the new base, the series applied as the branch has it, the
  refreshed series folder) and whose other parent is the refreshed fork's own history: merging
  the pull request is a fast-forward of the fork's branch for every consumer;
- everything published in one ``git push --atomic --force-with-lease`` to the fork's own
  remote (``origin``) with the branch's value when the job's checkout fetched it as the lease:
  a maintainer's push (or another run) in between makes the push fail, and the run reports it
  without retrying; the upstream remote is only ever fetched from, never pushed to;
- ``auto-merge: safe`` merges only when no patch is deferred or conflicting, every verdict is
  unchanged, offset, merged or upstream with its evidence, and every probe run is effective;
- a run that fails opens (or updates) one issue in the fork, found by the marker its body
  starts with; nothing is ever filed upstream.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
from dataclasses import dataclass
from typing import Any

import ghpublish
from ghcomment import COMMENT_LIMIT, Api, code

PR_MARKER = "<!-- patchstack-refresh-bot -->"
ISSUE_MARKER = "<!-- patchstack-refresh-bot-failure -->"
DEFAULT_BRANCH = "patchstack/refresh"
SAFE_VERDICTS = ("unchanged", "offset", "merged")
ONLY_MOVED = ("unchanged", "offset")
BOT_IDENT = {
    "GIT_AUTHOR_NAME": "github-actions[bot]",
    "GIT_AUTHOR_EMAIL": "41898282+github-actions[bot]@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "github-actions[bot]",
    "GIT_COMMITTER_EMAIL": "41898282+github-actions[bot]@users.noreply.github.com",
}


class BotFailure(Exception):
    """The run cannot go on: the issue in the fork says why."""


class LostRace(Exception):
    """The bot's branch moved since the job's checkout: reported, never retried blindly."""


@dataclass(frozen=True)
class Settings:
    upstream_url: str
    upstream_branch: str
    branch: str  # the bot's own branch in the fork
    base: str  # the fork's branch the pull request goes into
    folder: str  # the series folder, relative to the top of the work tree
    auto_merge: str  # never | safe
    probes: str  # auto | always | never
    publish: str = "ff"  # ff | series (`ghpublish`)


def _norm(url: str) -> str:
    url = url.strip().rstrip("/")
    url = url[:-4] if url.endswith(".git") else url
    return os.path.realpath(url) if os.path.isdir(url) else url


def _series_base(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            words = line.split()
            if words[:2] == ["#", "base:"] and len(words) >= 3:
                return words[2]
    raise BotFailure(f"{path}: no '# base:' line: the series has no base to refresh from")


def _files(folder: str) -> dict[str, bytes]:
    """The series file and the patch files it names (nothing else of the folder)."""
    found: dict[str, bytes] = {}
    series = os.path.join(folder, "series")
    if not os.path.isfile(series):
        return found
    with open(series, "rb") as f:
        found["series"] = f.read()
    for raw in found["series"].decode("utf-8", "surrogateescape").splitlines():
        name = raw.split("#", 1)[0].split()
        if name and os.path.isfile(os.path.join(folder, name[0])):
            with open(os.path.join(folder, name[0]), "rb") as f:
                found[name[0]] = f.read()
    return found


def _without_base(series: bytes) -> list[bytes]:
    return [ln for ln in series.splitlines() if not ln.startswith(b"# base:")]


def split_change(
    before: dict[str, bytes], after: dict[str, bytes], verdicts: dict[str, str]
) -> tuple[list[str], list[str]]:
    """The files that changed, as (only moved, the rest): a patch whose verdict is unchanged
    or offset, and the series file when only its base line changed, are the first commit."""
    changed = [n for n in after if before.get(n) != after[n]]
    moved, rest = [], []
    for name in changed:
        if name == "series":
            same = _without_base(before.get("series", b"")) == _without_base(after["series"])
            (moved if same else rest).append(name)
        elif verdicts.get(name) in ONLY_MOVED:
            moved.append(name)
        else:
            rest.append(name)
    return moved, rest


def holds_back(data: dict[str, Any], probes: dict[str, Any] | None) -> list[str]:
    """Why ``auto-merge: safe`` does not merge (empty: it may)."""
    why = []
    for p in data.get("patches", []):
        verdict = p.get("verdict")
        if verdict == "upstream" and not p.get("evidence"):
            why.append(f"{p['name']} is upstream without evidence")
        elif verdict not in (*SAFE_VERDICTS, "upstream"):
            why.append(f"{p['name']} is {verdict}")
    for c in data.get("deferred", []):
        why.append(f"{c['patch']} is deferred")
    if data.get("stopped"):
        why.append("the refresh stopped")
    if probes is not None and not probes.get("ok", False):
        bad = [r for r in probes.get("results", []) if r.get("verdict") != "effective"]
        why += [f"the probe of {r.get('name')} is {r.get('verdict')}" for r in bad]
        if not bad:
            why.append("the probes did not all run")
    return list(dict.fromkeys(why))


def _culprits(conflict: dict[str, Any]) -> list[str]:
    seen: dict[str, str] = {}
    for h in conflict.get("hunks", []):
        for u in h.get("upstream_commits", []):
            seen.setdefault(str(u.get("commit", "")), str(u.get("subject", "")))
    return [f"{code(oid[:12])} {code(subject)}" for oid, subject in seen.items()] or ["unknown"]


def body(
    settings: Settings, data: dict[str, Any], review: str, held: list[str], merged: bool
) -> str:
    """The pull request's description: the move, what went upstream, what was deferred and
    how to bring it back, then the review (cut to GitHub's limit)."""
    target = str(data.get("new_base", ""))
    lines = [
        PR_MARKER,
        f"## patchstack: the series refreshed onto {code(target[:12])}"
        f" ({code(settings.upstream_branch)} of {code(settings.upstream_url)})",
        "",
    ]
    counts: dict[str, int] = {}
    for p in data.get("patches", []):
        counts[str(p.get("verdict"))] = counts.get(str(p.get("verdict")), 0) + 1
    lines.append(", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + ".")
    upstream = [p for p in data.get("patches", []) if p.get("verdict") == "upstream"]
    if upstream:
        lines += ["", f"### Upstream ({len(upstream)})", ""]
        for p in upstream:
            ev = p.get("evidence") or {}
            proof = (
                f"brought by {code(str(ev.get('commit', ''))[:12])} {code(ev.get('subject', ''))}"
                if ev
                else "no evidence: kept in the series"
            )
            lines.append(f"- {code(p['name'])}: {proof}")
    deferred = data.get("deferred", [])
    if deferred:
        lines += ["", f"### Deferred ({len(deferred)})", ""]
        for c in deferred:
            lines.append(
                f"- {code(c['patch'])}: conflicts in {', '.join(code(f) for f in c['files'])};"
                f" upstream commits: {', '.join(_culprits(c))}. Bring it back after merging:"
                f" {code('patchstack push ' + c['patch'])}"
            )
    lines += [""]
    if settings.auto_merge == "safe":
        lines.append(
            "Auto-merge: merged (every verdict safe)."
            if merged
            else "Auto-merge held back: " + "; ".join(held) + "."
        )
    text = "\n".join(lines) + "\n\n" + review
    if len(text.encode()) > COMMENT_LIMIT:
        cut = text.encode()[: COMMENT_LIMIT - 200].decode(errors="ignore")
        text = cut + "\n\n*(the review is cut here: the job's artifact holds it whole)*\n"
    return text


# -- git ------------------------------------------------------------------------------------------


def _git(
    *args: str, env: dict[str, str] | None = None, cwd: str | None = None, stdin: str = ""
) -> str:
    proc = subprocess.run(
        ["git", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=stdin,
    )
    if proc.returncode != 0:
        raise BotFailure(f"git {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _commit_tree(tree: str, parents: list[str], message: str) -> str:
    return _git(
        "commit-tree", tree, *[x for p in parents for x in ("-p", p)], "-m", message, env=BOT_IDENT
    )


def _commit(
    parent: str, folder: str, files: dict[str, bytes], names: list[str], message: str, tmp: str
) -> str:
    """A commit on ``parent`` with ``names`` of ``files`` in ``folder``, made in a temporary
    index (the workspace's index and files are never touched)."""
    env = {**BOT_IDENT, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
    _git("read-tree", parent, env=env)
    paths = []
    for i, name in enumerate(names):  # one hash-object and one update-index for them all
        paths.append(os.path.join(tmp, f"blob{i}"))
        with open(paths[-1], "wb") as f:
            f.write(files[name])
    oids = _git("hash-object", "-w", "--stdin-paths", stdin="\n".join(paths) + "\n").split()
    entries = "".join(f"100644 {o}\t{folder}/{n}\0" for o, n in zip(oids, names, strict=True))
    _git("update-index", "-z", "--index-info", env=env, stdin=entries)
    tree = _git("write-tree", env=env)
    return _git("commit-tree", tree, "-p", parent, "-m", message, env=env)


def settings_from(inp: Any) -> Settings:
    url = inp("UPSTREAM_URL")
    if not url:
        raise BotFailure("command refresh needs upstream-url (the upstream repository to follow)")
    folder = inp("SERIES_DIR") or _git_config("patchstack.dir") or "patches"
    base = inp("BASE_BRANCH") or os.environ.get("GITHUB_REF_NAME", "")
    if not base:
        base = _git("symbolic-ref", "--short", "HEAD")
    auto = inp("AUTO_MERGE", "never")
    if auto not in ("never", "safe"):
        raise BotFailure(f"auto-merge must be never or safe, not {auto!r}")
    probes = inp("PROBES", "auto")
    if probes not in ("auto", "always", "never"):
        raise BotFailure(f"probes must be auto, always or never, not {probes!r}")
    branch = inp("BOT_BRANCH", DEFAULT_BRANCH)
    publish = inp("PUBLISH", "ff")
    if publish not in ghpublish.WAYS:
        raise BotFailure(f"publish must be ff or series, not {publish!r}")
    return Settings(
        url, inp("UPSTREAM_BRANCH", "main"), branch, base, folder.strip("/"), auto, probes, publish
    )


def _git_config(key: str) -> str:
    proc = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


# -- the run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    result: str  # current | updated | merged
    pr: int | None
    summary: str


def refresh(
    settings: Settings,
    api: Api,
    patchstack: Any,
    auth_env: dict[str, str],
    out: str,
) -> Outcome:
    origin = _git("remote", "get-url", "origin")
    if _norm(origin) == _norm(settings.upstream_url):
        raise BotFailure(
            f"origin ({origin}) is the upstream repository: the bot pushes only to the fork"
        )
    top = _git("rev-parse", "--show-toplevel")
    folder = os.path.join(top, settings.folder)
    tip = _git("rev-parse", "HEAD")
    lease = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", f"refs/remotes/origin/{settings.branch}"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    _git(
        "fetch",
        "--quiet",
        "--no-tags",
        settings.upstream_url,
        f"+refs/heads/{settings.upstream_branch}",
    )
    target = _git("rev-parse", "FETCH_HEAD^{commit}")
    if not os.path.isfile(os.path.join(folder, "series")):
        raise BotFailure(f"{settings.folder}/series: no series file in the fork's branch")
    tmp = tempfile.mkdtemp(prefix="patchstack-bot-", dir=os.environ.get("RUNNER_TEMP"))
    try:
        return _publish(settings, api, patchstack, auth_env, out, tmp, (top, tip, lease, target))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _publish(
    settings: Settings,
    api: Api,
    patchstack: Any,
    auth_env: dict[str, str],
    out: str,
    tmp: str,
    where: tuple[str, str, str, str],
) -> Outcome:
    top, tip, lease, target = where
    folder = os.path.join(top, settings.folder)
    before = _files(folder)
    base = _series_base(os.path.join(folder, "series"))
    scratch, series_copy = os.path.join(tmp, "tree"), os.path.join(tmp, "series")
    _git("worktree", "add", "--quiet", "--detach", scratch, base)
    try:
        os.makedirs(series_copy)
        for name, data in before.items():
            with open(os.path.join(series_copy, name), "wb") as f:
                f.write(data)
        fork = _old_fork(settings, patchstack, scratch, series_copy, (tip, base), tmp)
        has_probes = b"Patchstack-Probe:" in b"".join(before.values())
        run_probes = settings.probes == "always" or (settings.probes == "auto" and has_probes)
        args = ["--dir", series_copy, "refresh", "--onto", target, "--defer-conflicts", "--json"]
        proc = patchstack([*args, *(["--probes"] if run_probes else [])], scratch, BOT_IDENT)
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or proc.returncode not in (0, 1):
            raise BotFailure(f"patchstack refresh failed:\n{proc.stderr or proc.stdout}")
        with open(os.path.join(out, "refresh.json"), "w", encoding="utf-8") as f:
            f.write(proc.stdout)
        after = _files(series_copy)
        if fork == "applied":
            if data.get("stopped"):
                raise BotFailure("patchstack refresh stopped: nothing to publish")
            refreshed = _git("rev-parse", "HEAD", cwd=scratch)
        else:
            refreshed = target
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", scratch], capture_output=True)
    verdicts = {str(p["name"]): str(p.get("verdict")) for p in data.get("patches", [])}
    moved, rest = split_change(before, after, verdicts)
    if not moved and not rest:
        return Outcome("current", None, f"The series is current on {target[:12]}: nothing to do.\n")
    head = tip
    short = target[:12]
    if moved:
        head = _commit(
            head,
            settings.folder,
            after,
            moved,
            f"patchstack: refresh onto {short}: patches that only moved\n\n"
            f"Only context or line numbers changed in {len(moved)} file(s).",
            tmp,
        )
    if rest:
        head = _commit(
            head,
            settings.folder,
            after,
            rest,
            f"patchstack: refresh onto {short}: changed patches and marks",
            tmp,
        )
    if settings.publish == "ff":
        try:
            head = ghpublish.fast_forward(
                _commit_tree, refreshed, head, settings.folder, target, tmp
            )
        except ghpublish.LayoutError as exc:
            raise BotFailure(str(exc)) from exc
    push = subprocess.run(
        [
            "git",
            "push",
            "--quiet",
            "--atomic",
            f"--force-with-lease=refs/heads/{settings.branch}:{lease}",
            "origin",
            f"{head}:refs/heads/{settings.branch}",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **auth_env},
    )
    if push.returncode != 0:
        if "stale info" in push.stderr or "rejected" in push.stderr:
            raise LostRace(
                f"{settings.branch} moved on origin since this job fetched it (another run, or"
                f" a maintainer's push): nothing was published; the next run starts from it"
                f" ({push.stderr.strip()})"
            )
        raise BotFailure(f"git push failed: {push.stderr.strip()}")
    review = patchstack(
        ["--dir", settings.folder, "review", tip, head, "--format", "markdown"], top, {}
    )
    review_md = review.stdout if review.returncode == 0 else f"(review failed: {review.stderr})"
    probes = data.get("probes") if isinstance(data.get("probes"), dict) else None
    held = holds_back(data, probes if run_probes else None)
    pr = _pull_request(api, settings, body(settings, data, review_md, held, False))
    merged = False
    if settings.auto_merge == "safe" and not held:
        api.call(
            "PUT",
            f"/repos/{api.repo}/pulls/{pr}/merge",
            {"merge_method": "merge", "sha": head},
        )
        merged = True
        api.call(
            "PATCH",
            f"/repos/{api.repo}/pulls/{pr}",
            {"body": body(settings, data, review_md, held, True)},
        )
    text = body(settings, data, review_md, held, merged)
    with open(os.path.join(out, "refresh.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return Outcome("merged" if merged else "updated", pr, text)


def _old_fork(
    settings: Settings,
    patchstack: Any,
    scratch: str,
    series_copy: str,
    where: tuple[str, str],
    tmp: str,
) -> str:
    """With ``publish: ff``, the series pushed on its base in the scratch tree (which the
    refresh then carries) and the tip's layout (`ghpublish.layout`); '' otherwise."""
    if settings.publish != "ff":
        return ""
    tip, base = where
    proc = patchstack(["--dir", series_copy, "push", "--all"], scratch, BOT_IDENT)
    if proc.returncode != 0:
        raise BotFailure(f"patchstack push --all on the series base failed:\n{proc.stderr}")
    applied = _git("rev-parse", "HEAD", cwd=scratch)
    try:
        return ghpublish.layout(tip, settings.folder, base, applied, tmp)
    except ghpublish.LayoutError as exc:
        raise BotFailure(str(exc)) from exc


def _pull_request(api: Api, settings: Settings, text: str) -> int:
    owner = api.repo.split("/")[0]
    found = api.call("GET", f"/repos/{api.repo}/pulls?head={owner}:{settings.branch}&state=open")
    title = f"patchstack: refresh the series onto {settings.upstream_branch}"
    if found:
        number = int(found[0]["number"])
        api.call("PATCH", f"/repos/{api.repo}/pulls/{number}", {"title": title, "body": text})
        return number
    made = api.call(
        "POST",
        f"/repos/{api.repo}/pulls",
        {"title": title, "head": settings.branch, "base": settings.base, "body": text},
    )
    return int(made["number"])


def report_failure(api: Api, message: str, run_url: str) -> None:
    """Open, or update, the one issue in the fork that says the bot's last run failed."""
    text = (
        f"{ISSUE_MARKER}\n## The patchstack refresh bot failed\n\nRun: {run_url}\n\n"
        f"```\n{message.replace('```', '` ` `')}\n```\n"
    )
    try:
        issues = api.call("GET", f"/repos/{api.repo}/issues?state=open&per_page=100")
        for issue in issues:
            if "pull_request" not in issue and str(issue.get("body", "")).startswith(ISSUE_MARKER):
                api.call("PATCH", f"/repos/{api.repo}/issues/{issue['number']}", {"body": text})
                return
        api.call(
            "POST",
            f"/repos/{api.repo}/issues",
            {"title": "patchstack refresh bot: the last run failed", "body": text},
        )
    except urllib.error.HTTPError as exc:
        print(f"::warning title=patchstack::could not file the failure in the fork: {exc}")
