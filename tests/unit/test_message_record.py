"""One Message record: the rules of a stored message applied once, when it is made (core.message)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from core.attachments.media import MediaKind, MediaRef
from core.errors import InvalidInput
from core.message import Message, Role, StoredMessage

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
CARD = "card 4111 1111 1111 1111"


def test_a_message_is_made_with_storable_text_and_its_secret_flag() -> None:
    said = Message(1, Role.OWNER, "a\x00b " + CARD, "telegram", NOW)
    assert said.text == "ab " + CARD and said.secret
    assert not Message(1, Role.OWNER, "my sister Ana", "telegram", NOW).secret
    assert Message(1, Role.OWNER, "x \ud800", "telegram", NOW).text == "x \ufffd"


def test_a_new_text_is_checked_again() -> None:
    said = Message(1, Role.OWNER, "my sister Ana", "telegram", NOW)
    assert replace(said, text=CARD).secret


@pytest.mark.parametrize("when", [datetime(2026, 1, 1), datetime(1899, 12, 31, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)],
                         ids=["naive", "before-1900", "after-2199"])
def test_a_sent_time_without_a_zone_or_out_of_range_is_refused_as_it_is_made(when: datetime) -> None:
    with pytest.raises(InvalidInput):
        Message(1, Role.OWNER, "x", "telegram", when)


def test_a_stored_message_keeps_the_flag_it_was_written_with() -> None:
    """Detected at write: a row read back is not judged again by today's rules."""
    stored = StoredMessage(1, Role.OWNER, CARD, "telegram", NOW, id=7, thread_id=3, secret=False)
    assert not stored.secret and stored.text == CARD
    assert not replace(stored, awaiting=True).secret


def test_an_edit_makes_the_new_words_as_a_message_is() -> None:
    photo = StoredMessage(1, Role.OWNER, "[sent a photo]", "telegram", NOW, attachment=True,
                          media=MediaRef(MediaKind.IMAGE, "file-1"), id=7, thread_id=3, secret=False)
    edited = photo.edited("the harbour, " + CARD + "\x00")
    assert edited.text == "the harbour, " + CARD and edited.secret and (edited.id, edited.thread_id) == (7, 3)
    assert not edited.attachment  # a photo's placeholder given a caption becomes the owner's words
    voice = replace(photo, text="(voice note)", media=None)
    assert voice.edited("words").attachment  # not a photo: still flagged
