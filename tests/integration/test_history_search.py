"""history_search on real databases (SQLite FTS5 and PostgreSQL tsvector), as the agent calls it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.message_store import MessageStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from adapters.storage.thread_reads import ThreadReads
from bot.wiring import history_search
from core.clock import SystemClock
from core.errors import InvalidInput, NotFound
from core.message import Message, Role
from core.owner import Owner
from core.text import FORMS, STOP_WORDS
from tests.tool_calls import history_args

T0 = datetime(2024, 5, 8, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["database", "derived", "tail"], autouse=True)
async def matcher(request: pytest.FixtureRequest, engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[str]:
    """Every test runs on the database's own index, on the derived tantivy index caught up
    before each search (beside the SQLite file, or in a directory of its own for
    PostgreSQL), and on that index never caught up, so that every message comes from the
    thread's tail read from the database (adapters.storage.search_index.unindexed)."""
    MATCHER["kind"] = request.param
    MATCHER["dir"] = str(tmp_path / "search-index")
    OPENED.clear()
    yield str(request.param)
    for index in OPENED:
        await index.close()


MATCHER = {"kind": "database", "dir": ""}
OPENED: list[DerivedIndex] = []


class Chat:
    """One owner's conversation on a real engine, with the search the agent uses."""

    def __init__(self, engine: AsyncEngine, owner: Owner) -> None:
        self.owner = owner
        self.store = MessageStore(engine, SystemClock())
        self.index = None
        if MATCHER["kind"] != "database":
            beside_sqlite = Path(str(engine.url.database) + ".search")
            self.index = DerivedIndex(beside_sqlite if engine.dialect.name == "sqlite" else Path(MATCHER["dir"]), engine,
                                      catch_up_every=None)
            OPENED.append(self.index)
        self.search_service = history_search(engine, self.store, self.index)
        self.count = 0

    async def say(self, text: str, role: Role = Role.OWNER, at: datetime | None = None) -> int:
        self.count += 1
        when = at or T0 + timedelta(minutes=self.count)
        stored = await self.store.append(Message(self.owner.id, role, text, "test", when, f"m{self.count}"))
        return stored.message.id

    async def search(self, **args: Any) -> dict[str, Any]:
        if self.index is not None and MATCHER["kind"] == "derived":
            await self.index.warm()
        return await self.search_service.search(self.owner, history_args(args))


async def _chat(engine: AsyncEngine, name: str = "ana", tz: str = "UTC") -> Chat:
    owner = await OwnerStore(engine).add(name, tz, (), T0)
    return Chat(engine, owner)


def _ids(answer: dict[str, Any]) -> list[int]:
    return [r["id"] for r in answer["results"]]


async def test_any_word_in_any_form_best_first_with_dates_and_neighbours(engine: AsyncEngine) -> None:
    chat = await _chat(engine, tz="Europe/Lisbon")
    await chat.say("Good morning")
    first = await chat.say("We are selling the property in Braga and the property in Faro")
    await chat.say("Nice, tell me more", Role.ASSISTANT)
    await chat.say("Unrelated: the weather is fine")
    await chat.say("And the sea is calm")
    other = await chat.say("My brother bought a property last year")
    answer = await chat.search(query="properties")
    assert _ids(answer)[0] == first and other in _ids(answer)[:3]
    top = answer["results"][0]
    assert top["sent_at"] == "Wednesday 2024-05-08 13:02"  # 12:02 UTC in Lisbon summer time, as every model reads times
    assert top["before"]["text"] == "Good morning"
    assert top["after"]["role"] == "assistant"
    assert answer["totalMatches"] >= 2 and answer["complete"] is True


async def test_each_result_shows_its_own_neighbours_never_a_tool_message_or_another_owners(engine: AsyncEngine) -> None:
    ana, ben = await _chat(engine), await _chat(engine, "ben")
    first = await ana.say("kayak trip planned")  # the thread's first: nothing before it
    await ben.say("kayak plans of ben")  # another owner's, between Ana's by id
    await ana.say("kayak tool output", Role.TOOL)  # never shown, never a neighbour
    second = await ana.say("the kayak was red")
    reply = await ana.say("lovely", Role.ASSISTANT)
    last = await ana.say("kayak again")  # the thread's last: nothing after it
    shown = {r["id"]: r for r in (await ana.search(query="kayak"))["results"]}
    assert set(shown) == {first, second, reply, last} and shown[reply]["matched_by"] == "previous message"
    assert shown[first]["before"] is None and shown[first]["after"]["id"] == second
    assert shown[second]["before"]["id"] == first and shown[second]["after"]["id"] == reply
    assert shown[reply]["before"]["id"] == second and shown[reply]["after"]["id"] == last
    assert shown[last]["before"]["id"] == reply and shown[last]["after"] is None


