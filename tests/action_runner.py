"""Run action.yml's steps the way GitHub Actions does, on this machine, for the tests.

`run_action` reads the composite action, evaluates each step's ``if`` and ``env``
expressions (the small part of GitHub's expression language the action uses: ``inputs.*``,
``steps.*.outputs.*``, ``steps.*.outcome``, ``github.token``, ``runner.temp``, ``contains``,
``==``, ``!=``, ``&&``, ``||``, ``!``, ``cancelled()``) and runs each ``run`` step with bash,
with a fake ``GITHUB_*`` environment: the event file, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
GITHUB_PATH, RUNNER_TEMP. Steps that use another action (``uses:``) are recorded, not run.

`run_job` runs one job of a workflow file (the documented ones in docs/) the same way: its
``if``, each step's ``if`` and ``with`` expressions over a fake ``github`` context; the step
that uses this action runs it with `run_action`, the other actions' steps are recorded with
their inputs.

`FakeGitHub` is a small local HTTP server that answers the few REST calls the action makes
(issue comments, pull requests by head and by number, the refresh bot's pull request: made,
edited, merged; issues: listed, opened, edited), so that the comment steps and the refresh bot
are tested end to end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text())


# -- expressions ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\)|,)|(?P<name>[A-Za-z_][\w.-]*))"
)


def evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """A GitHub expression (without ``${{ }}``) over ``ctx``; raises on anything unknown."""
    tokens = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read expression {expr!r} at {pos}")
        tokens.append(m)
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    at = 0

    def peek() -> str | None:
        return tokens[at].group(0).strip() if at < len(tokens) else None

    def take() -> re.Match[str]:
        nonlocal at
        at += 1
        return tokens[at - 1]

    def primary() -> Any:
        m = take()
        if m.group("str") is not None:
            return m.group("str")[1:-1].replace("''", "'")
        if m.group("op") == "!":
            return not truthy(primary())
        if m.group("op") == "(":
            value = disjunction()
            assert take().group("op") == ")"
            return value
        name = m.group("name")
        if peek() == "(":
            take()
            args = []
            while peek() != ")":
                args.append(disjunction())
                if peek() == ",":
                    take()
            take()
            if name == "contains":
                return str(args[1]).lower() in str(args[0]).lower()
            if name == "cancelled":
                return False
            if name in ("always", "success"):
                return True
            raise ValueError(f"unknown function {name}")
        value: Any = ctx
        for part in name.split("."):
            if not isinstance(value, dict) or part not in value:
                return ""
            value = value[part]
        return value

    def comparison() -> Any:
        left = primary()
        while peek() in ("==", "!="):
            op = take().group("op")
            right = primary()
            left = (str(left) == str(right)) if op == "==" else (str(left) != str(right))
        return left

    def conjunction() -> Any:
        left = comparison()
        while peek() == "&&":
            take()
            right = comparison()
            left = right if truthy(left) else left
        return left

    def disjunction() -> Any:
        left = conjunction()
        while peek() == "||":
            take()
            right = conjunction()
            left = left if truthy(left) else right
        return left

    value = disjunction()
    if at != len(tokens):
        raise ValueError(f"unread tokens in {expr!r}")
    return value


def truthy(value: Any) -> bool:
    return value not in ("", None, False, 0)


def substitute(text: str, ctx: dict[str, Any]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), ctx)), text)


# -- the runner ---------------------------------------------------------------------------------


@dataclass
class StepRun:
    name: str
    outcome: str  # success, failure, skipped
    stdout: str = ""
    stderr: str = ""
    uses: str | None = None


@dataclass
class ActionRun:
    steps: list[StepRun] = field(default_factory=list)
    summary: str = ""
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(s.outcome == "failure" for s in self.steps)

    def step(self, name: str) -> StepRun:
        return next(s for s in self.steps if s.name == name)


def _read_kv(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                out[key] = value
    return out


def run_action(
    action_path: Path,
    workspace: Path,
    temp: Path,
    inputs: dict[str, str],
    event: dict[str, Any],
    env: dict[str, str],
) -> ActionRun:
    """Run the composite action at ``action_path`` in ``workspace`` as GitHub would."""
    action = load_yaml(action_path / "action.yml")
    temp.mkdir(parents=True, exist_ok=True)
    event_path = temp / "event.json"
    event_path.write_text(json.dumps(event))
    summary, github_path = temp / "summary.md", temp / "path.txt"
    summary.write_text("")
    github_path.write_text("")
    given = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    ctx: dict[str, Any] = {
        "github": {"token": env.get("FAKE_TOKEN", "t0ken")},
        "runner": {"temp": str(temp)},
        "steps": {},
    }
    resolved = {}
    for key, value in {**given, **inputs}.items():
        resolved[key] = substitute(value, ctx)
    ctx["inputs"] = resolved
    run = ActionRun()
    base_env = {
        **env,
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_PATH": str(github_path),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(temp),
    }
    for i, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {i}")
        sid = step.get("id", f"__{i}")
        condition = step.get("if", "success()")
        condition = condition.strip()
        if condition.startswith("${{"):
            condition = condition[3:-2]
        gate = condition if "cancelled()" in condition or "always()" in condition else None
        ok_so_far = not run.failed
        if not (truthy(evaluate(condition, ctx)) and (gate is not None or ok_so_far)):
            run.steps.append(StepRun(name, "skipped"))
            ctx["steps"][sid] = {"outcome": "skipped", "outputs": {}}
            continue
        if "uses" in step:
            run.steps.append(StepRun(name, "success", uses=step["uses"]))
            ctx["steps"][sid] = {"outcome": "success", "outputs": {}}
            continue
        output = temp / f"output-{i}.txt"
        output.write_text("")
        extra_path = [p for p in github_path.read_text().splitlines() if p]
        step_env = {
            **base_env,
            "GITHUB_OUTPUT": str(output),
            "PATH": os.pathsep.join([*reversed(extra_path), base_env["PATH"]]),
        }
        for key, value in (step.get("env") or {}).items():
            step_env[key] = substitute(str(value), ctx)
        assert step["shell"] == "bash"
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
        )
        outcome = "success" if proc.returncode == 0 else "failure"
        run.steps.append(StepRun(name, outcome, proc.stdout, proc.stderr))
        ctx["steps"][sid] = {"outcome": outcome, "outputs": _read_kv(output)}
    run.summary = summary.read_text()
    for key, spec in (action.get("outputs") or {}).items():
        run.outputs[key] = substitute(spec["value"], ctx)
    return run


@dataclass
class JobRun:
    skipped: bool = False
    steps: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (uses, with)
    action: ActionRun | None = None


def _condition(text: Any) -> str:
    text = str(text).strip()
    return text[3:-2] if text.startswith("${{") else text


def run_job(
    workflow: Path,
    job: str,
    action_path: Path,
    workspace: Path,
    temp: Path,
    github: dict[str, Any],
    env: dict[str, str],
) -> JobRun:
    """Run ``job`` of ``workflow`` for the event in ``github`` (event_name, event, repository):
    the step that uses this action (``uses: OWNER/patchstack@...``) runs the action at
    ``action_path``; every other step is recorded, with its inputs."""
    flow = load_yaml(workflow)
    spec = flow["jobs"][job]
    ctx: dict[str, Any] = {
        "github": {"token": env.get("FAKE_TOKEN", "t0ken"), "workflow": flow["name"], **github},
        "runner": {"temp": str(temp)},
    }
    run = JobRun()
    if "if" in spec and not truthy(evaluate(_condition(spec["if"]), ctx)):
        run.skipped = True
        return run
    for step in spec["steps"]:
        if "if" in step and not truthy(evaluate(_condition(step["if"]), ctx)):
            continue
        uses = step.get("uses", "")
        given = {  # GitHub hands every input over as a string: true, not True
            k: str(v).lower() if isinstance(v, bool) else substitute(str(v), ctx)
            for k, v in (step.get("with") or {}).items()
        }
        run.steps.append((uses, given))
        if re.fullmatch(r"[\w.-]+/patchstack@[\w.-]+", uses):
            assert run.action is None, "one patchstack step per job"
            run.action = run_action(action_path, workspace, temp, given, github["event"], env)
    return run


# -- a fake GitHub API ---------------------------------------------------------------------------


class FakeGitHub:
    """Issue comments and pull requests of one repository, in memory, on 127.0.0.1."""

    def __init__(
        self, repo: str, token: str = "t0ken", writable: bool = True, git_dir: Path | None = None
    ) -> None:
        self.repo, self.token, self.writable = repo, token, writable
        self.git_dir = git_dir  # a bare repository: merging a pull request merges in it
        self.comments: dict[int, dict[str, Any]] = {}
        self.pulls: list[dict[str, Any]] = []
        self.issues: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str]] = []
        self.next_id = 1000
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urlparse(self.path)
                owner.calls.append((method, self.path))
                if self.headers.get("Authorization") != f"Bearer {owner.token}":
                    return self._reply(401, {"message": "Bad credentials"})
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                self._reply(*owner.answer(method, url.path, parse_qs(url.query), body))

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._handle("PATCH")

            def do_PUT(self) -> None:  # noqa: N802
                self._handle("PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_comment(self, pr: int, body: str, login: str) -> int:
        self.next_id += 1
        self.comments[self.next_id] = {"id": self.next_id, "pr": pr, "body": body, "login": login}
        return self.next_id

    def on(self, pr: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["pr"] == pr]

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        prefix = f"/repos/{self.repo}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}
        rest = path[len(prefix) :]
        if method in ("POST", "PATCH", "PUT") and not self.writable:
            return 403, {"message": "Resource not accessible by integration"}
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            pr = int(m.group(1))
            if method == "POST":
                cid = self.add_comment(pr, body["body"], "github-actions[bot]")
                return 201, {"id": cid}
            page, per = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
            items = [
                {"id": c["id"], "body": c["body"], "user": {"login": c["login"]}}
                for c in self.on(pr)
            ]
            return 200, items[(page - 1) * per : page * per]
        if (m := re.fullmatch(r"/issues/comments/(\d+)", rest)) and method == "PATCH":
            self.comments[int(m.group(1))]["body"] = body["body"]
            return 200, {"id": int(m.group(1))}
        if rest == "/pulls" and method == "GET":
            head = query.get("head", [""])[0]
            state = query.get("state", ["open"])[0]
            return 200, [
                p
                for p in self.pulls
                if p["head"]["label"] == head and state in ("all", p.get("state", "open"))
            ]
        if rest == "/pulls" and method == "POST":
            number = self.new_number()
            owner = self.repo.split("/")[0]
            pr = {
                "number": number,
                "state": "open",
                "title": body["title"],
                "body": body["body"],
                "head": {"label": f"{owner}:{body['head']}", "ref": body["head"]},
                "base": {"ref": body["base"]},
                "merged": False,
            }
            self.pulls.append(pr)
            return 201, pr
        if m := re.fullmatch(r"/pulls/(\d+)(/merge)?", rest):
            found = [p for p in self.pulls if p["number"] == int(m.group(1))]
            if not found:
                return 404, {"message": "Not Found"}
            if method == "PATCH" and not m.group(2):
                found[0].update({k: v for k, v in body.items() if k in ("title", "body")})
                return 200, found[0]
            if method == "PUT" and m.group(2):
                if self.git_dir is not None:
                    self.merge(found[0], body.get("sha"))
                found[0].update(merged=True, state="closed", merged_sha=body.get("sha"))
                return 200, {"merged": True}
            if method == "GET" and not m.group(2):
                return 200, found[0]
        if rest == "/issues" and method == "GET":
            return 200, [i for i in self.issues if i["state"] == "open"]
        if rest == "/issues" and method == "POST":
            issue = {"number": self.new_number(), "state": "open", **body}
            self.issues.append(issue)
            return 201, issue
        if (m := re.fullmatch(r"/issues/(\d+)", rest)) and method == "PATCH":
            found = [i for i in self.issues if i["number"] == int(m.group(1))]
            if found:
                found[0].update(body)
                return 200, found[0]
        return 404, {"message": "Not Found"}

    def merge(self, pr: dict[str, Any], sha: str | None) -> None:
        """GitHub's "merge" method: a merge commit of the base branch and the head (the
        head's commit must be ``sha``), its first parent the base branch."""

        def git(*args: str) -> str:
            return subprocess.run(
                ["git", "-C", str(self.git_dir), *args], capture_output=True, text=True, check=True
            ).stdout.strip()

        base = git("rev-parse", f"refs/heads/{pr['base']['ref']}")
        head = git("rev-parse", f"refs/heads/{pr['head']['ref']}")
        assert sha in (None, head), "the head moved: GitHub answers 409"
        tree = git("merge-tree", "--write-tree", base, head).splitlines()[0]
        merged = git(
            "-c",
            "user.name=GitHub",
            "-c",
            "user.email=noreply@github.com",
            "commit-tree",
            tree,
            "-p",
            base,
            "-p",
            head,
            "-m",
            f"Merge pull request #{pr['number']}",
        )
        git("update-ref", f"refs/heads/{pr['base']['ref']}", merged, base)

    def new_number(self) -> int:
        self.next_id += 1
        return self.next_id
