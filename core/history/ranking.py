"""Re-ranking the best keyword matches the same way on every backend.

Each backend scores a message alone and in its own way (BM25, ts_rank_cd); the best WINDOW
candidates are scored again here from their texts, their neighbours and the index's document
frequencies, so every backend orders them alike. Only matching messages are ranked, so
``totalMatches`` stays exact. The rules, their reasons and tuning: docs/search.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from core.bm25 import bm25f, idf, normalised
from core.history.periods import DateHint
from core.history.scope import CONTEXT_WEIGHT, Hit, Shape
from core.text import sentences, stem, words

WINDOW = 100  # candidates re-ranked; beyond these the backend's order continues
NEIGHBOUR_REACH = 2
NEIGHBOUR_WEIGHTS = (0.5, 0.2)  # adjacent, then one further away
OWNER_NAMED_BOOST = 2.0
NEXT_WEIGHT = 0.2  # the next message's words, in BM25F (core.bm25)
QUESTION_KEEPS = 0.7
QUESTION_GIVES = 0.6
DATE_BOOST = 6.0  # LoCoMo dev R@10: 2 → 0.750, 4 → 0.756, 5–8 → 0.758
TIME_BOOST = 2.0  # LoCoMo dev R@10 with DATE_BOOST 6: 1 → 0.758, 1.6 → 0.761, 2 → 0.762, 3 → 0.762
TIME_WORDS = frozenset(stem(w) for w in (
    "yesterday today tomorrow tonight ago last next week weekend month year recently lately earlier "
    "later monday tuesday wednesday thursday friday saturday sunday morning evening night "
    "january february march april may june july august september october november december"
).split())


@dataclass(frozen=True)
class Hints:
    """What a query's wording tells besides its words: who it is about, when, whether it asks when."""

    owner_named: bool = False
    dates: DateHint | None = None
    asks_when: bool = False

    @classmethod
    def of(cls, query: str, owner_name: str, zone: ZoneInfo) -> Hints:
        said = set(words(query))
        return cls(bool(set(words(owner_name)) & said), DateHint.of(query, zone), "when" in said)


@dataclass(frozen=True)
class Frequencies:
    """How many messages the index holds, and how many each stem matches (text or context)."""

    documents: int
    of: Mapping[str, int]

    def idf(self, stems: frozenset[str]) -> float:
        """One query word's (its stems together) IDF among the index's messages."""
        return idf(self.documents, sum(self.of.get(s, 0) for s in stems))


@dataclass
class _Read:
    """A candidate's text as the scoring needs it: length, query-word counts, questions."""

    length: int
    counts: list[int]  # occurrences of each query word (its group's stems)
    asks: bool  # its query words sit mostly in its questions


def shape_of(text: str) -> Shape:
    """What re-ranking reads of a text (the derived index stores it per message)."""
    if "?" not in text:
        return ((tuple(stem(w) for w in words(text)), False),)
    return tuple((tuple(stem(w) for w in sentence), question) for sentence, question in sentences(text))


def around_by_position(hits: Sequence[Hit]) -> dict[int, tuple[int | None, ...]]:
    """Each hit's neighbours among the hits, from their places in the thread (``Hit.seq``).

    Only neighbours that are candidates change a score (a message that is not one holds no
    query word, see docs/search.md), so this is all ``rerank`` reads of ``around``.
    """
    at = {h.seq: h.id for h in hits}
    steps = [*range(-NEIGHBOUR_REACH, 0), *range(1, NEIGHBOUR_REACH + 1)]
    return {h.id: tuple(at.get(h.seq + d) for d in steps) for h in hits if h.seq is not None}


def _tells_time(shape: Shape) -> bool:
    return any(not TIME_WORDS.isdisjoint(sentence) for sentence, _ in shape)


def _read(shape: Shape, groups: Sequence[frozenset[str]], wanted: frozenset[str]) -> _Read:
    """Set operations and ``count`` run in C: most sentences hold no query word at all."""
    counts = [0] * len(groups)
    length = asked = told = 0
    for sentence, question in shape:
        length += len(sentence)
        here = wanted.intersection(sentence)
        if not here:
            continue
        for k, group in enumerate(groups):
            for s in group & here:
                counts[k] += sentence.count(s)
        if question:
            asked += len(here)
        else:
            told += len(here)
    return _Read(length, counts, asked > told)


