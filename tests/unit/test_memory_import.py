"""Import of another assistant's answer, word for word, with the skip rules."""

from __future__ import annotations

from datetime import UTC, datetime

from core.memory import document as ops
from core.memory.importer import import_answer
from core.memory.model import MemoryDocument, Origin, Status

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
