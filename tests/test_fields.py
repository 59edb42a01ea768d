"""A patch's fields (model/fields): reading DEP-3, SUSE and Yocto upstream status and the probe
from the header block and the description, and writing them without touching other bytes."""

from __future__ import annotations

from datetime import date

import pytest

from patchstack.model import fields as F
from patchstack.model.patchfile import parse_patch

DIFF = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"


def state(description: str, header: tuple[tuple[str, str], ...] = ()) -> F.Upstream:
    return F.upstream_of(F.read(description, header))


def test_each_vocabulary_reads_as_one_state() -> None:
    assert state("Forwarded: https://example.org/pull/3").state == F.SUBMITTED
    assert state("Forwarded: no").state == F.PENDING
    assert state("Forwarded: not-needed (fork only)") == F.Upstream(
        F.NOT_NEEDED, "fork only", "Forwarded"
    )
    applied = state("Forwarded: https://x/1\nApplied-Upstream: commit:0be30d4aa1")
    assert (applied.state, applied.commit) == (F.APPLIED_STATE, "0be30d4aa1")
    suse = state("", (("Patch-mainline", "v6.2-rc1"), ("Git-commit", "0123abcd" * 5)))
    assert (suse.state, suse.commit) == (F.APPLIED_STATE, "0123abcd" * 5)
    assert state("", (("Patch-mainline", "Submitted, 2026-01-03 lkml"),)).state == F.SUBMITTED
    assert state("", (("Patch-mainline", "Never, SUSE specific"),)).state == F.NOT_NEEDED
    assert state("Upstream-Status: Pending").state == F.PENDING
    yocto = state("Upstream-Status: Backport [https://git.example.org/commit/9f8e7d6c]")
    assert (yocto.state, yocto.commit) == (F.APPLIED_STATE, "9f8e7d6c")
    assert state("Upstream-Status: Inappropriate [oe specific]").detail == "oe specific"
    assert state("Upstream-Status: Denied").state == F.REJECTED
    assert state("Origin: upstream, commit:abcdef12").commit == "abcdef12"
    assert state("Origin: vendor").state == F.NONE
    assert state("Plain text. Forwarded: no, says the prose.").state == F.NONE


def test_fields_are_read_from_field_paragraphs_only() -> None:
    description = (
        "Forwarded: in a sentence of prose\nthat goes on.\n\n"
        "Upstream-Status: Submitted [lists.example.org]\n\n"
        "Signed-off-by: A <a@b>\nPatchstack-Probe: python3 -c 'import x'\n"
    )
    found = F.read(description)
    assert [f.key for f in found] == ["Upstream-Status", "Patchstack-Probe"]
    assert F.probe_of(found) == "python3 -c 'import x'"
    assert state(description).state == F.SUBMITTED


def test_a_patch_file_header_block_carries_fields_too() -> None:
    mail = (
        b"From: A <a@b>\nSubject: [PATCH] x\nPatch-mainline: Queued\nReferences: bsc#1\n\n"
        b"Why.\n---\n" + DIFF
    )
    p = parse_patch(mail, "x.patch")
    assert p.fields == (("Patch-mainline", "Queued"),)
    assert state(p.description, p.fields).state == F.SUBMITTED


def test_write_replaces_in_place_and_keeps_every_other_byte() -> None:
    message = "Subject line\n\nBody  with  spaces.\n\nForwarded: no\nSigned-off-by: A <a@b>\n"
    out = F.write(message, [("Forwarded", "https://x/pull/9"), ("Last-Update", "2026-02-01")])
    assert out == (
        "Subject line\n\nBody  with  spaces.\n\n"
        "Forwarded: https://x/pull/9\nSigned-off-by: A <a@b>\nLast-Update: 2026-02-01\n"
    )
    assert F.write(out, [("Forwarded", "no"), ("Last-Update", None)]) == message
    # No field paragraph yet: a new last paragraph; removing it again gives the message back.
    plain = "Subject\n\nProse: with a colon, in a paragraph of prose\nthat goes on.\n"
    probed = F.write(plain, [(F.PROBE, "true")])
    assert probed == plain + "\nPatchstack-Probe: true\n"
    assert F.write(probed, [(F.PROBE, None)]) == plain
    # The subject is never a field paragraph.
    assert (
        F.write("Fix: a thing\n", [(F.PROBE, "true")]) == "Fix: a thing\n\nPatchstack-Probe: true\n"
    )
    with pytest.raises(ValueError):
        F.write(plain, [(F.PROBE, "two\nlines")])


def test_summary_counts_states_and_ages_the_oldest_submission() -> None:
    ups = [
        state("Forwarded: https://a\nLast-Update: 2026-01-01"),
        state("Forwarded: https://b\nLast-Update: 2026-01-30"),
        state("Forwarded: https://c"),
        state("Forwarded: no"),
        state("Forwarded: no"),
        state(""),
    ]
    assert (
        F.summary(ups, date(2026, 2, 11))
        == "3 submitted (oldest 41 days), 2 never sent, 1 with no status"
    )