def rerank(
    hits: Sequence[Hit],
    groups: Sequence[frozenset[str]],
    around: Mapping[int, tuple[int | None, ...]],
    frequencies: Frequencies,
    hints: Hints = Hints(),
) -> list[int]:
    """The hits' ids, best first; ``around`` gives each id's 2 × NEIGHBOUR_REACH neighbours
    (before_reach … before_1, after_1 … after_reach; None past an end), as
    ``around_by_position`` and the database's ``neighbours`` give them.

    ``groups`` holds each query word's stems; ``frequencies`` their document frequencies.
    """
    if not hits:
        return []
    wanted = frozenset().union(*groups)
    shapes = {h.id: h.shape if h.shape is not None else shape_of(h.text) for h in hits}
    read = {i: _read(shape, groups, wanted) for i, shape in shapes.items()}
    previous = {i: near[NEIGHBOUR_REACH - 1] for i, near in around.items() if len(near) >= NEIGHBOUR_REACH}
    following = {i: near[NEIGHBOUR_REACH] for i, near in around.items() if len(near) > NEIGHBOUR_REACH}
    own = _own_scores(hits, read, previous, following, [frequencies.idf(g) for g in groups])
    for hit in hits:
        if hints.dates is not None and hints.dates.covers(hit.sent_at):
            own[hit.id] *= DATE_BOOST
        if hints.asks_when and _tells_time(shapes[hit.id]):
            own[hit.id] *= TIME_BOOST
    _answers_take_over(hits, read, following, own)
    final = _with_neighbours(hits, around, own, hints.owner_named)
    return sorted(final, key=lambda i: (-final[i], i))


def _own_scores(
    hits: Sequence[Hit], read: Mapping[int, _Read], previous: Mapping[int, int | None],
    following: Mapping[int, int | None], idfs: Sequence[float],
) -> dict[int, float]:
    """BM25F over a message and its neighbours' words, scaled by the share of the query it holds."""
    average = max(1.0, sum(r.length for r in read.values()) / len(read))
    # each candidate's query-word frequencies, length-normalised
    tf = {i: [normalised(n, r.length, average) for n in r.counts] for i, r in read.items()}
    own: dict[int, float] = {}
    for hit in hits:
        freqs = tf[hit.id]  # BM25F: the fields' frequencies added, then saturated once
        for n, weight in ((previous.get(hit.id), CONTEXT_WEIGHT), (following.get(hit.id), NEXT_WEIGHT)):
            if n in tf:
                freqs = [f + weight * g for f, g in zip(freqs, tf[n], strict=True)]
        own[hit.id] = bm25f(freqs, read[hit.id].counts, idfs)
    return own


def _answers_take_over(
    hits: Sequence[Hit], read: Mapping[int, _Read], following: Mapping[int, int | None], own: dict[int, float],
) -> None:
    """A message asking with the query's words keeps part of its score and hands part to its reply."""
    given: dict[int, float] = {}
    for hit in hits:
        if read[hit.id].asks and own[hit.id]:
            reply = following.get(hit.id)
            if reply is not None and reply in own:
                given[reply] = given.get(reply, 0.0) + QUESTION_GIVES * own[hit.id]
            own[hit.id] *= QUESTION_KEEPS
    for message_id, extra in given.items():
        own[message_id] += extra


# (place in ``around``, weight): the adjacent messages first, before then after, then further
_SUPPORT = tuple((place, weight) for distance, weight in enumerate(NEIGHBOUR_WEIGHTS)
                 for place in (NEIGHBOUR_REACH - 1 - distance, NEIGHBOUR_REACH + distance))


def _with_neighbours(
    hits: Sequence[Hit], around: Mapping[int, tuple[int | None, ...]], own: Mapping[int, float], owner_named: bool,
) -> dict[int, float]:
    """Each message's score plus part of its neighbours' (the turns of one exchange)."""
    final: dict[int, float] = {}
    for hit in hits:
        score = own[hit.id]
        near = around.get(hit.id, ())
        for place, weight in _SUPPORT:
            if place < len(near):
                neighbour = near[place]
                if neighbour is not None:
                    score += weight * own.get(neighbour, 0.0)
        if owner_named and hit.role == "owner":
            score *= OWNER_NAMED_BOOST
        final[hit.id] = score
    return final
