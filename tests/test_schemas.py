"""The JSON Schemas shipped with the package (patchstack/schemas): one for every --json output,
each a valid Draft 2020-12 schema that the standard tool (check-jsonschema) resolves as it is
installed; every --json output of the test suite is checked against its schema by `Repo.ps`
(tests/schemas.py), and every output carries `version`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from patchstack.demo import build_sandbox

from . import schemas
from .conftest import Repo
from .test_conventions import all_commands


def test_every_json_output_has_a_valid_schema() -> None:
    for path in sorted(schemas.SCHEMAS.glob("*.json")):
        schemas.validator(path.stem)  # check_schema: a valid Draft 2020-12 schema
    named = {}
    for name, cmd in all_commands():
        if any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params):
            args = [*name.split(), "--json"] + (["--list"] if name == "worktree" else [])
            named[name] = schemas.schema_name(args)
    assert named == {
        "bisect": "bisect",
        "check": "check",
        "doctor": "doctor",
        "graph": "graph",
        "import branch": "import-branch",
        "import commits": "import",
        "import mbox": "import",
        "import quilt": "import",
        "list": "series",
        "log": "log",
        "refresh": "refresh",
        "resolutions": "resolutions",
        "review": "review",
        "series": "series",
        "show": "show",
        "status": "status",
        "worktree": "worktree-list",
    }
    assert schemas.schema_name(["log", "oea-routing.patch", "--json"]) == "patch-log"
    matrix = ["bisect", "A", "B", "--matrix", "none;all", "--json", "--", "./t", "--matrix"]
    assert schemas.schema_name(matrix) == "bisect-matrix"
    assert schemas.schema_name(["bisect", "A", "B", "--json", "--", "./t", "--matrix"]) == "bisect"
    shipped = {p.stem for p in schemas.SCHEMAS.glob("*.json")} - {"common"}
    assert shipped == {*named.values(), "patch-log", "bisect-matrix", "resolver"}


def test_a_document_that_breaks_its_schema_is_caught() -> None:
    good = {"version": 1, "base": None, "base_ref": None, "head": "a" * 40, "patches": []}
    schemas.check_output(["series", "--json"], json.dumps(good))
    for bad in (
        {k: v for k, v in good.items() if k != "head"},  # a key that exists today is required
        {**good, "head": "HEAD"},  # an object id is one
        {**good, "patches": [{"name": "x.patch", "tag": "essential"}]},
    ):
        with pytest.raises(AssertionError, match="breaks series.json"):
            schemas.check_output(["series", "--json"], json.dumps(bad))
    schemas.check_output(["series", "--json"], json.dumps({**good, "added_later": 1}))


@pytest.fixture(scope="module")
def fork(module_env) -> Repo:
    box = Path(module_env.mktemp("schemas")) / "box"
    repo = Repo(build_sandbox(str(box)).fork)
    repo.ps("push", "--only", "essential")
    return repo


def test_every_output_carries_version_and_fits_its_schema(fork: Repo, tmp_path) -> None:
    """Repo.ps checks each against its schema; the standard tool too, on the files as
    installed (their common.json references resolved next to them)."""
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("one.patch\n")
    (quilt / "one.patch").write_text("--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+notes\n")
    outputs = {}
    for args in (
        ("series", "--json"),
        ("list", "--json"),
        ("status", "--json"),
        ("check", "--json"),
        ("show", "oea-routing", "--json"),
        ("graph", "--json"),
        ("graph", "--format", "json"),
        ("log", "--json"),
        ("log", "oea-routing", "--json"),
        ("worktree", "--list", "--json"),
        ("refresh", "--json"),
        ("import", "quilt", str(quilt), "--tag", "diagnostic", "--append", "--json"),
    ):
        outputs[args] = json.loads(fork.ps(*args).stdout)
    fork.git("add", "patches")
    fork.git("commit", "-q", "-m", "the series")
    outputs["review"] = json.loads(fork.ps("review", "HEAD~1", "HEAD", "--json").stdout)
    for args, doc in outputs.items():
        entries = doc if isinstance(doc, list) else [doc]
        assert all(isinstance(e.get("version"), int) for e in entries), args
    assert outputs[("graph", "--json")] == outputs[("graph", "--format", "json")]
    assert (
        outputs[("import", "quilt", str(quilt), "--tag", "diagnostic", "--append", "--json")][
            "patches"
        ][0]["name"]
        == "one.patch"
    )
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool, "check-jsonschema is in the test extra"
    status = tmp_path / "status.json"
    status.write_text(json.dumps(outputs[("status", "--json")]))
    checked = subprocess.run(
        [tool, "--schemafile", str(schemas.SCHEMAS / "status.json"), str(status)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    status.write_text(json.dumps({**outputs[("status", "--json")], "head": 1}))
    checked = subprocess.run(
        [tool, "--schemafile", str(schemas.SCHEMAS / "status.json"), str(status)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 1 and "head" in checked.stdout


def test_the_readme_s_command_finds_the_installed_schemas(tmp_path) -> None:
    """The README's line that names the schemas' folder, run as it is (python is the
    interpreter that runs patchstack); `patchstack.schemas` alone is a namespace package,
    whose files() printed MultiplexedPath('...')."""
    readme = (schemas.SCHEMAS.parent.parent / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if ln.startswith('schemas="$(')]
    bin_dir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", f'{line}\nprintf %s "$schemas"'],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert (Path(proc.stdout) / "status.json").is_file(), proc.stdout


def test_graph_takes_json_like_the_others_and_refuses_two_formats(fork: Repo) -> None:
    res = fork.ps("graph", "--json", "--format", "dot", code=2)
    assert "--json and --format dot: give one" in res.stderr
    assert fork.ps("graph").stdout == fork.ps("graph", "--format", "text").stdout


def test_the_schemas_are_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((schemas.SCHEMAS.parent.parent / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    assert "patchstack.schemas" in setuptools["packages"]
    assert "*.json" in setuptools["package-data"]["patchstack.schemas"]


def test_verdicts_evidence_marks_and_recorded_resolutions_fit_the_schemas(tmp_path) -> None:
    """The values a refresh at scale prints: deferred and no-op verdicts, the upstream commit
    that brought a patch (evidence), a conflict upstream superseded, the series' marks, and
    the recorded resolutions (each output checked against its schema by Repo.ps)."""
    from .conftest import make_repo, numbered, replace_line
    from .test_defer import drift_resolved

    files = {"a.py": numbered(30, "a"), "b.py": numbered(30, "b"), "c.py": numbered(30, "c")}
    repo = make_repo(tmp_path / "fork", files)
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 fixed\n")
    repo.ps("new", "taken", "--tag", "essential")
    replace_line(repo, "b.py", "b 20\n", "b 20 fixed\n")
    repo.ps("new", "superseded", "--tag", "essential")
    replace_line(repo, "c.py", "c 5\n", "c 5\ndebug()\n")
    repo.ps("new", "debug", "--tag", "diagnostic")
    replace_line(repo, "c.py", "debug()\n", "")
    repo.ps("new", "undebug", "--tag", "optimization")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 fixed\n")
    repo.commit_all("upstream takes the fix")
    replace_line(repo, "b.py", "b 19\nb 20\n", "b 19 upstream\nb 20 fixed\n")
    repo.commit_all("upstream reworks b")
    repo.git("checkout", "-q", "main")

    check = json.loads(
        repo.ps("check", "--onto", "up", "--except", "diagnostic", "--json", code=1).stdout
    )
    verdicts = {p["name"]: p for p in check["patches"]}
    assert verdicts["taken.patch"]["evidence"]["subject"] == "upstream takes the fix"
    assert verdicts["undebug.patch"]["verdict"] == "no-op" and verdicts["undebug.patch"]["note"]
    (conflict,) = check["conflicts"]
    assert conflict["superseded_by"]["subject"] == "upstream reworks b"
    refresh = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    verdicts = {p["name"]: p for p in refresh["patches"]}
    assert verdicts["superseded.patch"]["verdict"] == "deferred"
    assert verdicts["taken.patch"]["evidence"]["subject"] == "upstream takes the fix"
    assert [c["patch"] for c in refresh["deferred"]] == ["superseded.patch"]
    assert "# upstream: taken.patch " in repo.read("patches/series")
    repo.ps("status", "--json", code=None)
    check = json.loads(repo.ps("check", "--onto", "up", "--verbose", "--json").stdout)
    assert [c["patch"] for c in check["deferred"]] == ["superseded.patch"]
    marks = {
        p["name"]: p["mark"] for p in json.loads(repo.ps("series", "--json").stdout)["patches"]
    }
    assert marks["superseded.patch"]["kind"] == "deferred" and marks["debug.patch"] is None
    assert marks["taken.patch"]["kind"] == "upstream" and marks["taken.patch"]["evidence"]

    other = drift_resolved(tmp_path / "drift")
    (record,) = json.loads(other.ps("resolutions", "--json").stdout)["resolutions"]
    assert record["patch"] == "p1.patch" and record["path"] == "a.py"
    other.ps("undo")
    other.ps("undo")  # back to before the refresh; the record stays
    check = json.loads(other.ps("check", "--onto", "up", "--json").stdout)
    assert [p["recorded"] for p in check["patches"]] == [True, False, False]
