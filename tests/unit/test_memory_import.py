"""Import of another assistant's answer, word for word, with the skip rules."""

from __future__ import annotations

from datetime import UTC, datetime

from core.memory import document as ops
from core.memory.importer import import_answer
from core.memory.values import MemoryDocument, Origin, Status

NOW = datetime(2026, 1, 1, tzinfo=UTC)

ANSWER = """Here is what I know about you.
## About you
- Lives in Lisbon
- Works as a nurse
## People
- Sister: Ana, lives in Porto
- My card is 4111 1111 1111 1111
## Something else
- Likes jazz
- """ + "x" * 4001 + """
"""


def test_bullets_go_to_the_area_of_their_heading_word_for_word() -> None:
    existing = ops.add_entry(MemoryDocument(), ops.make_entry("about/job", "works as a NURSE.", origin=Origin.STATED, now=NOW))
    result = import_answer(existing, ANSWER, NOW)
    texts = {e.path.split("/")[0] + ":" + e.text for e in result.document.entries[1:]}
    assert texts == {"about:Lives in Lisbon", "people:Sister: Ana, lives in Porto", "about:Likes jazz"}
    assert all(e.status is Status.STATED for e in result.document.entries)
    reasons = sorted(why for _, why in result.skipped)
    assert reasons == ["already saved", "looks like a secret (card number)", "over 4,000 characters"]
    assert "Here is what I know" not in " ".join(e.text for e in result.document.entries)


def test_without_bullets_each_line_is_a_note() -> None:
    result = import_answer(MemoryDocument(), "## Preferences\nShort answers\nNo emoji\n", NOW)
    assert [(e.area, e.text) for e in result.document.entries] == [
        ("preferences", "Short answers"), ("preferences", "No emoji")]
    assert len(set(result.saved)) == 2


def test_nods_own_markdown_export_reads_back_as_exactly_its_notes() -> None:
    """Issue 43: 8. Re-importing the export made 42 junk notes: ``**about/job** (Confirmed): …``
    lines, "Summary:" and "Expires:" lines as notes, archived notes back as Confirmed."""
    from datetime import date

    from core.memory.render import render_export
    from core.memory.values import ArchiveReason, Evidence

    doc = MemoryDocument()
    for note in (
        ops.make_entry("about/job", "Works as a nurse\nat Santo António", origin=Origin.STATED, now=NOW,
                       abstract="Nurse", expires=date(2027, 1, 31)),
        ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.INFERRED, now=NOW,
                       evidence=(Evidence(4, "my sister Ana"),)),
        ops.make_entry("routines/gym", "Gym on Tuesdays", origin=Origin.INFERRED, now=NOW,
                       evidence=(Evidence(5, "gym"), Evidence(6, "gym again"))),
        ops.make_entry("lessons/flights", "Never book red-eye flights", origin=Origin.STATED, now=NOW),
    ):
        doc = ops.add_entry(doc, note)
    doc = ops.archive(doc, "lessons/flights", ArchiveReason.WRONG, NOW)
    doc = ops.add_entry(doc, ops.make_entry("lessons/flights", "Avoid red-eye flights", origin=Origin.STATED, now=NOW))
    exported = render_export(doc, "ana")
    assert "## Let go" in exported and "Summary: Nurse" in exported and "_Nothing saved._" in exported

    result = import_answer(MemoryDocument(), exported, NOW)
    assert result.skipped == ()
    assert [(e.path, e.text, e.abstract, e.expires) for e in result.document.entries] == [
        (e.path, e.text, e.abstract, e.expires) for e in doc.entries]
    assert all(e.status is Status.STATED for e in result.document.entries) and result.document.archive == ()
    again = import_answer(result.document, exported, NOW)
    assert again.saved == () and len(again.skipped) == len(doc.entries)  # each already saved, nothing else read
