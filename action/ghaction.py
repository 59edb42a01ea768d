"""The steps of the patchstack GitHub Action (action.yml): standard library only.

    ghaction.py check                 patchstack check on the target; check.json, check.md
    ghaction.py review                review the pull request; review.{json,html,md}, comment.md
    ghaction.py comment FILE          keep one pull request comment up to date with FILE
    ghaction.py pull-request          (a workflow_run workflow) review the pull request of the
                                      run from git objects and keep its comment up to date
    ghaction.py refresh               the refresh bot (ghbot.py): refresh onto upstream, keep
                                      one pull request of the fork up to date
    ghaction.py event FIELD           a field of the event that started the workflow

action.yml runs this file with the Action's own interpreter in isolated mode (``python -I``):
the workspace is a pull request's checkout, and nothing in it (a ``json.py`` at its top, a
``sitecustomize``, ``PYTHON*`` variables) is ever imported or read. The review renders with
the templates of the pull request's base (``patchstack review --templates-from``), never the
head's, and each rendering is bounded in time (``render-timeout``). Everything comes from the
environment GitHub Actions sets (GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL,
GITHUB_TOKEN, RUNNER_TEMP, ...), so the steps run the same on a laptop with those variables
set, which is how the tests run them.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import urllib.error
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the Action's folder only

import ghcomment  # noqa: E402
from ghcomment import MARKER  # noqa: E402

NO_CHANGE = "patchstack review: this pull request does not change the patch series.\n"


def inp(name: str, default: str = "") -> str:
    return os.environ.get(f"INPUT_{name}", "") or default


def out_dir() -> str:
    path = os.path.join(os.environ["RUNNER_TEMP"], "patchstack")
    os.makedirs(path, exist_ok=True)
    return path


def set_outputs(**values: str) -> None:
    with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
        for key, value in values.items():
            f.write(f"{key}={value}\n")


def add_summary(text: str) -> None:
    with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as f:
        f.write(text)


def error(text: str) -> None:
    print(f"::error title=patchstack::{text}")


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


def run_url() -> str:
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    run = os.environ.get("GITHUB_RUN_ID", "0")
    return f"{server}/{os.environ['GITHUB_REPOSITORY']}/actions/runs/{run}"


# -- processes ------------------------------------------------------------------------------------


def git(*args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if check and proc.returncode != 0:
        raise SystemExit(f"::error title=patchstack::git {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def patchstack_program() -> str:
    """The patchstack next to this interpreter (the Action's virtual environment)."""
    here = os.path.join(os.path.dirname(sys.executable), "patchstack")
    return here if os.path.exists(here) else "patchstack"


class TimedOut(Exception):
    pass


def patchstack(
    args: list[str],
    timeout: float | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run patchstack in a session of its own; past ``timeout`` seconds the whole session is
    killed (a template's nested loop must not keep the runner busy until the job's timeout)."""
    cmd = [patchstack_program(), *args]
    with subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise TimedOut(" ".join(args[:1])) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def dir_args() -> list[str]:
    folder = inp("SERIES_DIR")
    return ["--dir", folder] if folder else []


def warn_about_persisted_credentials() -> None:
    """actions/checkout keeps its token in .git/config unless persist-credentials: false;
    a step after this one that runs the pull request's code could read it."""
    found = git("config", "--local", "--get-regexp", r"^http\..*\.extraheader$", check=False)
    if found:
        print(
            "::warning title=patchstack::the checkout kept its credentials in .git/config;"
            " set persist-credentials: false on actions/checkout (patchstack needs none)"
        )


# -- check ----------------------------------------------------------------------------------------


def check() -> int:
    out = out_dir()
    onto, shown = inp("ONTO"), inp("ONTO")
    url = inp("UPSTREAM_URL")
    if url:
        branch = inp("UPSTREAM_BRANCH", "main")
        # Into FETCH_HEAD only: no ref of the Action's own is made, or named to the user.
        git("fetch", "--quiet", "--no-tags", url, f"+refs/heads/{branch}")
        fetched = git("rev-parse", "FETCH_HEAD^{commit}")
        if not onto:
            onto, shown = fetched, f"{branch} of {url}"
    target = ["--onto", onto] if onto else []
    proc = patchstack([*dir_args(), "check", *target, "--json"])
    with open(os.path.join(out, "check.json"), "w", encoding="utf-8") as f:
        f.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    try:
        data = json.loads(proc.stdout) if proc.returncode <= 1 else None
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        if not shown:
            shown = str(data.get("target_name") or str(data.get("target", ""))[:12])
        elif onto != shown:  # the fetched branch: its commit as well
            shown = f"{shown} ({str(data.get('target', ''))[:12]})"
        text = ghcomment.check_summary(data, shown)
        part = ghcomment.check_part(data, shown, run_url())
    else:
        text = part = ghcomment.check_error(proc.stderr or proc.stdout)
    add_summary(text)
    sys.stdout.write(text)
    with open(os.path.join(out, "check.md"), "w", encoding="utf-8") as f:
        f.write(part)
    result = {0: "ok", 1: "conflict"}.get(proc.returncode, "error")
    set_outputs(result=result, json=os.path.join(out, "check.json"))
    return proc.returncode


# -- review ---------------------------------------------------------------------------------------


def count_changes(data: dict[str, Any]) -> int:
    """The changes of a review (review.json): patches not only unchanged (a mark's change
    included), the base's move, and the recorded resolutions added, changed or removed."""
    patches = sum(p["words"] != ["unchanged"] for p in data["patches"])
    return patches + int(bool(data["base"]["moved"])) + len(data.get("resolutions", []))


def render_review(old: str, new: str, check_md: str | None, full_url: str) -> tuple[bool, str]:
    """Review OLD..NEW into review.{json,html,md} and the comment (comment.md); returns
    whether the pull request changes the series, and the comment's path."""
    out = out_dir()
    timeout = float(inp("RENDER_TIMEOUT", "300"))
    common = [*dir_args(), "review", old, new, "--templates-from", old]
    budget = ghcomment.COMMENT_LIMIT - (ghcomment.size(check_md) + 200 if check_md else 0)
    formats = [
        ("json", ["--json"]),
        ("html", ["--format", "html"]),
        ("md", ["--format", "markdown", "--full-url", full_url, "--max-size", str(budget)]),
    ]
    for ext, extra in formats:
        path = os.path.join(out, f"review.{ext}")
        try:
            proc = patchstack([*common, *extra, "-o", path], timeout=timeout)
        except TimedOut:
            error(
                f"patchstack review took over {timeout:g} s (render-timeout) and was stopped:"
                " does a template under .patchstack/templates/ of the base loop?"
            )
            raise SystemExit(1) from None
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            error(f"patchstack review failed: {proc.stderr.strip()}")
            raise SystemExit(proc.returncode)
    with open(os.path.join(out, "review.json"), encoding="utf-8") as f:
        data = json.load(f)
    changes = count_changes(data)
    md = os.path.join(out, "review.md")
    if not changes:
        with open(md, "w", encoding="utf-8") as f:
            f.write(f"{MARKER}\n{NO_CHANGE}")
    with open(md, encoding="utf-8") as f:
        review_md = f.read()
    comment_path = os.path.join(out, "comment.md")
    with open(comment_path, "w", encoding="utf-8") as f:
        f.write(ghcomment.compose(check_md, review_md))
    return bool(changes), comment_path


def _read(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def review() -> int:
    new = inp("NEW") or event_field("head-sha")
    old = inp("OLD")
    if not old:
        base = event_field("base-sha")
        if base and new:
            old = git("merge-base", base, new)
    if not old or not new:
        error("review needs a pull_request event, or the inputs old and new")
        return 2
    print(f"review {old}..{new} (templates of {old[:12]}, the base)")
    warn_about_persisted_credentials()
    check_md = _read(os.path.join(out_dir(), "check.md"))  # the check step of this job
    changed, comment_path = render_review(old, new, check_md, run_url())
    out = out_dir()
    add_summary(_read(os.path.join(out, "review.md")) or "")
    set_outputs(
        changed="true" if changed else "false",
        markdown=os.path.join(out, "review.md"),
        html=os.path.join(out, "review.html"),
        json=os.path.join(out, "review.json"),
        comment=comment_path,
    )
    return 0


# -- the comment ----------------------------------------------------------------------------------


def comment(path: str, pr_arg: str, mode: str, if_exists: bool) -> int:
    """Post or edit the comment; returns the exit status of the step."""
    if mode == "never":
        return 0
    if mode == "auto" and not pr_arg and event_field("from-fork") == "true":
        ghcomment.notice(
            "a pull request from a fork gets a read-only token: the review is in the job"
            " summary; docs/github-comment-workflow.yml posts it as a comment"
        )
        return 0
    with open(path, encoding="utf-8") as f:
        body = f.read()
    api = ghcomment.Api()
    try:
        pr_text = pr_arg or event_field("pr-number")
        if not pr_text.isdigit():
            error(f"no pull request number (got {pr_text!r})")
            return 2
        ghcomment.post(api, int(pr_text), body, if_exists)
    except urllib.error.HTTPError as exc:
        return ghcomment.api_error(exc, mode)
    return 0


def _fetch_with_token(*refspecs: str) -> None:
    """Fetch from origin; the token goes in git's environment (never into .git/config), and
    only to the server the workflow runs on."""
    git("fetch", "--quiet", "--no-tags", "origin", *refspecs, env=origin_auth_env())


def origin_auth_env() -> dict[str, str]:
    """The token for origin in git's environment, only for the server the workflow runs on."""
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    token = os.environ.get("GITHUB_TOKEN", "")
    url = git("remote", "get-url", "origin", check=False)
    env = {}
    if token and url.startswith(server + "/"):
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{server}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
        }
    return env


def pull_request() -> int:
    """The comment workflow of a fork's pull request: it runs from the default branch with a
    token that can write, so it trusts nothing the pull request's run made but the verdicts
    of its check.json (shown as data). It finds the pull request from the run's head, fetches
    its commits as objects (nothing of it is checked out), reviews it with the base's
    templates and keeps its comment up to date."""
    run = event().get("workflow_run") or {}
    api = ghcomment.Api()
    try:
        pull = api.pull_of_run(run)
        if inp("PR_NUMBER"):
            pull = api.call("GET", f"/repos/{api.repo}/pulls/{int(inp('PR_NUMBER'))}")
    except urllib.error.HTTPError as exc:
        return ghcomment.api_error(exc, "always")
    if not pull:
        ghcomment.notice("no open pull request has the run's head: nothing to post")
        return 0
    number = int(pull["number"])
    head = str(run.get("head_sha") or pull["head"]["sha"])
    base = pull["base"]
    _fetch_with_token(f"+refs/pull/{number}/head", f"+refs/heads/{base['ref']}")
    if git("cat-file", "-t", head, check=False) != "commit":
        error(f"the run's commit {head} is not in pull request #{number} any more")
        return 1
    old = git("merge-base", str(base["sha"]), head)
    print(f"review of #{number}: {old}..{head} (templates of {old[:12]}, the base)")
    warn_about_persisted_credentials()
    check_md = None
    check_json = inp("CHECK_JSON")
    if check_json and os.path.exists(check_json):
        with open(check_json, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError:
                data = None
        if isinstance(data, dict):
            target = str(data.get("target", ""))[:12]
            url = str(run.get("html_url", ""))
            head_repo = (run.get("head_repository") or {}).get("full_name")
            check_md = ghcomment.fork_caveat(head_repo, url) + ghcomment.check_part(
                data, target, url
            )
    full_url = str(run.get("html_url") or run_url())
    changed, comment_path = render_review(old, head, check_md, full_url)
    add_summary(_read(os.path.join(out_dir(), "review.md")) or "")
    with open(comment_path, encoding="utf-8") as f:
        body = f.read()
    try:
        ghcomment.post(api, number, body, if_exists=not changed)
    except urllib.error.HTTPError as exc:
        return ghcomment.api_error(exc, "always")
    return 0


def refresh_bot() -> int:
    """command: refresh (ghbot.py): refresh onto upstream and keep the bot's pull request."""
    import ghbot

    api = ghcomment.Api()
    try:
        settings = ghbot.settings_from(inp)
        outcome = ghbot.refresh(
            settings,
            api,
            lambda args, cwd, env: patchstack(args, None, cwd, env),
            origin_auth_env(),
            out_dir(),
        )
    except ghbot.LostRace as exc:
        error(str(exc))
        add_summary(f"patchstack refresh bot: lost a race, nothing published.\n\n{exc}\n")
        set_outputs(result="lost-race")
        return 1
    except (ghbot.BotFailure, urllib.error.HTTPError, TimedOut) as exc:
        error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        add_summary(f"patchstack refresh bot failed:\n\n```\n{exc}\n```\n")
        ghbot.report_failure(api, str(exc), run_url())
        set_outputs(result="failed")
        return 1
    add_summary(outcome.summary)
    set_outputs(result=outcome.result, pull_request=str(outcome.pr or ""))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "event":
        print(event_field(argv[1]))
        return 0
    if argv == ["check"]:
        return check()
    if argv == ["review"]:
        return review()
    if argv == ["pull-request"]:
        return pull_request()
    if argv == ["refresh"]:
        return refresh_bot()
    if len(argv) >= 2 and argv[0] == "comment":
        rest = argv[2:]
        pr = rest[rest.index("--pr") + 1] if "--pr" in rest else ""
        mode = rest[rest.index("--mode") + 1] if "--mode" in rest else "auto"
        if mode not in ("auto", "always", "never"):
            error(f"comment must be auto, always or never, not {mode!r}")
            return 2
        return comment(argv[1], pr, mode, "--if-exists" in rest)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
