"""The turn and the saving rules on in-memory ports: no database, no server, the same code.

The integration tests run turns on real SQLite and PostgreSQL through the real openai
client; here the ports are fakes (``tests/fakes/ports.py``, proven by ``tests/contract``),
so a test can also count what a turn asked of its storage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from core.agent.chat import ChatReply, ChatRequest, ToolCall
from core.agent.turn_context import TurnOrigin, begin
from core.memory import document as ops
from core.memory.values import Origin
from core.message import Message, Role
from tests.fakes.messages import MemoryMessages
from tests.fakes.ports import QueueModel
from tests.unit.world import START, World, make_world


def _call(name: str, args: dict) -> ChatReply:  # type: ignore[type-arg]
    return ChatReply("", (ToolCall("c1", name, json.dumps(args)),))


def _json(value: dict) -> ChatReply:  # type: ignore[type-arg]
    return ChatReply(json.dumps(value))


async def test_a_turn_reads_memory_and_sums_spending_once_for_evidence_check_and_tools() -> None:
    agent = QueueModel().enqueue(_call("memory_read", {"path": "people/sister"}), ChatReply("Ana lives in Porto."))
    memory = QueueModel().enqueue(_json({"notes": ["people/sister"], "searches": [], "totals": False}),
                                  _json({"notes": ["people/sister"], "messages": []}),
                                  _json({"verdict": "keep", "text": ""}))
    world = await make_world(agent, memory)
    entry = ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=START)
    await world.docs.update(world.owner.id, lambda d: ops.add_entry(d, entry))
    world.docs.loads = 0
    await world.say("Where does my sister live?")
    assert world.sink.sent == ["Ana lives in Porto."]
    assert [r.purpose for r in world.usage.rows] == ["evidence_selection", "evidence_selection", "agent", "agent",
                                                     "reply_check"]
    assert world.docs.loads == 1 and world.usage.sums == 1  # one snapshot served the whole turn


async def test_a_save_refreshes_the_snapshot_for_the_rest_of_the_turn() -> None:
    agent = QueueModel().enqueue(_call("manage_personal_context", {"action": "memory_learn"}),
                                 _call("memory_read", {"path": "about"}), ChatReply("Noted."))
    world = await make_world(agent, QueueModel())
    note = {"path": "about/boat", "text": "Boat: Gaivota", "message_ids": [1], "quote": "my boat is called Gaivota"}
    # no notes and no older message: evidence selection is skipped, so memory_learn is the memory model's first call
    world.memory_model.enqueue(_json({"notes": [note]}))  # type: ignore[union-attr]
    await world.say("Remember that my boat is called Gaivota")
    read = json.loads(agent.requests[2].messages[-1]["content"])
    assert read["entries"][0]["path"] == "about/boat" and world.docs.loads == 1
    assert world.sink.sent == ["Noted."]  # saves are silent


async def _tool_result(world: World, origin: TurnOrigin, args: dict, words: str = "Remember my sister is Ana") -> dict:  # type: ignore[type-arg]
    stored = (await world.messages.append(Message(world.owner.id, Role.OWNER, words, "local", START))).message
    ctx = await begin(await world.deps.owners.by_id(world.owner.id), origin, stored.thread_id, stored.id,
                      world.docs, world.deps.spending)
    outcome = await world.deps.tools.run(ctx, ToolCall("c1", "manage_personal_context", json.dumps(args)))
    return outcome.result


async def test_only_work_the_owner_started_may_save() -> None:
    world = await make_world(QueueModel(), QueueModel())
    for origin in (TurnOrigin.EVENT, TurnOrigin.SUBAGENT, TurnOrigin.SCHEDULE):
        result = await _tool_result(world, origin, {"action": "memory_learn"})
        assert "only runs in work the owner started" in result["error"]
    assert world.memory_model.requests == []  # type: ignore[union-attr]


async def test_naming_a_message_that_is_not_the_owners_refuses_the_whole_save() -> None:
    world = await make_world(QueueModel(), QueueModel())
    nods = (await world.messages.append(Message(world.owner.id, Role.ASSISTANT, "Your sister is Bea", "local",
                                                   START))).message
    result = await _tool_result(world, TurnOrigin.OWNER_MESSAGE, {"action": "memory_learn", "message_ids": [nods.id]})
    assert result["error"] == f"Message {nods.id} is not one of the owner's own messages; nothing was saved."
    assert world.docs.stored == {}


@dataclass
class AnsweredElsewhere(QueueModel):
    """An agent model during whose answer the owner's requests are settled: another worker
    answered them, or the owner said /stop."""

    settled_by: MemoryMessages | None = None
    owner_id: int = 0

    async def complete(self, request: ChatRequest) -> ChatReply:
        if self.settled_by is not None:
            await self.settled_by.settle(self.owner_id)
        return await super().complete(request)


async def test_a_request_settled_while_its_turn_ran_gets_no_reply() -> None:
    agent = AnsweredElsewhere().enqueue(ChatReply("too late"))
    world = await make_world(agent)
    agent.settled_by, agent.owner_id = world.messages, world.owner.id
    await world.say("hi")
    assert world.sink.sent == [] and [m.text for m in await world.messages.recent(world.owner.id, 10)] == ["hi"]
    assert await world.messages.undelivered(START + timedelta(days=1), ["local"]) == []
