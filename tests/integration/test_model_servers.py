"""What real model servers do to Nod's requests, played by the scripted server and the real client.

The scripted server enforces by default what vLLM, llama.cpp and Ollama enforce (one
leading system message, tool-call arguments that are JSON objects, every call answered);
here the odder behaviours are switched on one at a time: DeepSeek's thinking mode, an
OpenAI reasoning model that refuses ``temperature``, answers cut at the length limit,
refusals, ``<think>`` blocks, missing usage and cached prompt tokens.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core.agent.turn import CUT_NOTE
from core.agent.usage import render_usage
from core.inbox.digests import Digest
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.message import Message, Role
from tests.fakes.model_server import Answer, FakeModelServer, purpose_of, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, START, Harness, make_harness

KEEP = structured({"verdict": "keep", "text": ""})


def _system_roles(body: dict[str, Any]) -> list[int]:
    return [i for i, m in enumerate(body["messages"]) if m["role"] == "system"]


def _learn_answer(request_id: int, path: str, fact: str, quote: str) -> Answer:
    return structured({"notes": [{"path": path, "text": fact, "message_ids": [request_id], "quote": quote}]})


async def _next_id(nod: Harness) -> int:
    latest = await nod.svc.messages.recent(nod.owner.id, 1)
    return (latest[-1].id if latest else 0) + 1


async def _with_note(nod: Harness) -> None:
    await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "We stayed at the river hotel in Porto", "local",
                                             START - timedelta(days=3)))
    note = ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=START,
                          evidence=(Evidence(1, "Ana lives in Porto"),))
    await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, note))


async def test_every_request_has_one_leading_system_message_with_evidence_and_in_json_object_mode(
        tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, json_mode="json_object"):
        await _with_note(nod)
        select = {"notes": ["people/sister"], "searches": [{"query": "river hotel", "from": None, "to": None}],
                  "totals": False}
        server.enqueue(MEMORY, structured(select), structured({"notes": ["people/sister"], "messages": [1]}),
                       purpose="evidence_selection")
        server.enqueue(MEMORY, KEEP, purpose="reply_check")
        request_id = await _next_id(nod)
        server.enqueue(MEMORY, _learn_answer(request_id, "people/brother", "Brother: Rui, lives in Lisbon",
                                             "my brother Rui lives in Lisbon"), purpose="memory_learn")
        server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn"}), text("Noted."))
        await nod.say("Remember that my brother Rui lives in Lisbon, near the river hotel")
        assert server.refused == []  # Qwen 3.5's template would have raised on a second system message
        assert all(_system_roles(body) == [0] for body in server.requests)
        assert {purpose_of(b) for b in server.requests} == {"chat", "evidence_selection", "memory_learn", "reply_check"}
        agent = server.calls()[0]["messages"]
        assert "Evidence selected for this request" in agent[-1]["content"] and agent[-1]["role"] == "user"
        assert nod.sink.sent == ["Noted."]
        entry = (await nod.svc.memory.load(nod.owner.id)).document.get("people/brother")
        assert entry is not None and entry.text == "Brother: Rui, lives in Lisbon"  # saved in json_object mode


async def test_unparseable_tool_arguments_go_back_as_an_empty_object_with_the_error_as_result(nod: Harness) -> None:
    nod.server.enqueue(AGENT, tool("memory_read", '{"path": "people/'), tool("memory_read", "[1, 2]"), text("ok"))
    await nod.say("what do you know")
    assert nod.server.refused == [] and nod.sink.sent == ["ok"]
    last = nod.server.calls()[-1]["messages"]
    sent_back = [c["function"]["arguments"] for m in last for c in m.get("tool_calls") or []]
    assert sent_back == ["{}", "{}"]  # Ollama and vLLM answer 400 to the verbatim arguments
    results = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
    assert all("error" in r for r in results)


async def test_thinking_models_get_their_reasoning_back_and_the_owner_never_sees_it(tmp_path: Path,
                                                                                    server: FakeModelServer) -> None:
    server.reasoning_required = True  # DeepSeek: "Missing `reasoning_content` field"
    async for nod in make_harness(tmp_path, server):
        nod.server.enqueue(AGENT, tool("memory_find", {"words": "sister"}, reasoning=("reasoning_content", "PRIVATE-THOUGHT")),
                           text("Nothing saved about her yet.", reasoning=("reasoning_content", "PRIVATE-FINAL")))
        await nod.say("what about my sister?")
        assert server.refused == [] and nod.sink.sent == ["Nothing saved about her yet."]
        calls = [m for m in server.calls()[1]["messages"] if m.get("tool_calls")]
        assert calls[0]["reasoning_content"] == "PRIVATE-THOUGHT"
        stored = " ".join(m.text for m in await nod.svc.messages.recent(nod.owner.id, 10))
        assert "PRIVATE" not in stored


async def test_reasoning_goes_back_under_the_key_the_server_used(nod: Harness) -> None:
    nod.server.enqueue(AGENT, tool("memory_find", {"words": "x"}, reasoning=("reasoning", "OLLAMA-THOUGHT")), text("ok"))
    await nod.say("hello")
    calls = [m for m in nod.server.calls()[1]["messages"] if m.get("tool_calls")]
    assert calls[0]["reasoning"] == "OLLAMA-THOUGHT" and "reasoning_content" not in calls[0]  # Ollama's own key


async def test_a_reply_cut_at_the_length_limit_says_so_and_a_cut_memory_answer_is_not_asked_again(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("Here are the ten steps: one, two, thr", finish_reason="length"))
    await nod.say("explain it all")
    assert nod.sink.sent == ["Here are the ten steps: one, two, thr" + CUT_NOTE]
    assert [r.outcome for r in await nod.usage_rows("agent")] == ["cut"]
    request_id = await _next_id(nod)
    nod.server.enqueue(MEMORY, Answer(content='{"notes": [{"path": "people/sis', finish_reason="length"), purpose="memory_learn")
    nod.server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn", "message_ids": [request_id]}),
                       text("Done."))
    await nod.say("Remember my sister Ana lives in Porto")
    assert len(nod.server.calls("memory_learn")) == 1  # the same request would stop at the same limit
    assert [r.outcome for r in await nod.usage_rows("memory_learn")] == ["cut"]
    assert (await nod.svc.memory.load(nod.owner.id)).document.get("people/sister") is None


async def test_the_servers_own_error_text_is_logged_short_and_secrets_are_withheld(
        nod: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nod.openai")
    nod.server.enqueue(AGENT, Answer(status=400, error_message='"auto" tool choice requires --enable-auto-tool-choice'))
    await nod.say("hello")
    assert "status=400" in caplog.text and "--enable-auto-tool-choice" in caplog.text
    assert nod.sink.sent == ["The model server refused the request; the operator should check Nod's model settings."]
    caplog.clear()
    nod.server.enqueue(AGENT, Answer(status=401, error_message="Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz123456"))
    await nod.say("hello again")
    assert "status=401" in caplog.text and "sk-proj-abcdefghijklmnop" not in caplog.text


async def test_strict_is_sent_with_every_json_schema_unless_switched_off(tmp_path: Path, server: FakeModelServer) -> None:
    for strict in (True, False):
        (tmp_path / str(strict)).mkdir()
        async for nod in make_harness(tmp_path / str(strict), server, json_strict=strict):
            server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
            await nod.svc.gateway.ask(nod.owner.id, Digest, [{"role": "user", "content": "x"}])
            schema = server.calls("digest")[-1]["response_format"]["json_schema"]
            assert schema.get("strict", False) is strict and schema["schema"]["additionalProperties"] is False


async def test_a_refusal_is_recorded_refused_never_retried_and_said_plainly(nod: Harness) -> None:
    nod.server.enqueue(AGENT, Answer(content=None, refusal="I can't help with that."))
    await nod.say("something odd")
    assert nod.sink.sent == ["The model declined to answer that. You could put it another way."]
    assert [r.outcome for r in await nod.usage_rows("agent")] == ["refused"]
    request_id = await _next_id(nod)
    nod.server.enqueue(MEMORY, Answer(content=None, refusal="No."), purpose="memory_learn")
    nod.server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn", "message_ids": [request_id]}),
                       text("Done."))
    await nod.say("Remember my sister Ana lives in Porto")
    assert len(nod.server.calls("memory_learn")) == 1
    assert [r.outcome for r in await nod.usage_rows("memory_learn")] == ["refused"]


async def test_a_think_block_left_in_the_content_is_cut_from_answers_and_memory_answers(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("<think>\nThe owner greets me; keep it short.\n</think>\n\nHello, Maya!"))
    await nod.say("hi")
    assert nod.sink.sent == ["Hello, Maya!"]
    assert (await nod.svc.messages.recent(nod.owner.id, 1))[0].text == "Hello, Maya!"
    nod.server.enqueue(MEMORY, text('<think>a digest {of sorts}</think>```JSON\n{"summary": "s"}\n```'), purpose="digest")
    assert (await nod.svc.gateway.ask(nod.owner.id, Digest, [{"role": "user", "content": "x"}])).summary == "s"


async def test_missing_usage_is_estimated_and_marked_and_cached_tokens_cost_less(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("An answer of some length, " * 20, usage=False))
    await nod.say("tell me something " * 50)
    (row,) = await nod.usage_rows("agent")
    assert row.estimated and row.tokens_in > 100 and row.tokens_out > 50 and row.cost_usd > 0
    nod.server.enqueue(AGENT, text("a", tokens=(10_000, 10)), text("b", tokens=(10_000, 10), cached=8_000))
    await nod.say("one")
    await nod.say("two")
    full, cached = (await nod.usage_rows("agent"))[1:]
    assert not full.estimated and cached.cached_tokens == 8_000 and 0 < cached.cost_usd < full.cost_usd
    today = await nod.svc.usage.by_purpose(nod.owner.id, START - timedelta(days=1))
    agent = next(t for t in today if t.purpose == "agent")
    assert agent.estimated_calls == 1 and agent.cached_tokens == 8_000
    assert "1 call(s) this month had no usage from the model server" in render_usage(today, today, None)


async def test_a_server_that_refuses_temperature_is_asked_without_it_and_remembered(tmp_path: Path,
                                                                                     server: FakeModelServer) -> None:
    server.rejects_temperature = True  # OpenAI's reasoning models: "Only the default (1) value is supported."
    async for nod in make_harness(tmp_path, server):
        for _ in range(2):
            server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
            assert (await nod.svc.gateway.ask(nod.owner.id, Digest, [{"role": "user", "content": "x"}])).summary == "s"
        temperatures = [b.get("temperature") for b in server.calls("digest")]
        assert temperatures == [0.2, None, None] and len(server.refused) == 1
        assert [r.outcome for r in await nod.usage_rows("digest")] == ["ok", "ok"]


async def test_an_apology_is_delivered_but_never_stored_or_shown_to_the_model_again(nod: Harness) -> None:
    nod.server.enqueue(AGENT, *[Answer(status=503)] * 3, text("Fine now."))
    await nod.say("first try")
    apology = nod.sink.sent[0]
    assert apology.startswith("I couldn't get an answer")
    await nod.say("second try")
    later = json.dumps(nod.server.calls()[-1]["messages"])
    assert "couldn't get an answer" not in later and "first try" in later
    stored = await nod.svc.messages.recent(nod.owner.id, 10)
    assert [m.text for m in stored] == ["first try", "second try", "Fine now."]
    assert not any([await nod.svc.messages.is_awaiting(m.id) for m in stored])  # answered: never re-answered after a restart


async def test_evidence_selection_sees_the_recent_turns_the_date_and_searches_a_period(nod: Harness) -> None:
    owner = nod.owner.id
    for days, words in ((10, "The dentist appointment was moved"), (5, "The dentist appointment is on Saturday")):
        await nod.svc.messages.append(Message(owner, Role.OWNER, words, "local", START - timedelta(days=days)))
    nod.server.enqueue(AGENT, text("Noted, a dentist appointment."))
    await nod.say("I booked the dentist")
    select = {"notes": [], "totals": False,
              "searches": [{"query": "dentist appointment", "from": "2026-11-27", "to": "2026-11-29"},
                           {"query": "dentist", "from": "not a date", "to": None}]}
    nod.server.enqueue(MEMORY, structured(select), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, structured({"notes": [], "messages": [2]}), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, KEEP, purpose="reply_check")
    nod.server.enqueue(AGENT, text("On Saturday."))
    await nod.say("and when is it?")
    first_call, ranking_call = nod.server.calls("evidence_selection")[-2:]  # the first turn's call was unscripted
    first = json.loads(first_call["messages"][-1]["content"])
    assert first["now"] == "Thursday 2026-12-03 09:00" and first["time_zone"] == "Europe/Lisbon"
    assert [m["text"] for m in first["recent"]][-2:] == ["I booked the dentist", "Noted, a dentist appointment."]
    ranked = json.loads(ranking_call["messages"][-1]["content"])
    ids = [m["id"] for m in ranked["messages"]]
    assert ids[0] == 2 and 1 in ids  # the dated search first; the bad date dropped only itself, so "dentist" ran undated
    assert nod.sink.sent[-1] == "On Saturday."


def _prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _as_prompt(body: dict[str, Any]) -> str:
    """The request in the order a provider's prefix cache reads it: tools, then the messages."""
    return json.dumps(body.get("tools", []), ensure_ascii=False) + json.dumps(body["messages"], ensure_ascii=False)