async def test_a_query_of_many_irregular_words_still_pages_on(engine: AsyncEngine) -> None:
    """Thirty-two words with their irregular forms are ~100 stems; the cursor carrying their
    counts once refused its own next page ("not one history_search returned")."""
    chat = await _chat(engine)
    irregular: list[str] = []  # words of the largest families, none sharing a form
    for word in sorted(FORMS, key=lambda w: -len(FORMS[w])):
        if word not in STOP_WORDS and not {word, *FORMS[word]} & {f for w in irregular for f in (w, *FORMS[w])}:
            irregular.append(word)
    irregular = irregular[:32]
    for word in irregular[:12]:
        await chat.say(f"{word} on the trip")
    seen: list[int] = []
    answer = await chat.search(query=" ".join(irregular), limit=5)
    while True:
        seen += _ids(answer)
        if not answer["nextCursor"]:
            break
        answer = await chat.search(query=" ".join(irregular), limit=5, cursor=answer["nextCursor"])
    assert len(seen) == len(set(seen)) == 12


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "AND OR NOT", "NEAR(property, 2)", "prop*", "text:property", "property)",
     "col:val ^ - + {x}", "🏠 property 🎉", "'; DROP TABLE messages; --", "a" * 10_000],
)
async def test_the_owners_text_never_breaks_the_query(engine: AsyncEngine, query: str) -> None:
    chat = await _chat(engine)
    await chat.say("The property near the river, AND the one in town")
    answer = await chat.search(query=query)
    assert {"results", "totalMatches", "nextCursor", "complete"} <= set(answer)


