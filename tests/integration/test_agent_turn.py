"""The agent turn end to end: real SQLite, the real openai client, a scripted model server.

The turn's rules that need neither (the step cap, tool failures, the spending check-in, no
model, skill bodies, a redelivered message) run on the port fakes in tests/unit/test_turn_rules.py.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import services
from core.agent.conductor import Conductor
from core.agent.gateway import Gateway, ModelRoles
from core.agent.usage import PriceTable
from core.clock import FixedClock
from core.errors import ModelTimeout, UnreadableAnswer
from core.inbox.digests import Digest
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.message import Inbound, Message, Role
from core.owner import Identity
from core.structured import strict_schema
from tests.conftest import POSTGRES_URL, drop_postgres_database, fresh_postgres_url
from tests.fakes.model_server import UNSCRIPTED, Answer, FakeModelServer, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, START, Harness, Sink, make_harness


def _tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_a_turn_reads_memory_searches_history_and_delivers_the_answer(nod: Harness) -> None:
    await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "My sister Ana moved to Porto", "local", START - timedelta(days=30)))
    note = ops.make_entry("people/sister", "Sister: Ana", origin=Origin.STATED, now=START, evidence=(Evidence(1),))
    await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, note))
    nod.server.enqueue(AGENT, tool("memory_read", {"path": "people/sister"}),
                       tool("history_search", {"query": "Ana Porto"}), text("Ana lives in Porto."))
    await nod.say("Where does my sister live?")
    assert nod.sink.sent == ["Ana lives in Porto."]
    first, second, third = nod.server.calls()
    system = first["messages"][0]["content"]
    assert "people/sister: Sister: Ana" in system
    assert "Europe/Lisbon" in first["messages"][-1]["content"]  # the time changes per turn: after the cached prefix
    assert {t["function"]["name"] for t in first["tools"]} == {
        "memory_read", "memory_find", "history_search", "manage_personal_context", "skills", "schedules", "offer_choices"}
    assert json.loads(_tool_messages(second)[0])["text"] == "Sister: Ana"
    found = json.loads(_tool_messages(third)[1])["results"]
    assert any("Porto" in r["text"] for r in found)
    stored = await nod.svc.messages.recent(nod.owner.id, 1)
    assert stored[0].role is Role.ASSISTANT and stored[0].text == "Ana lives in Porto."


async def test_related_older_messages_and_recent_turns_are_in_the_context(nod: Harness) -> None:
    await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "The boat trip in Lagos was lovely", "local", START - timedelta(days=90)))
    for i in range(30):
        await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, f"filler message {i}", "local", START - timedelta(days=1)))
    nod.server.enqueue(AGENT, text("Shall I book a boat trip?"))
    await nod.say("Find me another boat trip")
    body = nod.server.calls()[0]
    assert "The boat trip in Lagos was lovely" in body["messages"][-1]["content"]  # with the request, not in the cached prefix
    assert "Lagos" not in body["messages"][0]["content"]
    assert body["messages"][-1]["content"].endswith("Find me another boat trip")
    shown = "\n".join(str(m["content"]) for m in body["messages"][1:])
    # ids 1–31 came before: the window starts at the newest id divisible by 10 with 20 after it (10: filler 8)
    assert "filler message 29" in shown and "filler message 8" in shown and "filler message 7" not in shown






async def test_stop_ends_a_slow_model_call_at_once(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("too late", delay_s=60, ignore_cancel=True))
    await nod.conductor.receive(nod.owner, Inbound(Identity("local", nod.owner.name), "think hard"))
    await nod.server.wait_for_calls(1)
    assert await nod.conductor.stop(nod.owner.id)
    await asyncio.wait_for(nod.conductor.wait(nod.owner.id), 5)  # not the model's 60 seconds
    assert nod.sink.sent == []
    assert [r.outcome for r in await nod.usage_rows("agent")] == ["stopped"]
    assert not await nod.conductor.stop(nod.owner.id)


async def test_a_new_message_mid_turn_restarts_the_turn_with_both_messages(nod: Harness) -> None:
    nod.server.enqueue(AGENT, text("answer to the first", delay_s=60, ignore_cancel=True), text("answer to both"))
    await nod.conductor.receive(nod.owner, Inbound(Identity("local", nod.owner.name), "book a table"))
    await nod.server.wait_for_calls(1)
    await nod.say("for four people")
    assert nod.sink.sent == ["answer to both"]
    second = nod.server.calls()[1]["messages"]
    last = second[-1]["content"]  # one user message: templates want user and assistant to alternate
    assert second[-2]["role"] != "user" and last.index("book a table") < last.index("for four people")


async def test_an_agent_model_timeout_gets_a_sentence_and_a_usage_row(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_model=None, agent_deadline_s=0.5):
        server.enqueue(AGENT, text("late", delay_s=10, ignore_cancel=True))
        await nod.conductor.receive(nod.owner, Inbound(Identity("local", nod.owner.name), "hello"))
        await asyncio.wait_for(nod.conductor.wait(nod.owner.id), 5)
        assert nod.sink.sent == ["The model took too long to answer. Please try again."]
        assert [r.outcome for r in await nod.usage_rows("agent")] == ["timeout"]


async def test_a_memory_model_call_has_a_deadline_and_rejects_garbage(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_deadline_s=0.5):
        gateway = nod.svc.gateway
        server.enqueue(MEMORY, structured({"summary": "ok"}), text("this is not json"), text("[1, 2]"),
                       structured({"summary": 3}), Answer(content="{}", delay_s=10, ignore_cancel=True), purpose="digest")
        ask = [{"role": "user", "content": "x"}]
        assert (await gateway.ask(nod.owner.id, Digest, ask)).summary == "ok"
        for _ in range(3):  # not JSON, not an object, not the schema's shape
            with pytest.raises(UnreadableAnswer):
                await gateway.ask(nod.owner.id, Digest, ask)
        with pytest.raises(ModelTimeout):
            await gateway.ask(nod.owner.id, Digest, ask)
        body = server.calls("digest")[0]
        assert body["response_format"]["json_schema"]["name"] == "digest"
        assert [r.outcome for r in await nod.usage_rows()] == ["ok", "unreadable", "unreadable", "unreadable", "timeout"]


async def test_json_object_mode_puts_the_schema_in_the_prompt(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, json_mode="json_object"):
        server.enqueue(MEMORY, structured({"summary": "s"}), purpose="digest")
        answer = await nod.svc.gateway.ask(nod.owner.id, Digest, [{"role": "user", "content": "x"}])
        assert answer.summary == "s"
        body = server.calls("digest")[0]
        assert body["response_format"] == {"type": "json_object", "schema": strict_schema(Digest)}  # llama-cpp-python's form
        assert '"summary"' in body["messages"][0]["content"]


async def test_a_broken_model_server_gets_a_sentence_not_a_crash(nod: Harness) -> None:
    nod.server.enqueue(AGENT, Answer(raw_body="<html>oops</html>"), text("recovered"))
    await nod.say("hello")
    await nod.say("hello again")
    assert nod.sink.sent[0].startswith("I couldn't get an answer") and nod.sink.sent[1] == "recovered"


async def test_a_failing_server_is_retried_by_the_sdk_then_answered_with_a_sentence(nod: Harness) -> None:
    nod.server.enqueue(AGENT, *[Answer(status=503)] * 3)
    await nod.say("hello")
    assert len(nod.server.calls()) == 3  # the first try and the SDK's two retries
    assert nod.sink.sent == ["I couldn't get an answer from the model just now. Please try again in a moment."]
    assert [r.outcome for r in await nod.usage_rows("agent")] == ["unavailable"]


async def test_every_model_call_is_recorded_with_tokens_and_cost(nod: Harness) -> None:
    nod.server.enqueue(AGENT, tool("memory_find", {"words": "x"}), text("done"))
    await nod.say("hello")
    rows = await nod.usage_rows("agent")
    assert [(r.purpose, r.model, r.tokens_in, r.tokens_out, r.outcome) for r in rows] == [("agent", AGENT, 100, 20, "ok")] * 2
    assert rows[0].cost_usd == pytest.approx((100 * 0.15 + 20 * 0.60) / 1_000_000)
    assert rows[0].owner_id == nod.owner.id












async def test_unscripted_calls_are_visible(nod: Harness) -> None:
    await nod.say("hello")
    assert nod.sink.sent == [UNSCRIPTED]


class StubbornModel:
    """A provider that ignores cancellation: its call goes on whatever the caller does."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()  # set by the test once it is over: the call runs until then

    async def close(self) -> None:
        pass

    async def complete(self, request: Any) -> Any:
        self.started.set()
        await asyncio.shield(self.release.wait())
        raise AssertionError("the gateway should have stopped waiting long ago")


