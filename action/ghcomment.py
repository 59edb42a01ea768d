"""The Markdown and the GitHub API of the patchstack Action: the check's verdicts as Markdown,
the one pull request comment (the check's verdicts, then the review), and keeping that
comment up to date. Standard library only (see ghaction.py).

The check's JSON may come from a pull request's own run (the comment workflow of a fork's pull
request reads it from that run's artifact), so every word of it that is not a verdict is put
in a code span or a fenced block sized past its backticks: no link, image, mention or HTML of
it reaches the comment.

The comment is found by the marker its first line holds and by its author (the token's user:
github-actions[bot] for the workflow's own token, else COMMENT_AUTHOR), so nobody else's
comment that happens to start with the marker is ever edited.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

MARKER = "<!-- patchstack-review -->"
BOT = "github-actions[bot]"
COMMENT_LIMIT = 65536  # GitHub's limit for a comment (the review's own, in UTF-8 bytes)
CHECK_SHARE = 24000  # the most of a comment the check's verdicts take
VERDICTS = ("unchanged", "offset", "merged", "upstream", "conflict")


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def code(text: Any, cell: bool = False) -> str:
    """``text`` as one inline code span (nothing in it is Markdown); in a table cell the
    pipes are escaped too, as GitHub's tables read them before the code span."""
    text = re.sub(r"[\r\n\t]+", " ", str(text))
    ticks = max((len(r) for r in re.findall("`+", text)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if ticks or text.startswith(" ") or not text else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span


def _fence(lines: list[str]) -> str:
    return "`" * max(3, 1 + max((len(r) for ln in lines for r in re.findall("`+", ln)), default=0))


def _commit(value: Any) -> str:
    text = str(value)
    return text[:10] if re.fullmatch(r"[0-9a-f]{7,64}", text) else code(text)


def check_summary(data: dict[str, Any], target: str, details: bool = True) -> str:
    """'patchstack check --json' as Markdown: the verdict, the patches that are not
    unchanged, and (``details``) each conflict with its hunks and upstream commits."""
    patches = [p for p in data.get("patches", []) if isinstance(p, dict)]
    counts: dict[str, int] = {}
    for p in patches:
        word = str(p.get("verdict"))
        counts[word] = counts.get(word, 0) + 1
    head = "applies" if data.get("ok") is True else "does not apply"
    lines = [
        f"### patchstack check: the series {head} on {code(target)}",
        "",
        ", ".join(f"{n} {v if v in VERDICTS else code(v)}" for v, n in sorted(counts.items()))
        or "no patches",
        "",
    ]
    shown = [p for p in patches if p.get("verdict") != "unchanged"]
    if shown:
        lines += ["| Patch | Tag | Verdict |", "|---|---|---|"]
        for p in shown:
            verdict = str(p.get("verdict"))
            verdict = f"**{verdict}**" if verdict == "conflict" else verdict
            if str(p.get("verdict")) not in VERDICTS:
                verdict = code(p.get("verdict"), cell=True)
            lines.append(
                f"| {code(p.get('name'), cell=True)} | {code(p.get('tag'), cell=True)}"
                f" | {verdict} |"
            )
        lines.append("")
    if not details:
        return "\n".join(lines) + "\n"
    for c in data.get("conflicts", []):
        if not isinstance(c, dict):
            continue
        lines += [f"#### Conflict in {code(c.get('patch'))}", ""]
        for h in c.get("hunks", []):
            try:
                at = int(h.get("line"))
            except (TypeError, ValueError):
                at = 0
            lines += [f"{code(h.get('path'))} line {at}:", ""]
            body = []
            for title, key in (
                ("the patch expected", "expected"),
                ("there now", "now"),
                ("the patch wants", "wanted"),
            ):
                body.append(f"{title}:")
                body += [f"  | {ln}" for ln in map(str, h.get(key, []))] or ["  (nothing)"]
            fence = _fence(body)
            lines += [fence + "text", *body, fence]
            commits = h.get("upstream_commits", [])
            if commits:
                lines += ["", "Upstream commits that changed these lines:"]
                lines += [f"- {_commit(u.get('commit'))} {code(u.get('subject'))}" for u in commits]
            lines.append("")
        if c.get("detail") and not c.get("hunks"):
            detail = str(c["detail"]).splitlines()
            fence = _fence(detail)
            lines += [fence + "text", *detail, fence, ""]
    return "\n".join(lines) + "\n"


def check_error(message: str) -> str:
    body = message.rstrip("\n").splitlines() or ["(no message)"]
    fence = _fence(body)
    return "\n".join(["### patchstack check: error", "", fence + "text", *body, fence, ""]) + "\n"


def check_part(data: dict[str, Any], target: str, full_url: str) -> str:
    """The check's verdicts for the comment: with the conflict reports while they fit in
    their share, else the table and a pointer to the job summary that has them."""
    text = check_summary(data, target)
    if size(text) <= CHECK_SHARE:
        return text
    text = check_summary(data, target, details=False)
    text += f"\nThe conflict reports are in the job summary of [the run]({full_url}).\n"
    return text if size(text) <= CHECK_SHARE else check_error("too many verdicts for a comment")


def fork_caveat(head_repo: Any, run_url: str) -> str:
    """What a fork's verdicts are: the pull request's own claim. Its run computed them, on its
    own code, and the comment workflow only shows them (it runs nothing of the pull request),
    so they are posted under this repository's bot with that said first."""
    where = f" in {code(head_repo)}" if head_repo else ""
    run = f"[the pull request's run]({quote(run_url, safe=':/?#=&%')})" if run_url else "it"
    return (
        "> [!CAUTION]\n"
        f"> The check below is the pull request's own claim: its workflow run{where} computed"
        f" these verdicts on the pull request's code ({run}), and this repository did not check"
        " them. Run `patchstack check` on the base repository to confirm.\n\n"
    )


def compose(check: str | None, review: str) -> str:
    """One comment: the marker, the check's verdicts (when the check ran), the review."""
    review = review.removeprefix(MARKER).lstrip("\n")
    parts = [MARKER, check.rstrip("\n") + "\n" if check else None, review]
    return "\n".join(p for p in parts if p is not None)


# -- the GitHub API -------------------------------------------------------------------------------


class Api:
    def __init__(self) -> None:
        self.url = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        self.repo = os.environ["GITHUB_REPOSITORY"]
        self.token = os.environ.get("GITHUB_TOKEN", "")

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode() or "null"
        return json.loads(text)

    def find(self, pr: int, author: str) -> int | None:
        page = 1
        while True:
            path = f"/repos/{self.repo}/issues/{pr}/comments?per_page=100&page={page}"
            batch = self.call("GET", path)
            for c in batch:
                if (
                    c.get("body", "").startswith(MARKER)
                    and (c.get("user") or {}).get("login") == author
                ):
                    return int(c["id"])
            if len(batch) < 100:
                return None
            page += 1

    def pull_of_run(self, run: dict[str, Any]) -> dict[str, Any] | None:
        """The open pull request whose head is the run's head repository, branch and commit
        (never taken from the run's files, which a pull request from a fork controls)."""
        owner = ((run.get("head_repository") or {}).get("owner") or {}).get("login")
        branch, sha = run.get("head_branch"), run.get("head_sha")
        if not (owner and branch and sha):
            return None
        pulls = self.call(
            "GET", f"/repos/{self.repo}/pulls?state=open&head={quote(owner)}:{quote(branch)}"
        )
        for p in pulls:
            if (p.get("head") or {}).get("sha") == sha:
                return dict(p)
        return None


def notice(text: str) -> None:
    print(f"::notice title=patchstack::{text}")


def post(api: Api, pr: int, body: str, if_exists: bool) -> None:
    """Edit our comment on ``pr``, or post it (unless ``if_exists``)."""
    if not body.startswith(MARKER):
        body = MARKER + "\n" + body
    author = os.environ.get("COMMENT_AUTHOR") or BOT
    found = api.find(pr, author)
    if found is not None:
        api.call("PATCH", f"/repos/{api.repo}/issues/comments/{found}", {"body": body})
        print(f"updated comment {found} on #{pr}")
    elif if_exists:
        print(f"no comment to update on #{pr}")
    else:
        made = api.call("POST", f"/repos/{api.repo}/issues/{pr}/comments", {"body": body})
        print(f"posted comment {made.get('id')} on #{pr}")


def api_error(exc: urllib.error.HTTPError, mode: str) -> int:
    """The exit status of a step whose API call failed: a notice when the token may not
    write and the mode is auto, else an error."""
    if mode == "auto" and exc.code in (401, 403, 404):
        notice(f"the token cannot write comments ({exc.code}); the review is in the job summary")
        return 0
    print(f"::error title=patchstack::GitHub API: {exc.code} {exc.reason}")
    return 1
