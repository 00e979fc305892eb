"""Which older messages the turn shows as related to the request: history_search's words and score.

The database's full-text index finds the candidates (the owner's own words, no card titles,
no secrets: ``Conversation.related``) and their words' document frequencies; this orders
them the same way on every backend, by the BM25F score history_search re-ranks with
(core.bm25) over the message's own words, then newest. FTS5's bm25 and PostgreSQL's
``ts_rank_cd`` only pick the candidates. Measured on LoCoMo (owner speaker a, Hit@6):
dev 0.643 → 0.666, test 0.731 → 0.729 against the backend's order after the most shared words.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.bm25 import scores
from core.history.ranking import Frequencies
from core.message import StoredMessage
from core.text import query_terms, stem_counts


def closest(request: str, candidates: Sequence[StoredMessage], count: int, frequencies: Frequencies) -> list[StoredMessage]:
    """The ``count`` best candidates for ``request``, oldest first; ``frequencies``: the
    database's document frequencies of the request's stems (its words' IDF)."""
    groups = query_terms(request).stem_groups
    if not groups:
        return []
    relevance = scores([(stem_counts(m.text),) for m in candidates], (1.0,), groups, [frequencies.idf(g) for g in groups])
    best = sorted(range(len(candidates)), key=lambda n: (-relevance[n], -candidates[n].id))[:count]
    return sorted((candidates[n] for n in best), key=lambda m: m.id)
