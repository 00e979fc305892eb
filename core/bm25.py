"""BM25F: the one relevance score of Nod's keyword searches.

history_search re-ranks its best matches with it (core.history.ranking: the message, the one
before, the one after) and memory_find orders notes with it (core.memory.lookup: slug,
abstract, text), both over the words and stems of core.text, so a word weighs the same way
in each. Each field's count of a query word, discounted for a long field and weighted, is
added to the others' before saturating once; a word's part is weighted by its IDF; the sum
is scaled by the IDF-weighted share of the query the document holds itself, so one rare
word does not outrank a document holding every word. More: docs/search.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

K1 = 0.9  # how soon repeating a word stops adding to its part
B = 0.5  # how much a field longer than the average is discounted


def idf(documents: int, held: int) -> float:
    """A query word's weight among ``documents``, ``held`` of which hold it: the rarer, the more."""
    held = min(documents, held)
    return math.log(1 + (documents - held + 0.5) / (held + 0.5))


def normalised(count: float, length: float, average: float) -> float:
    """A word's count in a field of ``length`` words, discounted against the ``average`` length (BM25's b)."""
    return count / (1 - B + B * length / average)


def bm25f(frequencies: Sequence[float], held: Sequence[int], idfs: Sequence[float]) -> float:
    """A document's score, one entry a query word in each sequence: ``frequencies`` its fields'
    normalised counts, weighted and added; ``held`` whether the document itself holds it (its
    coverage of the query, which a neighbour's words do not add to); ``idfs`` its weight."""
    score = covered = 0.0
    for freq, present, weight in zip(frequencies, held, idfs, strict=True):
        if freq:
            score += weight * freq / (K1 + freq)
        if present:
            covered += weight
    return score * covered / (sum(idfs) or 1.0)


def scores(documents: Sequence[Sequence[Mapping[str, int]]], weights: Sequence[float],
           groups: Sequence[frozenset[str]], idfs: Sequence[float] | None = None) -> list[float]:
    """Each document's score for the query: a document is its fields, each its stems with
    their counts (core.text.stem_counts), one field a weight; ``groups`` each query word's
    stems (a word and its irregular forms count as one); ``idfs`` each word's IDF, by default
    counted among these documents (memory_find's notes are all there is to search). A
    document holding no query word scores 0 without more work."""
    wanted = frozenset().union(*groups)
    lengths = [[sum(field.values()) for field in document] for document in documents]
    averages = [max(1.0, sum(sizes[f] for sizes in lengths) / max(1, len(documents))) for f in range(len(weights))]
    counts = [_word_counts(document, groups) if any(not wanted.isdisjoint(field) for field in document) else None
              for document in documents]
    if idfs is None:
        idfs = [idf(len(documents), sum(1 for per_word in counts if per_word is not None and any(per_word[k])))
                for k in range(len(groups))]
    return [0.0 if per_word is None else _score(per_word, sizes, weights, averages, idfs)
            for per_word, sizes in zip(counts, lengths, strict=True)]


def _word_counts(document: Sequence[Mapping[str, int]], groups: Sequence[frozenset[str]]) -> list[list[int]]:
    """Each query word's count in each field of ``document``."""
    return [[sum(field.get(s, 0) for s in group) for field in document] for group in groups]


def _score(per_word: Sequence[Sequence[int]], lengths: Sequence[int], weights: Sequence[float],
           averages: Sequence[float], idfs: Sequence[float]) -> float:
    frequencies = [
        sum(weight * normalised(n, length, average)
            for n, length, weight, average in zip(per_field, lengths, weights, averages, strict=True))
        for per_field in per_word
    ]
    return bm25f(frequencies, [int(any(per_field)) for per_field in per_word], idfs)