async def test_two_consecutive_turns_share_a_cacheable_prefix(nod: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    owner = nod.owner.id
    for n in range(24):
        note = ops.make_entry(f"about/fact-{n}", f"A lasting fact number {n} about Maya's life and habits",
                              origin=Origin.STATED, now=START, evidence=(Evidence(1),))
        await nod.svc.memory.update(owner, lambda d, note=note: ops.add_entry(d, note))
    for n in range(11):  # a conversation of 22 messages: the window holds them all until 30
        await nod.svc.messages.append(Message(owner, Role.OWNER, f"Question {n} about the week's plans", "local", START))
        await nod.svc.messages.append(Message(owner, Role.ASSISTANT, f"Answer {n}: here is what I know.", "local", START))
    nod.server.enqueue(AGENT, text("The first answer."), text("The second answer."))
    await nod.say("What is on today?")
    await nod.say("And tomorrow?")
    one, two = (_as_prompt(b) for b in nod.server.calls())
    first_difference = _prefix(one, two)
    share = first_difference / len(two)
    with capsys.disabled():
        print(f"\nprompt cache: first differing character {first_difference:,} of {len(two):,} ({share:.1%} stable)")
    body = nod.server.calls()[0]
    unchanged = json.dumps(body["tools"], ensure_ascii=False) + json.dumps(body["messages"][:-1], ensure_ascii=False)[:-1]
    assert first_difference >= len(unchanged)  # tools, instructions, memory and the whole earlier conversation
    assert share >= 0.9


async def test_an_error_quoting_the_request_logs_none_of_the_owners_words(
        nod: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nod.openai")
    quoted = ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
              "in the messages, [{'role': 'user', 'content': 'my secret plans for the surprise party'}]")
    nod.server.enqueue(AGENT, Answer(status=400, error_message=quoted),
                       Answer(status=400, error_message="'This is what the owner said about the party' is too long"))
    await nod.say("my secret plans for the surprise party")
    await nod.say("again")
    assert "maximum context length is 4096 tokens" in caplog.text
    assert "surprise party" not in caplog.text and "said about the party" not in caplog.text
