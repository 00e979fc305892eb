"""The one BM25F score (core.bm25) as memory_find and the related messages use it."""

from __future__ import annotations

from datetime import UTC, datetime

from core.bm25 import scores
from core.history.related import closest
from core.message import Role, StoredMessage
from core.text import query_terms, stem_counts

T0 = datetime(2024, 5, 8, 12, 0, tzinfo=UTC)


def _scored(texts: list[str], query: str, weights: tuple[float, ...] = (1.0,)) -> list[float]:
    documents = [tuple(stem_counts(field) for field in text.split("|")) for text in texts]
    return scores(documents, weights, query_terms(query).stem_groups)


def test_a_document_with_every_word_outranks_one_with_only_the_rarest() -> None:
    both, rare, common, *_, neither = _scored(
        ["ferry to the island", "ferry on sunday", "island walk", "island beach", "island hotel", "a quiet day"],
        "island ferry")
    assert both > rare > common > 0 and neither == 0  # "ferry" is in two documents, "island" in four


def test_a_word_in_a_heavier_field_counts_more_and_repeats_saturate() -> None:
    in_slug, in_text = _scored(["property tax|paid by debit", "tax|a property in Braga"], "property", (2.0, 1.0))
    assert in_slug > in_text
    once, thrice = _scored(["the ferry left late", "ferry ferry ferry late"], "ferry")
    assert once < thrice < 3 * once


def test_a_word_and_its_irregular_forms_are_one_word_of_the_query() -> None:
    went, go, both = _scored(["we went home", "we go home", "we go and went home"], "go home")
    assert went == go and both > go  # the forms add up in the count, never as a second word


def _message(id_: int, text: str) -> StoredMessage:
    return StoredMessage(1, Role.OWNER, text, "test", T0, id=id_, thread_id=1, secret=False)


def test_related_messages_are_the_best_scored_oldest_first_the_newest_winning_a_tie() -> None:
    candidates = [_message(1, "dinner in Porto"), _message(2, "Porto was rainy"), _message(3, "dinner in Porto"),
                  _message(4, "Casa Ramos restaurant in Porto for dinner")]
    found = closest("Book dinner at the Porto restaurant", candidates, 2)  # weights counted among the four
    assert [m.id for m in found] == [3, 4]
    assert closest("", candidates, 2) == []
