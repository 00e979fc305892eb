"""Reading what models answer: JSON in any wrapping, and the recent window's block steps."""

from __future__ import annotations

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


def test_the_window_grows_to_a_block_then_jumps_so_its_start_rarely_moves() -> None:
    window = RecentWindow(least=20, block=10)
    sizes = [window.size(n) for n in (0, 5, 20, 21, 29, 30, 31, 39, 40)]
    assert sizes == [0, 5, 20, 21, 29, 20, 21, 29, 20]
    starts = {n - window.size(n) for n in range(30, 40)}
    assert starts == {10}  # ten turns' worth of messages share one start, so one cached prefix
