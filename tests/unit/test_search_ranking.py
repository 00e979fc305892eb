"""history_search's reading of a query (irregular forms, dates named in it) and its re-ranking."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from core.history.periods import DateHint, Period, named_periods
from core.history.ranking import Frequencies, Hints, rerank
from core.history.scope import Hit
from core.text import query_terms, sentences

T0 = datetime(2024, 5, 8, 12, 0, tzinfo=UTC)


def test_a_query_word_brings_its_irregular_forms_as_one_group() -> None:
    terms = query_terms("When did Ana go swimming with the children?", ignore=frozenset({"ana"}))
    assert terms.groups == (("go", "went", "gone"), ("swimming",), ("children", "child"))
    assert set(terms.terms) == {"go", "went", "gone", "swimming", "children", "child"}
    assert len(terms.stem_groups) == 3
    assert query_terms("have been done").groups == (("done",),)  # stop-word forms are never added


def test_sentences_keep_their_question_marks() -> None:
    assert sentences("Nice! How long have you had them? Three years.") == [
        (["nice"], False), (["how", "long", "have", "you", "had", "them"], True), (["three", "years"], False),
    ]


def test_dates_named_in_a_query() -> None:
    assert named_periods("What did Nate cook on 9 November, 2022?") == (Period(2022, 11, 9),)
    assert named_periods("What did she paint on October 13, 2023?") == (Period(2023, 10, 13),)
    assert named_periods("camping in June") == (Period(None, 6),)
    assert named_periods("trips in 2023") == (Period(2023),)
    assert named_periods("dinner 2024-05-08") == (Period(2024, 5, 8),)
    assert named_periods("you may go") == () and named_periods("in May") == (Period(None, 5),)
    assert named_periods("31 February") == (Period(None, 2, 31),)  # kept, but holds no day


def test_a_period_holds_its_days_and_the_week_after() -> None:
    june = Period(None, 6)
    assert june.holds(date(2021, 6, 30)) and june.holds(date(2023, 7, 6)) and not june.holds(date(2023, 7, 9))
    assert not Period(None, 2, 31).holds(date(2023, 3, 1))
    hint = DateHint.of("lunch on 8 May 2024", ZoneInfo("Asia/Tokyo"))
    assert hint is not None
    assert hint.covers(datetime(2024, 5, 7, 16, 0, tzinfo=UTC))  # already the 8th in Tokyo
    assert not hint.covers(datetime(2024, 5, 7, 14, 0, tzinfo=UTC))
    assert DateHint.of("lunch with Ana", ZoneInfo("UTC")) is None


def _rank(texts: list[str], query: str, dates: DateHint | None = None) -> list[int]:
    hits = [Hit(i, "owner", text, 1.0, T0) for i, text in enumerate(texts, start=1)]
    near = lambda n: n if 1 <= n <= len(texts) else None  # noqa: E731
    around = {i: (near(i - 2), near(i - 1), near(i + 1), near(i + 2)) for i in range(1, len(texts) + 1)}
    groups = query_terms(query).stem_groups
    frequencies = Frequencies(1_000, {s: 10 for g in groups for s in g})
    return rerank(hits, groups, around, frequencies, Hints(dates=dates))


def test_a_question_hands_its_score_to_the_reply() -> None:
    asked = _rank(["Have you got turtles at home?", "Yes, two of them", "A turtle on TV"], "turtles")
    told = _rank(["I have got turtles at home.", "Yes, two of them", "A turtle on TV"], "turtles")
    assert asked.index(2) < told.index(2)
    assert asked.index(1) > told.index(1)


def test_the_share_of_the_query_is_weighted_by_rarity() -> None:
    hits = [Hit(1, "owner", "the dentist on friday", 1.0, T0), Hit(2, "owner", "dentist again", 1.0, T0),
            Hit(3, "owner", "friday again", 1.0, T0)]
    groups = query_terms("dentist friday").stem_groups
    rare_dentist = Frequencies(10_000, {"dentist": 5, "fridai": 2_000})
    assert rerank(hits, groups, {}, rare_dentist) == [1, 2, 3]


def test_a_named_date_breaks_ties_towards_its_period() -> None:
    hits = [Hit(1, "owner", "dinner out", 1.0, T0 - timedelta(days=40)), Hit(2, "owner", "dinner out", 1.0, T0)]
    groups = query_terms("dinner").stem_groups
    hint = DateHint.of("dinner on 8 May 2024", ZoneInfo("UTC"))
    assert rerank(hits, groups, {}, Frequencies(100, {"dinner": 2})) == [1, 2]
    assert rerank(hits, groups, {}, Frequencies(100, {"dinner": 2}), Hints(dates=hint)) == [2, 1]


def test_a_when_question_prefers_the_message_that_tells_a_time() -> None:
    hits = [Hit(1, "owner", "The lake, so good", 1.0, T0), Hit(2, "owner", "Went to the lake yesterday", 1.0, T0)]
    groups = query_terms("lake").stem_groups
    frequencies = Frequencies(100, {"lake": 2})
    when = Hints.of("When did I go to the lake?", "Ana", ZoneInfo("UTC"))
    assert when.asks_when and not Hints.of("Where is the lake?", "Ana", ZoneInfo("UTC")).asks_when
    assert rerank(hits, groups, {}, frequencies, Hints()) == [1, 2]  # the shorter one, without the question
    assert rerank(hits, groups, {}, frequencies, when) == [2, 1]


def test_hints_read_the_owner_and_dates_from_the_wording() -> None:
    hints = Hints.of("What did Ana cook on 9 November, 2022?", "Ana Lima", ZoneInfo("Europe/Lisbon"))
    assert hints.owner_named and not hints.asks_when
    assert hints.dates is not None and hints.dates.periods == (Period(2022, 11, 9),)
    assert not Hints.of("What did Bo cook?", "Ana Lima", ZoneInfo("UTC")).owner_named
