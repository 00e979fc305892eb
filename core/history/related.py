"""Which older messages the turn shows as related to the request: history_search's words and score.

The database's full-text index finds the candidates (the owner's own words, no card titles,
no secrets: ``Conversation.related``); this orders them the same way on every backend, by the
BM25F score history_search re-ranks with (core.bm25) over the message's own words, then newest,
with each word's weight counted among the candidates themselves. Measured on LoCoMo (owner
speaker a, Hit@6) against the backend's order after the most shared words: dev 0.643 → 0.656,
test 0.731 → 0.706. The whole database's counts scored dev 0.666 but cost a query a turn: on
PostgreSQL the turn bench's answer p50 went from 33 to 47 ms.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.bm25 import scores
from core.history.ranking import Frequencies
from core.message import StoredMessage
from core.text import query_terms, stem_counts


def closest(request: str, candidates: Sequence[StoredMessage], count: int) -> list[StoredMessage]:
    """The ``count`` best candidates for ``request``, oldest first."""
    groups = query_terms(request).stem_groups
    if not groups:
        return []
    counted = [stem_counts(m.text) for m in candidates]
    wanted = frozenset().union(*groups)
    held = Frequencies(len(candidates), {s: sum(1 for c in counted if s in c) for s in wanted})
    relevance = scores([(c,) for c in counted], (1.0,), groups, [held.idf(g) for g in groups])
    best = sorted(range(len(candidates)), key=lambda n: (-relevance[n], -candidates[n].id))[:count]
    return sorted((candidates[n] for n in best), key=lambda m: m.id)
