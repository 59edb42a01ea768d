"""The review as GitHub shows it in a pull request comment (about 800 px wide): the table fits
without breaking a patch name or a line count, and a dropped patch's code is in a collapsed
section. The width is judged by a model of GitHub's stylesheet and of a browser's automatic
table layout (below); where Chromium is installed, a slow test measures the real thing."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox

from .conftest import Repo

WIDTH = 800  # px: a pull request comment
PAD = 27  # px: a cell's padding (6px 13px) and border
TEXT, MONO = 7.6, 7.15  # px per character: 14 px text, code at 85 % (about 0.6 em a glyph)


def table_rows(md: str) -> list[list[str]]:
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("|--")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows]


def _pieces(cell: str) -> list[list[tuple[str, bool]]]:
    """The lines of a cell (split at <br>), each as (text, is code) pieces."""
    cell = re.sub(r"\[(`+.*?`+)\]\(#[^)]*\)", r"\1", cell).replace("&nbsp;", "\u00a0")
    lines = []
    for part in re.split(r"<br\s*/?>", cell):
        pieces = []
        for m in re.finditer(r"(`+)(.*?)\1|([^`]+)", part):
            code, text = m.group(2), m.group(3)
            pieces.append((code, True) if code is not None else (text.replace("\\", ""), False))
        lines.append(pieces)
    return lines


def _width(text: str, code: bool) -> float:
    return len(text) * (MONO if code else TEXT)


def _segments(text: str) -> list[str]:
    """Where a browser may break a line: after a space or a hyphen (not at a no-break space)."""
    return [s for s in re.split(r"(?<=[ -])", text) if s]


def layout(rows: list[list[str]], width: int = WIDTH) -> list[float]:
    """Each column's width, as the automatic table layout gives it: every column its widest
    line when that fits; else its narrowest (its longest unbreakable piece) plus a share of
    what is left in proportion to how much wider it would like to be."""
    cols = len(rows[0])
    least, most = [0.0] * cols, [0.0] * cols
    for row in rows:
        for i, cell in enumerate(row):
            for line in _pieces(cell):
                most[i] = max(most[i], sum(_width(t, c) for t, c in line) + PAD)
                for t, c in line:
                    for seg in _segments(t):
                        least[i] = max(least[i], _width(seg.rstrip(" "), c) + PAD)
    if sum(most) <= width:
        return most
    spare = max(0.0, width - sum(least))
    return [
        a + (b - a) * spare / (sum(most) - sum(least)) for a, b in zip(least, most, strict=True)
    ]


def broken(rows: list[list[str]]) -> list[str]:
    """The patch names and line counts a browser breaks across lines at ``WIDTH``."""
    widths = layout(rows)
    found = []
    for row in rows[1:]:
        for i, cell in enumerate(row):
            for line in _pieces(cell):
                for text, code in line:
                    counts = re.fullmatch(r"\s*\+\d+\s*−\d+\s*", text)
                    if (code or counts) and _width(text.strip(), code) + PAD > widths[i] + 0.5:
                        found.append(text.strip())
    return found


@pytest.fixture(scope="module")
def demo_review(module_env) -> str:
    """A review of the example series (its real, long names): one patch retagged, one
    dropped, one added."""
    repo = Repo(build_sandbox(str(Path(module_env.mktemp("layout")) / "box")).fork)
    shutil.copytree(repo.path / "patches", repo.path.parent / "before")
    repo.ps("tag", "nccl-env-propagation", "optimization")
    repo.ps("delete", "mla-kv-gather-then-cast")
    repo.write("srt/managers/scheduler.py", repo.read("srt/managers/scheduler.py") + "x = 1\n")
    repo.ps(
        "new",
        "scheduler-batch-size-knob",
        "--tag",
        "optimization",
        "-m",
        "scheduler: a knob to tune the batch size at run time, read from the environment",
        "srt/managers/scheduler.py",
    )
    return str(repo.ps("review", "../before", "patches", "--format", "markdown").stdout)


def test_the_markdown_table_fits_a_pull_request_comment(demo_review: str) -> None:
    rows = table_rows(demo_review)
    assert rows[0] == ["#", "Patch", "Status", "Lines"]
    assert len(rows) == 9  # the header, then the 8 patches of either side
    assert broken(rows) == []
    widths = layout(rows)
    subject = "kimi\\_k25: delegate EAGLE-3 hooks to the language model"
    assert any(subject in row[1] for row in rows), rows
    assert widths[1] - PAD > _width("deepseek\\_v2: capture the embedding for EAGLE-3", False)
    # The six-column table it replaces broke every long name at its hyphens.
    old = [["#", "Patch", "Tag", "Status", "Lines", "Subject"]]
    for r in rows[1:]:
        name, rest = r[1].split(" · ", 1)
        tag, subject = rest.split("<br>", 1)
        old.append([r[0], name, tag, r[2], r[3].replace("&nbsp;", " "), subject])
    assert len(broken(old)) >= 5


def test_a_dropped_patch_shows_its_code_collapsed(demo_review: str) -> None:
    md = demo_review
    row = next(r for r in table_rows(md) if "mla-kv-gather-then-cast.patch" in r[1])
    assert row[0] == "" and row[2] == "dropped"
    anchor = re.search(r"\(#(ps-\d+-mla-kv-gather-then-cast-patch)\)", row[1])
    assert anchor, row
    at = md.index(f'<a name="{anchor.group(1)}"></a>')
    section = md[at : md.index("</details>", at)]
    assert "<details><summary><code>mla-kv-gather-then-cast.patch</code>: dropped" in section
    assert "The code this change takes away with it (the dropped patch's diff):" in section
    assert "+++ b/srt/layers/attention/flashinfer_mla_backend.py" in section


@pytest.mark.slow
def test_chromium_shows_the_table_without_breaking_a_name(demo_review: str, tmp_path) -> None:
    """In Chromium, with GitHub's table and code rules, at 800 px."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed")
    rows = table_rows(demo_review)

    def cell(text: str, tag: str) -> str:
        text = re.sub(r"\[(`+.*?`+)\]\(#[^)]*\)", r"\1", text)
        text = re.sub(r"(`+)(.*?)\1", lambda m: f"<code>{html.escape(m.group(2))}</code>", text)
        return f"<{tag}>{text.replace(chr(92), '')}</{tag}>"

    body = "<tr>" + "".join(cell(c, "th") for c in rows[0]) + "</tr>"
    body += "".join("<tr>" + "".join(cell(c, "td") for c in r) + "</tr>" for r in rows[1:])
    page = tmp_path / "table.html"
    page.write_text(
        "<html><head><style>"
        f".markdown-body {{ width: {WIDTH}px; font: 14px/1.5 -apple-system, 'Segoe UI',"
        " 'Noto Sans', Helvetica, Arial, sans-serif }"
        " table { display: block; width: max-content; max-width: 100%; overflow: auto;"
        " border-spacing: 0; border-collapse: collapse }"
        " td, th { padding: 6px 13px; border: 1px solid #d1d9e0 }"
        " code { padding: .2em .4em; font-size: 85%; white-space: break-spaces;"
        " font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono',"
        " monospace }"
        f"</style></head><body><div class='markdown-body'><table>{body}</table></div>"
        "<script>var t = document.querySelector('table'); document.body.dataset.m ="
        " JSON.stringify({scroll: t.scrollWidth, width: t.clientWidth, broken:"
        " [...t.querySelectorAll('td code')].filter(c => c.getClientRects().length > 1)"
        ".map(c => c.textContent)});</script></body></html>"
    )
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    found = json.loads(html.unescape(re.search(r'data-m="([^"]*)"', dom).group(1)))  # type: ignore[union-attr]
    assert found["broken"] == [] and found["scroll"] <= found["width"], found


