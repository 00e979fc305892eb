"""Reading what models answer: JSON in any wrapping; and the recent window's stable start."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.agent.window import RecentWindow
from core.errors import UnreadableAnswer
from core.structured import json_object_in


@pytest.mark.parametrize("raw", [
    '{"a": 1}',
    '```json\n{"a": 1}\n```',
    '```JSON\n{"a": 1}\n```',
    'Here is the answer:\n```json\n{"a": 1}\n```\nHope it helps.',
    'Sure! {"a": 1} is what you asked for.',
    '```\n{"a": 1}```',
])
def test_the_first_object_is_found_in_any_fence_case_or_prose(raw: str) -> None:
    assert json_object_in(raw) == {"a": 1}


def test_braces_inside_strings_do_not_end_the_object() -> None:
    assert json_object_in('note: {"text": "a } and a \\" {", "n": [1, {"b": 2}]} trailing }') == {
        "text": 'a } and a " {', "n": [1, {"b": 2}]}


@pytest.mark.parametrize("raw", ["", "no json here", "[1, 2]", '{"a": ', "```json\n[1]\n```"])
def test_anything_else_is_unreadable(raw: str) -> None:
    with pytest.raises(UnreadableAnswer):
        json_object_in(raw)


def _tail(first: int, last: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(id=i) for i in range(first, last + 1)]


def test_the_window_keeps_its_start_for_ten_messages_then_jumps() -> None:
    window = RecentWindow(least=20, block=10)
    starts = []
    for newest in range(40, 80):  # one message more each time, the last 40 read
        chosen = window.chosen(_tail(newest - 39, newest))  # type: ignore[arg-type]
        assert 20 <= len(chosen) <= 29
        starts.append(chosen[0].id)
    assert starts == [(n - 19) // 10 * 10 for n in range(40, 80)]  # a start moves once per ten messages
    assert len(set(starts)) == 5  # forty messages, five starts


def test_a_short_thread_is_shown_whole_and_a_tail_without_anchor_shows_its_last_thirty() -> None:
    window = RecentWindow(least=20, block=10)
    assert [m.id for m in window.chosen(_tail(1, 7))] == list(range(1, 8))  # type: ignore[arg-type]
    no_anchor = [SimpleNamespace(id=i * 10 + 1) for i in range(40)]
    assert len(window.chosen(no_anchor)) == 30  # type: ignore[arg-type]