async def test_stop_does_not_wait_for_a_provider_that_ignores_cancellation(nod: Harness) -> None:
    stubborn = StubbornModel()
    gateway = Gateway(ModelRoles(AGENT, None), stubborn, None, nod.svc.usage, PriceTable({}), nod.svc.clock)
    conductor = Conductor(replace(nod.svc.turn, gateway=gateway), nod.sink)
    await conductor.receive(nod.owner, Inbound(Identity("local", nod.owner.name), "think"))
    await stubborn.started.wait()
    assert await conductor.stop(nod.owner.id)
    await asyncio.wait_for(conductor.wait(nod.owner.id), 1)  # the provider's call is still running
    assert nod.sink.sent == [] and [r.outcome for r in await nod.usage_rows("agent")] == ["stopped"]
    stubborn.release.set()


@pytest.mark.skipif(not POSTGRES_URL, reason="PostgreSQL not configured: set NOD_TEST_POSTGRES_URL")
async def test_two_workers_on_postgresql_run_one_turn_per_owner_at_a_time(server: FakeModelServer) -> None:
    url = await fresh_postgres_url()
    settings = Settings(database_url=url, openai_base_url=server.base_url, openai_api_key="t", agent_model=AGENT)
    try:
        async with services(settings, FixedClock(START)) as one, services(settings, FixedClock(START)) as two:
            owner = await one.owners.add("Maya", "UTC", (), START)
            sink_one, sink_two = Sink(), Sink()
            first, second = one.conductor(sink_one), two.conductor(sink_two)
            server.enqueue(AGENT, text("The first answer.", delay_s=0.8), text("The second answer."))
            await first.receive(owner, Inbound(Identity("telegram", owner.name), "first question", "u1"))
            await server.wait_for_calls(1)  # worker one's turn is waiting for the model
            await second.receive(owner, Inbound(Identity("whatsapp", owner.name), "second question", "SM1"))
            await asyncio.wait_for(asyncio.gather(first.wait(owner.id), second.wait(owner.id)), 20)
            assert sink_one.sent == ["The first answer."] and sink_two.sent == ["The second answer."]
            later = server.calls()[1]["messages"]
            assert any(m.get("content") == "The first answer." for m in later)  # it waited for the first turn's reply
            await first.close()
            await second.close()
    finally:
        await drop_postgres_database(url)