def _series_dir(path: Path, names: list[str]) -> None:
    """A series folder of one-line patches, each creating its own file."""
    (path / "patches").mkdir(parents=True)
    for i, name in enumerate(names):
        body = (
            f"From: Fork <fork@example.org>\nSubject: [PATCH] {name}: {'a long subject ' * 6}\n\n"
            f"---\ndiff --git a/f{i}.py b/f{i}.py\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/f{i}.py\n@@ -0,0 +1 @@\n+x = {i}\n"
        )
        (path / "patches" / name).write_text(body)
    (path / "patches" / "series").write_text("".join(f"{n} # essential\n" for n in names))


@pytest.mark.slow
def test_chromium_shows_a_47_patch_html_review_within_1280_px(tmp_path) -> None:
    """The HTML page of a review of 47 patches with long names, each renamed to a longer one
    (the status cell says 'renamed (from OLD)'), fits a 1,280 px window: the page never
    scrolls sideways outside its diffs (a real branch's review overflowed at 1,382 px)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed")
    old = [
        f"reload-opt-in-record-replay-{i:02d}-SGLANG_ENABLE_RECORD_REPLAY.patch" for i in range(47)
    ]
    new = [n.replace("reload-opt-in", "partial-reload-opt-in-and-delta") for n in old]
    _series_dir(tmp_path / "old", old)
    _series_dir(tmp_path / "new", new)
    repo = Repo(tmp_path / "new")
    subprocess.run(["git", "init", "-q", str(repo.path)], check=True)
    page = tmp_path / "review.html"
    repo.ps(
        "review",
        str(tmp_path / "old/patches"),
        str(tmp_path / "new/patches"),
        "--format",
        "html",
        "-o",
        str(page),
    )
    text = page.read_text()
    assert text.count("renamed (from ") >= 47
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    probe = (
        "<script>{ var d = document.documentElement; document.body.dataset.m ="
        " JSON.stringify({scroll: d.scrollWidth, width: d.clientWidth, wide:"
        " [...document.querySelectorAll('body *')].filter(e => !e.closest('pre') &&"
        " e.getBoundingClientRect().right > d.clientWidth + 1).map(e => e.tagName)}); }</script>"
    )
    page.write_text(text.replace("</body>", probe + "</body>"))
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1280,900",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    found = json.loads(html.unescape(re.search(r'data-m="([^"]*)"', dom).group(1)))  # type: ignore[union-attr]
    assert found["scroll"] <= found["width"] and found["wide"] == [], found
