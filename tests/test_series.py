"""The series file model: round trips, rewrites, and every bad line named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchstack.errors import InputError
from patchstack.model.series import TAGS, Entry, parse_series

from .conftest import Repo, slow_after

SAMPLE = (
    "# fork of upstream\n"
    "# base: 0123456789abcdef0123456789abcdef01234567 upstream/main\n"
    "\n"
    "a.patch # essential\n"
    "b.patch -p0 # diagnostic, nccl\n"
    "  # a comment in the middle\n"
    "c.patch #optimization,nvidia , moe\n"
)


def test_parse_entries_tags_labels_and_base() -> None:
    s = parse_series(SAMPLE)
    assert s.names == ("a.patch", "b.patch", "c.patch")
    assert [e.tag for e in s.entries] == ["essential", "diagnostic", "optimization"]
    assert s.entry("b.patch").strip == 0 and s.entry("a.patch").strip is None
    assert s.entry("c.patch").labels == ("nvidia", "moe")
    assert s.base == "0123456789abcdef0123456789abcdef01234567"
    assert s.base_ref == "upstream/main"
    assert s.format() == SAMPLE


def test_with_base_changes_only_the_base_line() -> None:
    s = parse_series(SAMPLE).with_base("f" * 40)
    assert s.format() == SAMPLE.replace("0123456789abcdef0123456789abcdef01234567", "f" * 40)
    assert parse_series("a.patch # essential\n").with_base("e" * 40).format() == (
        f"# base: {'e' * 40}\na.patch # essential\n"
    )


def test_insert_and_remove_keep_other_lines() -> None:
    s = parse_series(SAMPLE)
    t = s.insert(Entry("new.patch", "essential"), after="a.patch")
    assert t.names == ("a.patch", "new.patch", "b.patch", "c.patch")
    assert "new.patch # essential\n" in t.format()
    assert t.remove("new.patch").format() == SAMPLE
    first = s.insert(Entry("z.patch", "diagnostic"), after=None)
    assert first.names[0] == "z.patch"
    assert (
        parse_series("a.patch # essential")
        .insert(Entry("b.patch", "essential"), "a.patch")
        .format()
        == "a.patch # essential\nb.patch # essential\n"
    )


line = st.one_of(
    st.builds(
        lambda n, p, t, labels, sp: (
            f"{n}.patch{' -p' + str(p) if p is not None else ''}"
            f"{sp}# {t}{''.join(', ' + lab for lab in labels)}"
        ),
        st.from_regex(r"[a-z0-9][a-z0-9_-]{0,12}", fullmatch=True),
        st.one_of(st.none(), st.integers(0, 9)),
        st.sampled_from(TAGS),
        st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), max_size=2),
        st.sampled_from([" ", "  ", "\t"]),
    ),
    st.from_regex(r"#[^\n\r]{0,30}", fullmatch=True),
    st.just(""),
    st.just("   "),
)


@given(st.lists(line, max_size=20), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_round_trip_gives_the_same_bytes(lines, eol, final_newline) -> None:
    seen = set()
    unique = []
    for ln in lines:
        key = ln.split(" ")[0].split("\t")[0]
        if ln.endswith(TAGS) or ".patch" in ln:
            if key in seen:
                continue
            seen.add(key)
        unique.append(ln)
    text = eol.join(unique) + (eol if final_newline and unique else "")
    assert parse_series(text).format() == text


BAD = [
    ("a.patch # essential\nb.patch # opt\n", 2, "unknown tag 'opt'"),
    ("a.patch\n", 1, "missing tag"),
    ("a.patch #   \n", 1, "missing tag"),
    ("a.patch # essential\n\na.patch # diagnostic\n", 3, "duplicate patch name 'a.patch'"),
    ("dir\\a.patch # essential\n", 1, "path separator"),
    ("dir/../a.patch # essential\n", 1, "'..'"),
    ("dir/.hidden.patch # essential\n", 1, "characters other than"),
    ("/abs.patch # essential\n", 1, "characters other than"),
    ("e\u0301.patch # essential\n", 1, "NFC"),
    ("a\u202eb.patch # essential\n", 1, "characters other than"),
    ("# base: " + "1" * 40 + "\nx.patch # essential\n# base: " + "2" * 40 + "\n", 3, "line 1"),
    ("..a.patch # essential\n", 1, "'..'"),
    ("a b.patch # essential\n", 1, "whitespace"),
    ("a.patch -px # essential\n", 1, "malformed option '-px'"),
    ("a.patch -p # essential\n", 1, "malformed option '-p'"),
    ("a;rm.patch # essential\n", 1, "characters other than"),
    ("a.patch # essential, diagnostic\n", 1, "more than one category tag"),
    ("# base: nothex\n", 1, "not a full commit id"),
]


@pytest.mark.parametrize(("text", "lineno", "message"), BAD)
def test_bad_lines_name_their_line(text: str, lineno: int, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_series(text, "patches/series")
    assert exc.value.line == lineno
    assert f"patches/series:{lineno}: " in exc.value.message
    assert message in exc.value.message


# Every line above is read by the parser by default (test_bad_lines_name_their_line); through
# four commands (exit 2, the line named, nothing changed), the first four by default and the
# others under -m slow: one reader raises them all, and the CLI turns each into exit 2 alike.
@pytest.mark.parametrize(
    ("text", "lineno", "message"), slow_after([pytest.param(*row) for row in BAD], 4)
)
def test_bad_series_exits_2_and_changes_nothing(repo: Repo, text, lineno, message) -> None:
    repo.ps("init")
    (repo.path / "patches" / "a.patch").write_text("x")
    (repo.path / "patches" / "b.patch").write_text("x")
    repo.write("patches/series", text)
    before = repo.state()
    for args in (("series",), ("push", "--all"), ("pop", "--all"), ("status",)):
        result = repo.ps(*args, code=2)
        assert f"series:{lineno}: " in result.stderr, result.stderr
        assert message in result.stderr
        assert repo.state() == before


def test_missing_patch_file_is_named(repo: Repo) -> None:
    repo.ps("init")
    repo.write("patches/series", "# x\ngone.patch # essential\n")
    result = repo.ps("push", "--all", code=2)
    assert "patches/series:2: patch file 'gone.patch' not found" in result.stderr


def test_renamed_retagged_and_moved_keep_every_other_line() -> None:
    s = parse_series(SAMPLE)
    renamed = s.renamed("b.patch", "bee.patch")
    assert renamed.format() == SAMPLE.replace("b.patch -p0", "bee.patch -p0")
    assert renamed.entry("bee.patch").strip == 0 and renamed.names[1] == "bee.patch"
    retagged = s.retagged("c.patch", "essential", ("moe",))
    assert retagged.format() == SAMPLE.replace(
        "c.patch #optimization,nvidia , moe\n", "c.patch # essential, moe\n"
    )
    assert retagged.entry("c.patch").labels == ("moe",)
    assert s.retagged("b.patch", "diagnostic", ()).format() == SAMPLE.replace(", nccl", "")
    moved = s.moved("c.patch", before="a.patch")
    assert moved.names == ("c.patch", "a.patch", "b.patch")
    assert moved.format() == (
        "# fork of upstream\n"
        "# base: 0123456789abcdef0123456789abcdef01234567 upstream/main\n"
        "\n"
        "c.patch #optimization,nvidia , moe\n"
        "a.patch # essential\n"
        "b.patch -p0 # diagnostic, nccl\n"
        "  # a comment in the middle\n"
    )
    assert moved.moved("c.patch", after="b.patch").names == s.names
    # A last line without a newline, and CRLF files.
    crlf = parse_series("a.patch # essential\r\nb.patch # diagnostic")
    assert crlf.moved("b.patch", before="a.patch").format() == (
        "b.patch # diagnostic\r\na.patch # essential\r\n"
    )
    assert crlf.retagged("b.patch", "essential", ()).format().endswith("b.patch # essential\n")
    for text in (renamed, retagged, moved):
        assert parse_series(text.format()).format() == text.format()


@given(st.permutations(["a.patch", "b.patch", "c.patch", "d.patch"]), st.integers(0, 3))
def test_moved_is_a_permutation_that_keeps_comments(order, where) -> None:
    text = "# head\n" + "".join(f"{n} # essential\n# after {n}\n" for n in order)
    s = parse_series(text)
    name, anchor = order[0], order[where]
    if name == anchor:
        return
    t = s.moved(name, after=anchor)
    assert sorted(t.names) == sorted(s.names)
    assert t.names.index(name) == t.names.index(anchor) + 1
    comments = [ln for ln in t.format().splitlines() if ln.startswith("#")]
    assert comments == [ln for ln in text.splitlines() if ln.startswith("#")]


def test_labels_are_single_words_and_never_tags() -> None:
    from patchstack.model.series import validate_label

    assert validate_label("moe") is None
    assert "is a tag" in (validate_label("essential") or "")
    assert validate_label("two words") and validate_label("a,b") and validate_label("")


def test_named_files_reads_a_series_leniently_and_keeps_only_safe_names() -> None:
    from patchstack.model.naming import named_files

    text = (
        "# base: 0123\n"  # a header that does not parse: the names are still read
        "a.patch # essential\n"
        "sub/b.patch -p0 #\n"  # no tag
        "../out.patch # essential\n"
        ".git/config # essential\n"
        "/abs.patch # essential\n"
        "a.patch # diagnostic\n"
    )
    assert named_files(text) == ("a.patch", "sub/b.patch")
