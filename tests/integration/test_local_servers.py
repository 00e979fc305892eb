"""What a real local model server does to Nod's requests (issue 38), played by the scripted server.

Each test is one finding of trying Nod on llama-cpp-python's server with a small model: the
scripted server plays llama-cpp-python's own refusals (``llama_cpp_python``), a model that does
not stop (``runaway``), a body that never ends (``endless``) and a reasoning model that wants
``max_completion_tokens``. ``tests/realserver/`` runs the same request kinds against the real one.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from core.agent.budgets import AGENT_MAX_TOKENS, REASONING_ALLOWANCE
from core.agent.prompt import CONTEXT_CLOSE, CONTEXT_OPEN
from core.inbox.digests import Digest
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.structured import Answer as AnswerKind
from tests.fakes.model_server import Answer, FakeModelServer, purpose_of, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, START, Harness, make_harness

DIGEST_PROMPT = [{"role": "user", "content": "x"}]
VALIDATION_500 = ("1 validation error:\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'content'), "
                  "'msg': 'Input should be a valid string', 'input': 'Remember my sister Ana lives in Porto'}")


async def _next_id(nod: Harness) -> int:
    latest = await nod.svc.messages.recent(nod.owner.id, 1)
    return (latest[-1].id if latest else 0) + 1


async def _with_note(nod: Harness) -> None:
    note = ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=START,
                          evidence=(Evidence(1, "Ana lives in Porto"),))
    await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, note))


async def test_1_json_schema_refused_with_a_500_is_learnt_once_and_json_object_with_the_schema_is_sent(
        tmp_path: Path, server: FakeModelServer, caplog: pytest.LogCaptureFixture) -> None:
    server.llama_cpp_python = True
    caplog.set_level(logging.INFO, logger="nod.openai")
    async for nod in make_harness(tmp_path, server):
        for _ in range(2):
            server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
            assert (await nod.svc.gateway.ask(nod.owner.id, Digest, DIGEST_PROMPT)).summary == "s"
        formats = [b["response_format"] for b in server.requests]
        assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]  # refused once, then remembered
        assert formats[1]["schema"]["required"] == ["summary"]  # the schema rides beside the type: a grammar
        assert "JSON object named digest" in server.requests[1]["messages"][0]["content"]
        assert len(server.refused) == 1 and "model_rejects_json_schema" in caplog.text
        assert [r.outcome for r in await nod.usage_rows("digest")] == ["ok", "ok"]


async def test_1_nod_json_mode_json_object_sends_the_schema_from_the_first_call(tmp_path: Path,
                                                                               server: FakeModelServer) -> None:
    server.llama_cpp_python = True
    async for nod in make_harness(tmp_path, server, json_mode="json_object"):
        server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
        await nod.svc.gateway.ask(nod.owner.id, Digest, DIGEST_PROMPT)
        assert server.refused == [] and server.requests[0]["response_format"]["type"] == "json_object"
        assert server.requests[0]["response_format"]["schema"]["required"] == ["summary"]  # a grammar, not just the prompt


async def test_2_and_3_a_tool_round_trip_has_string_content_everywhere_and_tool_choice_auto(
        tmp_path: Path, server: FakeModelServer) -> None:
    server.llama_cpp_python = True
    async for nod in make_harness(tmp_path, server):
        server.enqueue(AGENT, tool("memory_find", {"words": "sister"}), text("Nothing about her yet."))
        await nod.say("what about my sister?")
        assert server.refused == [] and nod.sink.sent == ["Nothing about her yet."]
        second = server.calls()[1]
        assert all(isinstance(m["content"], str) for m in second["messages"])  # the tool-call message too
        assert [b.get("tool_choice") for b in server.calls()] == ["auto", "auto"]


async def test_3_without_tool_choice_llama_cpp_python_would_show_no_tools(tmp_path: Path,
                                                                         server: FakeModelServer) -> None:
    """The scripted server's rule itself: tools without tool_choice are left out (what today's main did)."""
    server.llama_cpp_python = True
    from openai import AsyncOpenAI
    client = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    server.enqueue(AGENT, tool("memory_find", {"words": "x"}))
    spec = {"type": "function", "function": {"name": "memory_find", "parameters": {"type": "object"}}}
    reply = await client.chat.completions.create(model=AGENT, messages=[{"role": "user", "content": "x"}], tools=[spec])
    await client.close()
    assert reply.choices[0].message.tool_calls is None and server.refused == ["tools left out of the prompt: no tool_choice"]


async def test_4_every_call_carries_the_max_tokens_of_its_purpose(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server):
        await _with_note(nod)
        server.enqueue(MEMORY, structured({"notes": ["people/sister"], "searches": [], "totals": False}),
                       purpose="evidence_selection")
        server.enqueue(MEMORY, structured({"verdict": "keep", "text": ""}), purpose="reply_check")
        request_id = await _next_id(nod)
        server.enqueue(MEMORY, structured({"notes": [{"path": "people/brother", "text": "Brother: Rui",
                                                      "message_ids": [request_id], "quote": "my brother Rui"}]}),
                       purpose="memory_learn")
        server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn", "message_ids": None}), text("Noted."))
        await nod.say("Remember my brother Rui")
        server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
        await nod.svc.gateway.ask(nod.owner.id, Digest, DIGEST_PROMPT)
        budgets = {purpose_of(b): b.get("max_tokens") for b in server.requests}
        assert budgets == {"chat": AGENT_MAX_TOKENS, **{p: AnswerKind.KINDS[p].max_tokens for p in
                                                        ("evidence_selection", "reply_check", "memory_learn", "digest")}}
        assert all(b.get("max_tokens") for b in server.requests)


async def test_4_a_runaway_memory_answer_stops_at_its_budget_is_cut_and_saves_nothing(nod: Harness) -> None:
    request_id = await _next_id(nod)
    nod.server.enqueue(MEMORY, Answer(runaway=True), purpose="memory_learn")
    nod.server.enqueue(AGENT, tool("manage_personal_context", {"action": "memory_learn", "message_ids": [request_id]}),
                       text("Done."))
    await nod.say("Remember my sister Ana lives in Porto")
    (row,) = await nod.usage_rows("memory_learn")
    assert row.outcome == "cut" and row.tokens_out == AnswerKind.KINDS["memory_learn"].max_tokens
    assert len(nod.server.calls("memory_learn")) == 1 and (await nod.svc.memory.load(nod.owner.id)).document.entries == ()
    assert nod.sink.sent == ["Done."]


async def test_4_a_model_that_wants_max_completion_tokens_is_asked_so_and_remembered(tmp_path: Path,
                                                                                     server: FakeModelServer) -> None:
    server.wants_completion_tokens = True
    async for nod in make_harness(tmp_path, server):
        for _ in range(2):
            server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
            await nod.svc.gateway.ask(nod.owner.id, Digest, DIGEST_PROMPT)
        sent = [(b.get("max_tokens"), b.get("max_completion_tokens")) for b in server.requests]
        budget = Digest.max_tokens
        assert sent == [(budget, None), (None, budget + REASONING_ALLOWANCE), (None, budget + REASONING_ALLOWANCE)]
        assert len(server.refused) == 1


async def test_4_an_answer_body_that_never_ends_is_read_to_a_bound_and_becomes_a_cut_answer(nod: Harness) -> None:
    nod.server.enqueue(MEMORY, Answer(endless=True), purpose="digest")
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        await nod.svc.gateway.ask(nod.owner.id, Digest, DIGEST_PROMPT)
    assert type(raised.value).__name__ == "AnswerCut" and time.monotonic() - began < 20
    assert len(nod.server.calls("digest")) == 1  # not asked again
    assert [r.outcome for r in await nod.usage_rows("digest")] == ["cut"]
    nod.server.enqueue(AGENT, Answer(endless=True))
    await nod.say("hello")
    assert nod.sink.sent and nod.sink.sent[-1]  # the owner still gets a sentence


async def test_5_a_request_validation_500_is_not_retried_and_its_words_are_logged_without_the_owners(
        nod: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nod.openai")
    nod.server.enqueue(AGENT, Answer(status=500, error_message=VALIDATION_500))
    await nod.say("Remember my sister Ana lives in Porto")
    assert len(nod.server.calls()) == 1  # the SDK would have sent it three times
    assert "body.messages.1.content: Input should be a valid string" in caplog.text
    assert "sister Ana" not in caplog.text and "Porto" not in caplog.text
    assert nod.sink.sent == ["The model server refused the request; the operator should check Nod's model settings."]
    for status in (422, 400):
        nod.server.enqueue(AGENT, Answer(status=status))
        await nod.say(f"again {status}")
    assert len(nod.server.calls()) == 3  # a 4xx is never retried
    nod.server.enqueue(AGENT, Answer(status=500), Answer(status=500), text("Back."))
    await nod.say("and again")
    assert nod.sink.sent[-1] == "Back."  # an outage's 500 is still retried


async def test_6_the_agent_deadline_is_the_operators(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, agent_deadline_s=0.5):
        assert nod.svc.gateway.roles.agent_deadline_s == 0.5
        server.enqueue(AGENT, text("too late", delay_s=5))
        began = time.monotonic()
        await nod.say("hello")
        assert time.monotonic() - began < 4 and nod.sink.sent == ["The model took too long to answer. Please try again."]
        assert [r.outcome for r in await nod.usage_rows("agent")] == ["timeout"]


async def test_7_evidence_selection_is_skipped_when_there_is_nothing_to_select(
        nod: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nod.evidence")
    nod.server.enqueue(AGENT, text("Hi Maya!"), text("Still here."))
    await nod.say("hi")  # no notes, no older message
    assert nod.server.calls("evidence_selection") == [] and await nod.usage_rows("evidence_selection") == []
    assert "evidence_selection_skipped owner=1 reason=nothing_to_select" in caplog.text
    await nod.say("and now?")  # an older message exists: there is something to select from
    assert len(nod.server.calls("evidence_selection")) == 1


async def test_8_a_date_bound_that_is_not_a_date_drops_only_itself(nod: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nod.evidence")
    await _with_note(nod)
    nod.server.enqueue(AGENT, text("Noted."))
    await nod.say("The river hotel in Porto was lovely")
    select = {"notes": [], "totals": False, "searches": [{"query": "river hotel", "from": "Lisbon", "to": "Europe/Lisbon"}]}
    nod.server.enqueue(MEMORY, structured(select), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, structured({"notes": [], "messages": [2]}), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, structured({"verdict": "keep", "text": ""}), purpose="reply_check")
    nod.server.enqueue(AGENT, text("The river hotel."))
    await nod.say("which hotel did I like?")
    first, ranking = nod.server.calls("evidence_selection")[-2:]
    searches = first["response_format"]["json_schema"]["schema"]["properties"]["searches"]["items"]["properties"]
    assert searches["from"]["format"] == "date" and searches["to"]["format"] == "date"
    assert 1 in [m["id"] for m in json.loads(ranking["messages"][-1]["content"])["messages"]]  # the search still ran
    assert "evidence_search_dates_dropped owner=1 dropped=2" in caplog.text


async def test_9_a_multi_action_tool_offers_one_strict_object_per_action(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("Hello."))
    await nod.say("hi")
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in nod.server.calls()[0]["tools"]}
    learn, forget, control = tools["manage_personal_context"]["anyOf"]
    assert set(learn["properties"]) == {"action", "message_ids"} and set(forget["properties"]) == {"action", "path"}
    assert set(control["properties"]) == {"action", "command", "quote"}
    assert [set(s["properties"]) for s in tools["skills"]["anyOf"]][0] == {"action", "name"}


FRAMED = (f"{CONTEXT_OPEN}\n\nNow: Thursday 2026-12-03 09:00 (Europe/Lisbon).\n\n{CONTEXT_CLOSE}\n\n"
          "[12] Owner context: Ana lives in Porto.")


async def test_10_framing_a_model_echoes_is_not_delivered(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text(FRAMED), text("[Nod server: context for this request, not the owner's words]"))
    await nod.say("Where does my sister live?")
    await nod.say("hm?")
    assert nod.sink.sent[0] == "Ana lives in Porto."
    assert nod.sink.sent[1] == "I couldn't put an answer together just now. Could you ask again?"
    final = nod.server.calls()[0]["messages"][-1]["content"]
    assert "[Nod server" not in final and not final.lstrip().startswith("[")


async def test_the_scripted_server_plays_llama_cpp_pythons_refusals_with_its_words(tmp_path: Path,
                                                                                   server: FakeModelServer) -> None:
    server.llama_cpp_python = True
    from openai import AsyncOpenAI, InternalServerError
    client = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    with pytest.raises(InternalServerError, match="Input should be a valid string"):
        await client.chat.completions.create(model=AGENT, messages=[{"role": "user", "content": "x"},
                                                                    {"role": "assistant", "content": None}])
    await client.close()
