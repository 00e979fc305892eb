"""The saving guardrail table (``tests/saving_cases.py``), every row on the port fakes.

The same turn, tools and memory-model calls as production (``tests/unit/world.py``), over
fakes the contract suite proves; the memory model is scripted per purpose, as the scripted
server is in the end-to-end rows of ``tests/integration/test_saving_guardrails.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.agent.chat import ChatReply, ToolCall
from core.agent.turn_context import TurnOrigin
from core.errors import ModelError, ModelUnavailable
from core.message import Message, Role
from tests.fakes.ports import QueueModel
from tests.saving_cases import (
    CASES,
    REQ,
    SISTER,
    YES,
    Case,
    Raw,
    Said,
    check,
    learn,
    learned,
    next_id,
    note,
    resolved,
    seed,
    summary,
    tool_args,
)
from tests.unit.world import START, World, make_world

Q = "my sister Ana lives in Porto"


def reply(said: Said) -> ChatReply | ModelError:
    """A memory-model answer as the chat-model port gives it: a reply, or the adapter's error."""
    if isinstance(said, dict):
        return ChatReply(json.dumps(said))
    if isinstance(said, Raw):
        return ChatReply(said.text)
    return ModelUnavailable("The model server is unavailable.")


def call(name: str, args: dict[str, Any]) -> ChatReply:
    return ChatReply("", (ToolCall("c1", name, json.dumps(args)),))


def learn_inputs(memory: QueueModel) -> str:
    return " ".join(json.dumps(list(r.messages)) for r in memory.calls("memory_learn"))


def test_the_table_has_at_least_forty_rows() -> None:
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_guardrail(case: Case) -> None:
    world = await make_world(QueueModel(), QueueModel())
    memory = world.memory_model
    assert memory is not None
    try:
        ids = await seed(case, world.owner.id, START, world.messages, world.docs, world.owners)
        before = summary((await world.docs.load(world.owner.id)).document, ids)
        memory.enqueue(*[reply(resolved(a, {**ids, "@req": next_id(ids)})) for a in case.memory], purpose="memory_learn")
        memory.enqueue(*[reply(a) for a in case.trust], purpose="trust_check")
        result = await _run(world, case, ids)
        doc = (await world.docs.load(world.owner.id)).document
        calls = len(memory.calls("memory_learn")) + len(memory.calls("trust_check"))
        check(case, doc, before, ids, result, calls, learn_inputs(memory))
    finally:
        await world.close()


async def _run(world: World, case: Case, ids: dict[str, int]) -> dict[str, Any]:
    args = tool_args(case, ids)
    if case.origin is TurnOrigin.OWNER_MESSAGE:
        world.agent.enqueue(call("manage_personal_context", args), ChatReply("Done."))
        await world.say(case.request, **case.request_flags)
        ids["@req"] = max(m.id for m in await world.messages.recent(world.owner.id, 3) if m.role is Role.OWNER)
        assert world.sink.sent == ["Done."]  # saves are silent: only the agent's own answer arrived
        tool_results = [m for m in world.agent.calls()[1].messages if m["role"] == "tool"]
        return dict(json.loads(tool_results[0]["content"]))
    stored = await world.messages.append(Message(world.owner.id, Role.OWNER, case.request, "local", START,
                                                    **case.request_flags))  # type: ignore[arg-type]
    ids["@req"] = stored.message.id
    outcome = await world.deps.tools.run(await world.context(stored.message, case.origin),
                                         ToolCall("c1", "manage_personal_context", json.dumps(args)))
    return outcome.result


async def _control(world: World, words: str, command: str, trust: dict[str, Any]) -> dict[str, Any]:
    assert world.memory_model is not None
    world.memory_model.enqueue(reply(trust), purpose="trust_check")
    world.agent.enqueue(call("manage_personal_context", {"action": "memory_control", "command": command, "quote": words}),
                        ChatReply("Done."))
    await world.say(words)
    last = [m for m in world.agent.requests[-1].messages if m["role"] == "tool"][-1]
    return dict(json.loads(last["content"]))


async def test_stop_and_resume_follow_the_owners_words_and_stop_every_save() -> None:
    world = await make_world(QueueModel(), QueueModel())
    assert world.memory_model is not None
    assert await _control(world, "Please stop saving memory", "stop", YES) == {"done": "stop"}
    assert not (await world.owners.by_id(world.owner.id)).settings.saving_enabled
    world.agent.enqueue(call("manage_personal_context", learn()), ChatReply("Done."))
    await world.say(REQ)
    assert world.memory_model.calls("memory_learn") == [] and (await world.docs.load(world.owner.id)).document.entries == ()
    assert "Ask the owner first" in (await _control(world, "What can you do?", "resume", YES))["error"]
    assert not (await world.owners.by_id(world.owner.id)).settings.saving_enabled
    assert await _control(world, "You can resume saving memory", "resume", YES) == {"done": "resume"}
    assert (await world.owners.by_id(world.owner.id)).settings.saving_enabled
    assert world.sink.sent == ["Done."] * 4
    await world.close()


async def _learn(world: World, words: str, path: str, fact: str, quote: str, replaces: list[str]) -> None:
    assert world.memory_model is not None
    latest = await world.messages.recent(world.owner.id, 1)
    request_id = (latest[-1].id if latest else 0) + 1  # the message receive() is about to store
    world.memory_model.enqueue(reply(learned(note(path, fact, [request_id], quote, replaces=replaces))), purpose="memory_learn")
    world.agent.enqueue(call("manage_personal_context", learn()), ChatReply("Done."))
    await world.say(words)


async def test_a_replacement_chain_keeps_every_version_until_forgotten() -> None:
    world = await make_world(QueueModel(), QueueModel())
    assert world.memory_model is not None
    await _learn(world, "Remember my sister Ana lives in Porto", *SISTER, Q, [])
    await _learn(world, "Ana moved: my sister Ana lives in Lisbon", "people/sister", "Sister: Ana, lives in Lisbon",
                 "my sister Ana lives in Lisbon", ["people/sister"])
    await _learn(world, "Now my sister Ana lives in Faro", "people/sister-faro", "Sister: Ana, lives in Faro",
                 "my sister Ana lives in Faro", ["people/sister"])
    doc = (await world.docs.load(world.owner.id)).document
    assert [(e.path, e.text, e.replaces) for e in doc.entries] == [
        ("people/sister-faro", "Sister: Ana, lives in Faro", ("people/sister",))]
    assert [(r.entry.text, r.replaced_by) for r in doc.archive] == [
        (SISTER[1], "people/sister"), ("Sister: Ana, lives in Lisbon", "people/sister-faro")]
    world.memory_model.enqueue(reply(YES), purpose="trust_check")
    world.agent.enqueue(call("manage_personal_context", {"action": "memory_forget", "path": "people/sister-faro"}),
                        ChatReply("Done."))
    await world.say("Please forget where my sister lives")
    doc = (await world.docs.load(world.owner.id)).document
    assert doc.entries == () and doc.archive == ()
    assert world.sink.sent == ["Done."] * 4
    await world.close()
