"""Helpers of the patchstack GitHub Action (action.yml): standard library only.

    ghaction.py event FIELD          a field of the event that started the workflow
    ghaction.py check-summary FILE   the job summary (Markdown) of 'patchstack check --json'
    ghaction.py comment FILE         keep one pull request comment up to date with FILE

Everything comes from the environment GitHub Actions sets (GITHUB_EVENT_PATH,
GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_TOKEN), so the steps run the same on a laptop
with those variables set, which is how the tests run them.

The comment is found by the marker its first line holds and by its author (the token's
user: github-actions[bot] for the workflow's own token, else COMMENT_AUTHOR), so nobody
else's comment that happens to start with the marker is ever edited.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

MARKER = "<!-- patchstack-review -->"
BOT = "github-actions[bot]"


def event() -> dict[str, Any]:
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data if isinstance(data, dict) else {}


def event_field(name: str) -> str:
    pr = event().get("pull_request") or {}
    head, base = pr.get("head") or {}, pr.get("base") or {}
    values = {
        "pr-number": pr.get("number"),
        "base-sha": base.get("sha"),
        "head-sha": head.get("sha"),
        "from-fork": (
            "true"
            if pr
            and (head.get("repo") or {}).get("full_name")
            != (base.get("repo") or {}).get("full_name")
            else "false"
        ),
    }
    if name not in values:
        raise SystemExit(f"ghaction.py: unknown event field {name!r}")
    value = values[name]
    return "" if value is None else str(value)


# -- check summary ------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("`", "'")


def _ticks(hunk: dict[str, Any]) -> list[str]:
    import re

    return [
        r
        for k in ("expected", "now", "wanted")
        for ln in hunk.get(k, [])
        for r in re.findall("`+", ln)
    ]


def check_summary(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    ok = data.get("ok")
    counts: dict[str, int] = {}
    for p in data.get("patches", []):
        counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
    target = data.get("target_name") or data.get("target", "")[:12]
    head = "applies" if ok else "does not apply"
    lines = [
        f"### patchstack check: the series {head} on `{_cell(target)}`",
        "",
        ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no patches",
        "",
    ]
    shown = [p for p in data.get("patches", []) if p["verdict"] != "unchanged"]
    if shown:
        lines += ["| Patch | Tag | Verdict |", "|---|---|---|"]
        lines += [f"| `{_cell(p['name'])}` | {p['tag']} | {p['verdict']} |" for p in shown]
        lines.append("")
    for c in data.get("conflicts", []):
        lines.append(f"#### Conflict in `{_cell(c['patch'])}`")
        lines.append("")
        for h in c.get("hunks", []):
            lines.append(f"`{_cell(h['path'])}` line {h['line']}:")
            lines.append("")
            fence = "`" * max(3, 1 + max((len(r) for r in _ticks(h)), default=0))
            lines.append(fence + "text")
            for title, key in (
                ("the patch expected", "expected"),
                ("there now", "now"),
                ("the patch wants", "wanted"),
            ):
                lines.append(f"{title}:")
                lines += [f"  | {ln}" for ln in h.get(key, [])] or ["  (nothing)"]
            lines.append(fence)
            commits = h.get("upstream_commits", [])
            if commits:
                lines.append("")
                lines.append("Upstream commits that changed these lines:")
                lines += [f"- {u['commit'][:10]} {_cell(u['subject'])}" for u in commits]
            lines.append("")
        if c.get("detail") and not c.get("hunks"):
            lines += ["```", c["detail"], "```", ""]
    return "\n".join(lines) + "\n"


# -- the pull request comment ---------------------------------------------------------------------


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


def run_pr(api: Api) -> str:
    """The pull request of the run that started this workflow_run workflow: looked up from the
    run's head repository, branch and commit (never taken from the run's own files, which a
    pull request from a fork controls)."""
    run = event().get("workflow_run") or {}
    owner = ((run.get("head_repository") or {}).get("owner") or {}).get("login")
    branch, sha = run.get("head_branch"), run.get("head_sha")
    if not (owner and branch and sha):
        return ""
    from urllib.parse import quote

    pulls = api.call(
        "GET", f"/repos/{api.repo}/pulls?state=open&head={quote(owner)}:{quote(branch)}"
    )
    for p in pulls:
        if (p.get("head") or {}).get("sha") == sha:
            return str(p["number"])
    return ""


def notice(text: str) -> None:
    print(f"::notice title=patchstack::{text}")


def comment(path: str, pr_arg: str, mode: str, if_exists: bool) -> int:
    """Post or edit the comment; returns the exit status of the step."""
    if mode == "never":
        return 0
    if mode == "auto" and not pr_arg and event_field("from-fork") == "true":
        notice(
            "a pull request from a fork gets a read-only token: the review is in the job"
            " summary; docs/github-review-comment-workflow.yml posts it as a comment"
        )
        return 0
    with open(path, encoding="utf-8") as f:
        body = f.read()
    if not body.startswith(MARKER):
        body = MARKER + "\n" + body
    api = Api()
    author = os.environ.get("COMMENT_AUTHOR") or BOT
    try:
        pr_text = pr_arg or event_field("pr-number") or run_pr(api)
        if not pr_text.isdigit():
            print(f"::error title=patchstack::no pull request number (got {pr_text!r})")
            return 2
        found = api.find(int(pr_text), author)
        if found is not None:
            api.call("PATCH", f"/repos/{api.repo}/issues/comments/{found}", {"body": body})
            print(f"updated comment {found} on #{pr_text}")
        elif if_exists:
            print(f"no comment to update on #{pr_text}")
        else:
            made = api.call("POST", f"/repos/{api.repo}/issues/{pr_text}/comments", {"body": body})
            print(f"posted comment {made.get('id')} on #{pr_text}")
    except urllib.error.HTTPError as exc:
        if mode == "auto" and exc.code in (401, 403, 404):
            notice(
                f"the token cannot write comments ({exc.code}); the review is in the job summary"
            )
            return 0
        print(f"::error title=patchstack::GitHub API: {exc.code} {exc.reason}")
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "event":
        print(event_field(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "check-summary":
        sys.stdout.write(check_summary(argv[1]))
        return 0
    if len(argv) >= 2 and argv[0] == "comment":
        rest = argv[2:]
        pr = rest[rest.index("--pr") + 1] if "--pr" in rest else ""
        mode = rest[rest.index("--mode") + 1] if "--mode" in rest else "auto"
        if mode not in ("auto", "always", "never"):
            print(f"::error title=patchstack::comment must be auto, always or never, not {mode!r}")
            return 2
        return comment(argv[1], pr, mode, "--if-exists" in rest)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
