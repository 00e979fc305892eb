"""Re-ranking the best keyword matches with what a conversation knows about itself.

The backend's BM25 (or ts_rank_cd) scores each message alone. In a conversation a
message's meaning leans on its neighbours: an answer ("yes, in Porto") matters because
of the question just before it. So the top candidates are re-scored:

- a message's own score is scaled by the share of the query's words it contains, so
  one rare word does not outrank a message holding every word of the request;
- it gains half of each adjacent match's score and a fifth of the next ones';
- when the query names the owner, the owner's own messages count double, since the
  question is about what they said.

The weights were tuned on LoCoMo's dev conversations (0–4) only; see tests/bench. Only
matching messages are ranked, so ``totalMatches`` stays an exact count of messages that
contain a query word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.history.scope import Hit
from core.text import stems

WINDOW = 100  # candidates re-ranked; beyond these the backend's order continues
NEIGHBOUR_REACH = 2
NEIGHBOUR_WEIGHTS = (0.5, 0.2)  # adjacent, then one further away
OWNER_NAMED_BOOST = 2.0


def coverage(text: str, query_stems: frozenset[str]) -> float:
    if not query_stems:
        return 1.0
    return len(query_stems & stems(text)) / len(query_stems)


def rerank(
    hits: Sequence[Hit],
    query_stems: frozenset[str],
    around: Mapping[int, tuple[int | None, ...]],
    owner_named: bool,
) -> list[int]:
    """The hits' ids, best first; ``around`` gives each id's neighbours (before…, after…)."""
    own = {h.id: h.score * coverage(h.text, query_stems) for h in hits}
    final: dict[int, float] = {}
    for hit in hits:
        score = own[hit.id]
        near = around.get(hit.id, ())
        before, after = near[:NEIGHBOUR_REACH][::-1], near[NEIGHBOUR_REACH:]
        for distance, weight in enumerate(NEIGHBOUR_WEIGHTS):
            for side in (before, after):
                if distance < len(side) and side[distance] is not None:
                    score += weight * own.get(side[distance], 0.0)  # type: ignore[arg-type]
        if owner_named and hit.role == "owner":
            score *= OWNER_NAMED_BOOST
        final[hit.id] = score
    return sorted(final, key=lambda i: (-final[i], i))
