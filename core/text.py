"""Words as search sees them: one tokenizer and one stemmer for every keyword match.

history_search, memory_find and the related messages share it, so a word is cut, folded and
stemmed the same way everywhere; the stemmer is Porter's, as in FTS5's ``porter`` tokenizer,
so a Python-side check agrees with what the database matched (more: docs/search.md). Two
text rules the stores share live here too: ``storable`` and ``fact_key``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

MAX_QUERY_TERMS = 32  # a pasted essay still becomes a bounded query
MAX_TERM_CHARS = 64  # longer "words" are noise (hashes, base64) and are cut

_WORD = re.compile(r"\w+", re.UNICODE)
_WORD_OR_STOP = re.compile(r"\w+|[.!?]+", re.UNICODE)

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could d did do does doing down during each
    ever few for from further get got had has have having he her here hers herself him
    himself his how i if in into is it its itself just kind ll m many may me might more
    most much must my myself no nor not now o of off on once one ones only or other our
    ours ourselves out over own re s same shall she should so some something such t than
    that the their theirs them themselves then there these they thing things this those
    through to too under until up us ve very was we were what when where which while who
    whom why will with would y you your yours yourself yourselves""".split()
)


# Irregular English verbs and plurals, one word a line: base form, then its other forms.
# Forms that are common words of their own (rose, ground, bit, lay, light) are left out.
_IRREGULAR = """
arise arose arisen; awake awoke awoken; beat beaten; become became; begin began begun;
bend bent; bleed bled; blow blew blown; break broke broken; breed bred; bring brought;
build built; burn burnt; buy bought; catch caught; choose chose chosen; cling clung;
come came; creep crept; deal dealt; dig dug; draw drew drawn; dream dreamt;
drink drank drunk; drive drove driven; eat ate eaten; fall fell fallen; feed fed;
feel felt; fight fought; find found; flee fled; fly flew flown; forbid forbade forbidden;
forget forgot forgotten; forgive forgave forgiven; freeze froze frozen; give gave given;
go went gone; grow grew grown; hang hung; hear heard; hide hid hidden; hold held;
keep kept; kneel knelt; know knew known; lead led; lean leant; leap leapt; learn learnt;
leave left; lend lent; lose lost; make made; mean meant; meet met; pay paid; prove proven;
ride rode ridden; ring rang rung; run ran; say said; see saw seen; seek sought; sell sold;
send sent; sew sewn; shake shook shaken; shine shone; shoot shot; show shown;
shrink shrank shrunk; sing sang sung; sink sank sunk; sit sat; sleep slept; slide slid;
speak spoke spoken; speed sped; spend spent; spin spun; spit spat; sprang sprung;
stand stood; steal stole stolen; stick stuck; sting stung; stink stank stunk; strike struck;
swear swore sworn; sweep swept; swim swam swum; swing swung; take took taken; teach taught;
tear tore torn; tell told; think thought; throw threw thrown; understand understood;
wake woke woken; wear wore worn; weave wove woven; weep wept; win won; write wrote written;
child children; person people; man men; woman women; mouse mice; foot feet; tooth teeth;
goose geese
"""


def _forms() -> dict[str, tuple[str, ...]]:
    forms: dict[str, tuple[str, ...]] = {}
    for line in _IRREGULAR.split(";"):
        family = tuple(w for w in line.split() if w not in STOP_WORDS)
        for word in family:
            forms[word] = family
    return forms


FORMS = _forms()


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:  # built on first use, never at import
    return snowballstemmer.stemmer("porter")


def fold(word: str) -> str:
    """Lower case without accents, as FTS5's ``remove_diacritics 2`` folds."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The folded words of a text, in order, each cut to a bounded length."""
    folded = text.lower() if text.isascii() else fold(text)
    return [w[:MAX_TERM_CHARS] for w in _WORD.findall(folded)]


def sentences(text: str) -> list[tuple[list[str], bool]]:
    """The words of a text sentence by sentence, each with whether it ends in a question mark."""
    folded = text.lower() if text.isascii() else fold(text)
    found: list[tuple[list[str], bool]] = []
    current: list[str] = []
    for token in _WORD_OR_STOP.findall(folded):
        if token[0] in ".!?":
            if current:
                found.append((current, "?" in token))
                current = []
        else:
            current.append(token[:MAX_TERM_CHARS])
    if current:
        found.append((current, False))
    return found


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in set(words(text)))


def stem_counts(text: str) -> Counter[str]:
    """A text's stems, each with how often its words occur: what BM25 counts (core.bm25)."""
    return Counter(map(stem, words(text)))


@dataclass(frozen=True)
class QueryTerms:
    """The words a query searches for, and which stems they stand for.

    ``groups`` has one entry per word of the query: the word, then its irregular forms.
    ``terms`` is every word searched (all the groups' words, each once).
    """

    groups: tuple[tuple[str, ...], ...]
    dropped: int  # words left out because the query had more than MAX_QUERY_TERMS

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for group in self.groups for w in group))

    @property
    def stems(self) -> frozenset[str]:
        return frozenset(stem(t) for t in self.terms)

    @property
    def stem_groups(self) -> tuple[frozenset[str], ...]:
        """Each query word's stems (its own and its forms'), in query order."""
        return tuple(frozenset(stem(w) for w in group) for group in self.groups)


def query_terms(text: str, ignore: frozenset[str] = frozenset()) -> QueryTerms:
    """Distinct topical words of a query; stop words and ``ignore`` only when nothing else is left."""
    distinct = list(dict.fromkeys(w for w in words(text) if w))
    topical = [w for w in distinct if w not in STOP_WORDS and w not in ignore]
    if not topical:
        topical = [w for w in distinct if w not in STOP_WORDS] or distinct
    kept = topical[:MAX_QUERY_TERMS]
    groups = tuple(tuple(dict.fromkeys((w, *FORMS.get(w, ())))) for w in kept)
    return QueryTerms(groups, dropped=len(topical) - len(kept))


def storable(text: str) -> str:
    """``text`` as every backend can store it, the same on each.

    PostgreSQL refuses a NUL character in text, and no UTF-8 driver can encode a lone
    surrogate (JSON lets one through as ``\\ud800``): NULs are removed and lone
    surrogates become U+FFFD, so a message is stored rather than acknowledged and lost.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def fact_key(text: str) -> str:
    """A note's words with case, accents and punctuation folded: equal keys, same fact."""
    return " ".join(words(text))
