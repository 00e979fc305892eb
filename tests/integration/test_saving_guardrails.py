"""A few rows of the saving guardrail table end to end: real SQLite, the real openai client, the scripted server.

Every row of the table (``tests/saving_cases.py``) runs on the port fakes in
``tests/unit/test_saving_guardrails.py``; the fakes are proven against SQLite and
PostgreSQL by ``tests/contract``. These rows run once more through what the fakes stand in
for, where it takes part in the rule: the secret flag the store computes as it writes, one
owner's rows kept from another's, the openai client's retries of a server that is down
and its reading of a garbled answer, and a trust check over HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.agent.chat import ToolCall
from core.agent.turn_context import TurnOrigin
from core.message import Inbound, Message, Role
from core.owner import Identity
from tests.fakes.model_server import Answer, FakeModelServer, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, START, Harness, make_harness
from tests.saving_cases import CASES, Case, Down, Raw, Said, check, next_id, resolved, seed, summary, tool_args

END_TO_END = (
    "a quote from the current message is saved as stated",
    "an owner message with a secret is never read",
    "the agent naming another owner's message refuses the whole save",
    "the model down saves nothing",
    "garbage then a good answer saves",
    "forget with the owner's words deletes the note and its versions",
    "a schedule origin may not save",
)
ROWS = [c for c in CASES if c.name in END_TO_END]


def answers(said: Said) -> tuple[Answer, ...]:
    """A memory-model answer as the scripted server sends it (a server that is down: each of the SDK's three tries)."""
    if isinstance(said, dict):
        return (structured(said),)
    if isinstance(said, Raw):
        return (text(said.text),)
    assert isinstance(said, Down)
    return (Answer(status=503),) * 3


def test_every_end_to_end_row_is_in_the_table() -> None:
    assert len(ROWS) == len(END_TO_END)


@pytest.mark.parametrize("case", ROWS, ids=[c.name for c in ROWS])
async def test_guardrail(case: Case, tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server):
        ids = await seed(case, nod.owner.id, START, nod.svc.messages, nod.svc.memory, nod.svc.owners)
        before = summary((await nod.svc.memory.load(nod.owner.id)).document, ids)
        server.enqueue(MEMORY, *[a for s in case.memory for a in answers(resolved(s, {**ids, "@req": next_id(ids)}))],
                       purpose="memory_learn")
        server.enqueue(MEMORY, *[a for s in case.trust for a in answers(s)], purpose="trust_check")
        result = await _run(nod, case, ids)
        doc = (await nod.svc.memory.load(nod.owner.id)).document
        learn_inputs = " ".join(json.dumps(c["messages"]) for c in server.calls("memory_learn"))
        check(case, doc, before, ids, result, len(server.calls("memory_learn")) + len(server.calls("trust_check")),
              learn_inputs)


async def _run(nod: Harness, case: Case, ids: dict[str, int]) -> dict[str, Any]:
    args = tool_args(case, ids)
    if case.origin is TurnOrigin.OWNER_MESSAGE:
        nod.server.enqueue(AGENT, tool("manage_personal_context", args), text("Done."))
        await nod.conductor.receive(nod.owner, Inbound(Identity("local", nod.owner.name), case.request, **case.request_flags))
        await nod.conductor.wait(nod.owner.id)
        ids["@req"] = max(m.id for m in await nod.svc.messages.recent(nod.owner.id, 3) if m.role is Role.OWNER)
        assert nod.sink.sent == ["Done."]  # saves are silent: only the agent's own answer arrived
        tool_results = [m for m in nod.server.calls()[1]["messages"] if m["role"] == "tool"]
        return dict(json.loads(tool_results[0]["content"]))
    stored = await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, case.request, "local", START,
                                                      **case.request_flags))  # type: ignore[arg-type]
    ids["@req"] = stored.message.id
    ctx = await nod.context(stored.message, case.origin)
    outcome = await nod.svc.turn.tools.run(ctx, ToolCall("c1", "manage_personal_context", json.dumps(args)))
    return outcome.result