async def test_unsearchable_queries_get_a_clear_error(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    await chat.say("hello")
    with pytest.raises(InvalidInput, match="no words"):
        await chat.search(query="🎉 ?! ...")
    with pytest.raises(InvalidInput, match="10,000"):
        await chat.search(query="word " * 2_001)
    for bad, pattern in [({"order": "oldest"}, "'relevance' or 'newest'"), ({"limit": 0}, "limit"),
                         ({"from": "yesterday"}, "from"), ({"around": "x"}, "around"),
                         ({"colour": 1}, "no argument"), ({}, "Give a")]:
        with pytest.raises(InvalidInput, match=pattern):
            await chat.search(**({"query": "hello"} | bad if bad and "around" not in bad and bad != {} and "from" not in bad else bad))


async def test_from_and_to_are_inclusive_days_in_the_owners_zone(engine: AsyncEngine) -> None:
    chat = await _chat(engine, tz="America/New_York")
    local = timezone(timedelta(hours=-4))
    late = await chat.say("dinner at the harbour", at=datetime(2024, 5, 8, 23, 30, tzinfo=local))
    early = await chat.say("breakfast at home", at=datetime(2024, 5, 8, 0, 10, tzinfo=local))
    await chat.say("lunch next day", at=datetime(2024, 5, 9, 12, 0, tzinfo=local))
    await chat.say("the day before", at=datetime(2024, 5, 7, 23, 59, tzinfo=local))
    listed = await chat.search(**{"from": "2024-05-08", "to": "2024-05-08"})
    assert _ids(listed) == [early, late]  # alone they list the period, oldest first
    newest = await chat.search(**{"from": "2024-05-08", "to": "2024-05-08", "order": "newest"})
    assert _ids(newest) == [late, early]
    timed = await chat.search(**{"from": "2024-05-08T23:00", "to": "2024-05-09T00:00"})
    assert _ids(timed) == [late]
    matched = await chat.search(query="dinner lunch", **{"to": "2024-05-08"})
    assert _ids(matched)[0] == late
    assert all(r.get("matched_by") == "previous message" for r in matched["results"][1:])


async def test_before_limits_the_date_and_is_not_a_cursor(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    old = await chat.say("passport renewal", at=T0)
    await chat.say("passport renewal again", at=T0 + timedelta(days=2))
    answer = await chat.search(query="passport", before=(T0 + timedelta(days=1)).date().isoformat())
    assert _ids(answer) == [old] and answer["totalMatches"] == 1


async def test_around_returns_the_message_and_five_each_side(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    ids = [await chat.say(f"message number {i}") for i in range(20)]
    answer = await chat.search(around=ids[10])
    assert _ids(answer) == ids[5:16]
    edge = await chat.search(around=ids[1])
    assert _ids(edge) == ids[0:7]
    with pytest.raises(NotFound):
        await chat.search(around=999_999)


async def test_pages_have_no_duplicates_no_gaps_and_ignore_later_messages(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    expected = {await chat.say(f"garden note {i} " + "tomato " * (i % 5)) for i in range(230)}
    for _ in range(5):
        await chat.say("nothing to see")
    seen: list[int] = []
    answer = await chat.search(query="tomato garden", limit=50)
    total = answer["totalMatches"]
    while True:
        seen += _ids(answer)
        await chat.say("garden tomato arriving mid-paging")  # never shows up in this paging
        if answer["complete"]:
            break
        assert answer["nextCursor"]
        answer = await chat.search(query="tomato garden", limit=50, cursor=answer["nextCursor"])
    assert len(seen) == len(set(seen)) == total
    assert set(seen) >= expected


async def test_the_message_before_a_strong_match_is_listed_once_and_counted_while_paging(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    said, asked = [], []
    for i in range(120):  # each match is asked about just before, in words the query does not hold
        await chat.say(f"plain remark {i}")
        asked.append(await chat.say(f"what happened on day {i}?"))
        said.append(await chat.say(f"the heron came back {i} " + "heron " * (i % 3)))
    seen: list[str | None] = []
    answer, ids = await chat.search(query="heron", limit=40), []
    total = answer["totalMatches"]
    while True:
        ids += _ids(answer)
        seen += [r.get("matched_by") for r in answer["results"]]
        if answer["complete"]:
            break
        answer = await chat.search(query="heron", limit=40, cursor=answer["nextCursor"])
    by_next = [i for i, flag in zip(ids, seen, strict=True) if flag == "next message"]
    assert 0 < len(by_next) <= 10 and set(by_next) <= set(asked)  # only the best matches lift their question
    assert len(ids) == len(set(ids)) == total == 2 * 120 - 1 + len(by_next)  # each heron, the remark after it
    assert set(said) <= set(ids)
    newest = await chat.search(query="heron", order="newest", limit=50)
    assert newest["totalMatches"] == 120 and not set(asked) & set(_ids(newest))


async def test_a_cursor_reused_with_other_parameters_is_refused(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    for i in range(15):
        await chat.say(f"tomato {i}")
    cursor = (await chat.search(query="tomato"))["nextCursor"]
    assert cursor
    for changed in ({"query": "potato"}, {"query": "tomato", "order": "newest"}, {"query": "tomato", "before": "2030-01-01"}):
        with pytest.raises(InvalidInput, match="different search"):
            await chat.search(cursor=cursor, **changed)
    with pytest.raises(InvalidInput, match="not one history_search returned"):
        await chat.search(query="tomato", cursor="bm90IGEgY3Vyc29y")


async def test_long_messages_are_cut_at_1200_characters_and_marked(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    long_id = await chat.say("holiday plans " + "we will walk along the coast and " * 80)
    short_id = await chat.say("holiday short")
    answer = await chat.search(query="holiday")
    by_id = {r["id"]: r for r in answer["results"]}
    assert len(by_id[long_id]["text"]) <= 1_200 and by_id[long_id]["truncated"] is True
    assert "truncated" not in by_id[short_id]
    whole = await chat.store.get(long_id)
    assert whole is not None and len(whole.text) > 1_200  # the agent can read it with `around`


async def test_a_reset_thread_and_other_owners_are_never_searched(engine: AsyncEngine) -> None:
    ana = await _chat(engine, "ana")
    bea = await _chat(engine, "bea")
    await ana.say("secret garden plans before the reset")
    await bea.say("bea's garden")
    await ana.store.reset_thread(ana.owner.id)
    fresh = await ana.say("garden after the reset")
    answer = await ana.search(query="garden")
    assert _ids(answer) == [fresh] and answer["totalMatches"] == 1
    listing = await ana.search(**{"from": "2000-01-01"})
    assert _ids(listing) == [fresh]


async def test_tool_results_are_not_conversation(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    said = await chat.say("what is the weather in Porto")
    await chat.say("Porto weather: sunny (from a web page)", Role.TOOL)
    answer = await chat.search(query="porto weather")
    assert _ids(answer) == [said]


async def test_naming_the_owner_prefers_their_own_words(engine: AsyncEngine) -> None:
    chat = await _chat(engine, "Caroline")
    await chat.say("Did you enjoy the pottery class?", Role.ASSISTANT)
    mine = await chat.say("I loved my pottery class")
    answer = await chat.search(query="What did Caroline think of the pottery class?")
    assert _ids(answer)[0] == mine


async def test_irregular_forms_count_as_the_same_word(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    went = await chat.say("We went to Porto with the children last spring")
    await chat.say("The weather is fine")
    answer = await chat.search(query="when did we go with the child")  # neither word is in the text as such
    assert _ids(answer)[0] == went and "matched_by" not in answer["results"][0]


async def test_a_date_in_the_query_prefers_messages_sent_then(engine: AsyncEngine) -> None:
    chat = await _chat(engine)
    for day in (-40, 0, 30):
        said = await chat.say("Dinner at the harbour", at=T0 + timedelta(days=day))
        then = said if day == 0 else locals().get("then")
        await chat.say("The weather is fine", at=T0 + timedelta(days=day, hours=1))
        await chat.say("The sea is calm", at=T0 + timedelta(days=day, hours=2))
    answer = await chat.search(query="dinner on 8 May 2024")
    assert _ids(answer)[0] == then
    # the date only orders: every dinner, the message after it, and (for the two later dinners) the message before
    assert answer["totalMatches"] == 8 == len(answer["results"])


async def test_a_time_listing_shows_only_messages_saying_the_words_and_counts_exactly_what_it_lists(
        engine: AsyncEngine) -> None:
    chat = await _chat(engine, name="maya")
    told = await chat.say("My sister Ana found a flat in Porto")
    reply = await chat.say("Small but bright sounds nice.", Role.ASSISTANT)  # matches "Ana" only through the previous
    later = await chat.say("Ana starts her new job on Monday")
    fillers = [await chat.say(f"Filler about the weather, day {n}") for n in range(25)]
    await chat.say("Ana called about the flat")
    newest = await chat.search(query="Ana", order="newest", limit=2)
    pages = _ids(newest)
    while newest["nextCursor"]:
        newest = await chat.search(query="Ana", order="newest", limit=2, cursor=newest["nextCursor"])
        pages += _ids(newest)
    assert reply not in pages and pages[-2:] == [later, told]
    assert newest["totalMatches"] == len(pages) == 3
    relevance = await chat.search(query="Ana", limit=20)
    # three say it; the reply and the first filler follow a message that does; the last filler precedes one
    assert reply in _ids(relevance) and relevance["totalMatches"] == len(_ids(relevance)) == 6
    flagged = {r["id"]: r.get("matched_by") for r in relevance["results"]}
    assert flagged[reply] == flagged[fillers[0]] == "previous message" and flagged[told] is None
    assert flagged[fillers[-1]] == "next message" and fillers[1] not in flagged
    dated = await chat.search(query="Ana", order="newest", **{"from": "2024-05-08", "to": "2024-05-08"})
    assert reply not in _ids(dated) and dated["totalMatches"] == len(_ids(dated))


async def test_related_messages_come_from_the_same_index_by_the_owners_own_words(engine: AsyncEngine) -> None:
    chat = await _chat(engine, name="maya")
    trip = await chat.say("The boat trip in Lagos was lovely")
    await chat.say("Boats are fun", Role.ASSISTANT)  # Nod's words never count as the owner's
    await chat.say("It rained the whole afternoon")  # follows a matching message, says nothing of boats
    second = await chat.say("Another trip, by train this time")
    request = await chat.say("Find me another boat trip")
    thread = await chat.store.active_thread(chat.owner.id)
    found = await ThreadReads(engine).related(thread, "Find me another boat trip", request, 6)
    assert [m.id for m in found] == [trip, second]
