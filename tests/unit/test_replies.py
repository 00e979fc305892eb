"""Reply splitting on plain text: every part fits, cuts fall on paragraphs, sentences, then spaces."""

from __future__ import annotations

import pytest

from adapters.local.chat import PLAIN
from adapters.telegram.sink import TELEGRAM_LIMIT
from adapters.whatsapp.sink import WHATSAPP_LIMIT
from core.markdown.parsing import read
from core.markdown.pieces import verbatim
from core.markdown.splitting import split
from core.replies import Reply, choice_lines


def split_reply(text: str, limit: int) -> list[str]:
    return split(read(text, PLAIN), limit, verbatim)


def test_a_short_reply_is_one_part() -> None:
    assert split_reply("  Hello there.  ", TELEGRAM_LIMIT) == ["Hello there."]
    assert split_reply("", TELEGRAM_LIMIT) == []


def test_paragraphs_are_preferred_then_sentences_then_spaces() -> None:
    first, second = "A" * 900 + ".", "B" * 500 + "."
    assert split_reply(f"{first}\n\n{second}", 1_000) == [first, second]
    sentences = "One sentence here. " * 100
    parts = split_reply(sentences, WHATSAPP_LIMIT)
    assert all(len(p) <= WHATSAPP_LIMIT and p.endswith(".") for p in parts)
    words = "word " * 1_000
    assert all(len(p) <= 1_000 and not p.endswith(" ") for p in split_reply(words, 1_000))


@pytest.mark.parametrize("limit", [TELEGRAM_LIMIT, WHATSAPP_LIMIT, 50])
def test_nothing_is_lost_and_every_part_fits(limit: int) -> None:
    text = ("Plans for Porto: the river hotel, three nights.\n\nThen Lisbon! " * 300) + "x" * 5_000
    parts = split_reply(text, limit)
    assert all(0 < len(p) <= limit for p in parts)
    assert "".join(parts).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def test_a_reply_text_form_lists_its_choices() -> None:
    assert Reply("Pick one", ("A", "B")).text_form() == "Pick one\n\n1. A\n2. B"
    assert Reply("Plain").text_form() == "Plain"
    assert choice_lines(("A", "B")) == "1. A\n2. B" and choice_lines(()) == ""
