"""The empty conversation: what a search reads when there is nothing to find.

``NoConversation`` stands in for the database's reads (the Conversation port and the
database's Matcher) in unit tests of turns; these prove it answers as a
database holding no messages does — None, zero and empty, never an error.
"""

from __future__ import annotations

from core.history.scope import Scope
from tests.contract.conftest import NOW, Ports


async def test_an_owner_before_the_first_message_has_no_current_thread(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    assert await ports.conversation.current(ana) is None


async def test_an_empty_thread_has_no_period_neighbours_or_related_messages(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    thread = await ports.messages.active_thread(ana)
    scope = Scope(thread_id=thread, snapshot=0)
    assert await ports.conversation.count_period(scope) == 0
    assert await ports.conversation.period(scope, newest_first=True, limit=10, offset=0) == []
    assert await ports.conversation.neighbours(thread, [], 5) == {}
    assert await ports.conversation.shown(thread, []) == ({}, {})
    assert await ports.conversation.shown(thread, [99]) == ({}, {99: (None, None)})  # an id not in it: shown as nothing
    assert await ports.conversation.related(thread, "the boat trip in Lagos", 1, 5) == []


async def test_an_empty_thread_matches_nothing(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    scope = Scope(thread_id=await ports.messages.active_thread(ana), snapshot=0)
    words = ["boat", "lagos"]
    assert await ports.keywords.count_matches(words, scope) == 0
    assert await ports.keywords.count_matches(words, scope, own_words=True) == 0
    assert await ports.keywords.ranked(words, scope, 10) == []
    assert await ports.keywords.ranked_and_counted(words, scope, 10) == ([], 0)
    assert await ports.keywords.newest(words, scope, 10, 0) == []
    assert await ports.keywords.which_match(words, scope, []) == set()
    assert await ports.keywords.frequencies(words, scope.thread_id) == (1, {"boat": 0, "lago": 0})
