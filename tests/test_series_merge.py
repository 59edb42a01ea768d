"""The pure three-way merge of a series file (`model.seriesmerge`), the merge driver's core:
independent changes on both sides merge, a patch is followed through a rename, and what cannot
merge is named."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from patchstack.model.series import parse_series
from patchstack.model.seriesmerge import merge_series

B1 = "1" * 40
B2 = "2" * 40
C1 = "a" * 40
C2 = "b" * 40
HEAD = "# patchstack series: one patch a line, 'name.patch [-pN] # tag[, label...]'\n"


def series(*lines: str, base: str = B1, marks: tuple[str, ...] = ()) -> str:
    return (
        HEAD
        + f"# base: {base} upstream/main\n"
        + "".join(marks)
        + "".join(f"{ln}\n" for ln in lines)
    )


BASE = series("a.patch # essential", "b.patch # diagnostic", "c.patch # optimization")


def test_appends_on_both_sides_merge_ours_first() -> None:
    ours = series(*BASE.splitlines()[2:], "d.patch # essential")
    theirs = series(*BASE.splitlines()[2:], "e.patch # diagnostic")
    got = merge_series(BASE, ours, theirs)
    assert got.text == series(*BASE.splitlines()[2:], "d.patch # essential", "e.patch # diagnostic")


def test_retag_here_reorder_and_insert_there() -> None:
    ours = series("a.patch # essential", "b.patch # optimization, nvidia", "c.patch # optimization")
    theirs = series(
        "c.patch # optimization",
        "a.patch # essential",
        "x.patch # essential",
        "b.patch # diagnostic",
    )
    got = merge_series(BASE, ours, theirs)
    assert got.text == series(
        "c.patch # optimization",
        "a.patch # essential",
        "x.patch # essential",
        "b.patch # optimization, nvidia",
    )


def test_a_rename_is_followed_by_the_other_sides_retag_and_mark() -> None:
    ours = series("a.patch # essential", "bee.patch # diagnostic", "c.patch # optimization")
    theirs = series(
        *BASE.splitlines()[2:-1], "c.patch # essential", marks=(f"# deferred: b.patch {C1}\n",)
    )
    theirs = series(
        "a.patch # essential",
        "b.patch # optimization",
        "c.patch # optimization",
        marks=(f"# deferred: b.patch {C1}\n",),
    )
    got = merge_series(BASE, ours, theirs)
    assert got.text == series(
        "a.patch # essential",
        "bee.patch # optimization",
        "c.patch # optimization",
        marks=(f"# deferred: bee.patch {C1}\n",),
    )


def test_marks_on_both_sides_of_different_patches() -> None:
    ours = series(*BASE.splitlines()[2:], marks=(f"# deferred: a.patch {C1}\n",))
    theirs = series(*BASE.splitlines()[2:], marks=(f"# upstream: c.patch {C2} in {C1}\n",))
    got = merge_series(BASE, ours, theirs)
    assert got.text == series(
        *BASE.splitlines()[2:],
        marks=(f"# deferred: a.patch {C1}\n", f"# upstream: c.patch {C2} in {C1}\n"),
    )


def test_the_same_retag_on_both_sides_is_no_conflict() -> None:
    both = series("a.patch # diagnostic", "b.patch # diagnostic", "c.patch # optimization")
    assert merge_series(BASE, both, both).text == both


def test_what_cannot_merge_is_named() -> None:
    def lines(*ls: str) -> str:
        return series(*ls)

    cases = {
        "b.patch: changed on both sides": (
            lines("a.patch # essential", "b.patch # essential", "c.patch # optimization"),
            lines("a.patch # essential", "b.patch # optimization", "c.patch # optimization"),
        ),
        "b.patch: deleted on ours, changed on the other side": (
            lines("a.patch # essential", "c.patch # optimization"),
            lines("a.patch # essential", "b.patch # essential", "c.patch # optimization"),
        ),
        "both sides reordered": (
            lines("b.patch # diagnostic", "a.patch # essential", "c.patch # optimization"),
            lines("a.patch # essential", "c.patch # optimization", "b.patch # diagnostic"),
        ),
        "d.patch: added on both sides, differently": (
            lines(*BASE.splitlines()[2:], "d.patch # essential"),
            lines(*BASE.splitlines()[2:], "d.patch # diagnostic"),
        ),
        "both sides moved the base": (
            series(*BASE.splitlines()[2:], base=B2),
            series(*BASE.splitlines()[2:], base="3" * 40),
        ),
    }
    for reason, (ours, theirs) in cases.items():
        got = merge_series(BASE, ours, theirs)
        assert got.text is None, reason
        assert any(reason in c for c in got.conflicts), (reason, got.conflicts)


def test_one_side_refreshed_the_other_appended() -> None:
    ours = series(*BASE.splitlines()[2:], base=B2)
    theirs = series(*BASE.splitlines()[2:], "d.patch # essential")
    assert merge_series(BASE, ours, theirs).text == series(
        *BASE.splitlines()[2:], "d.patch # essential", base=B2
    )


NAMES = [f"p{i}.patch" for i in range(6)]
TAGS = ["essential", "diagnostic", "optimization"]


@st.composite
def edits(draw: st.DrawFn, start: list[tuple[str, str]], prefix: str) -> list[tuple[str, str]]:
    """One maintainer's edits of a series: retags, deletes or additions (both at one place
    would read as a rename), one move."""
    out = list(start)
    adds = draw(st.booleans())
    for i in range(len(out)):
        what = draw(st.sampled_from(["keep", "keep", "retag", "keep" if adds else "delete"]))
        if what == "retag":
            out[i] = (out[i][0], draw(st.sampled_from(TAGS)))
        elif what == "delete":
            out[i] = ("", "")
    out = [e for e in out if e[0]]
    if out and draw(st.booleans()):
        moved = out.pop(draw(st.integers(0, len(out) - 1)))
        out.insert(draw(st.integers(0, len(out))), moved)
    for j in range(draw(st.integers(0, 2)) if adds else 0):
        out.insert(
            draw(st.integers(0, len(out))), (f"{prefix}{j}.patch", draw(st.sampled_from(TAGS)))
        )
    return out


def text(entries: list[tuple[str, str]]) -> str:
    return series(*(f"{n} # {t}" for n, t in entries))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_merging_is_symmetric_and_keeps_every_change(data: st.DataObject) -> None:
    start = [(n, data.draw(st.sampled_from(TAGS))) for n in NAMES[: data.draw(st.integers(0, 6))]]
    ours = data.draw(edits(start, "ours"))
    theirs = data.draw(edits(start, "theirs"))
    o, a, b = text(start), text(ours), text(theirs)
    got, back = merge_series(o, a, b), merge_series(o, b, a)
    assert got.clean == back.clean
    # A side that changed nothing gives the other side, exactly.
    assert merge_series(o, o, b).text == b
    assert merge_series(o, a, o).text == a
    if not got.clean:
        return
    assert got.text is not None and back.text is not None
    merged = parse_series(got.text)
    assert sorted(merged.names) == sorted(parse_series(back.text).names)
    base = dict(start)
    for side in (dict(ours), dict(theirs)):
        for name, tag in side.items():
            if name not in base or tag != base[name]:
                assert merged.entry(name).tag == tag  # every change of a side is in
        for name in base:
            if name not in side and name in merged:
                raise AssertionError(f"{name} deleted on one side survived")
    for name in merged.names:  # nothing appears from nowhere
        assert name in dict(ours) or name in dict(theirs)


def test_line_endings_and_comments_between_patches_keep_their_bytes() -> None:
    crlf = f"# base: {B1}\r\na.patch # essential\r\nb.patch # diagnostic\r\n"
    ours = crlf + "c.patch # essential\r\n"
    theirs = crlf.replace("a.patch # essential", "a.patch # optimization")
    assert merge_series(crlf, ours, theirs).text == ours.replace(
        "a.patch # essential", "a.patch # optimization"
    )
    grouped = f"# base: {B1}\n# group 1\na.patch # essential\n\n# group 2\nb.patch # diagnostic\n"
    ours = grouped.replace("# group 2", "# group two")
    theirs = grouped + "c.patch # essential\n"
    assert merge_series(grouped, ours, theirs).text == ours + "c.patch # essential\n"


def test_a_patch_replaced_by_another_is_no_rename() -> None:
    """One side drops b and adds x with another tag in its place; the other retags b: that is
    a patch deleted here and changed there, not b renamed to x."""
    ours = series("a.patch # essential", "x.patch # essential", "c.patch # optimization")
    theirs = series("a.patch # essential", "b.patch # optimization", "c.patch # optimization")
    got = merge_series(BASE, ours, theirs)
    assert got.text is None
    assert any("b.patch: deleted on ours" in c for c in got.conflicts), got.conflicts
