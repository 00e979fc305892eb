"""Learned skills end to end: a save scrubbed of the operator's own API key, as bot.wiring passes it in.

The skills tool's rules run on the port fakes in tests/unit/test_skills_rules.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.memory.values import Skill
from tests.fakes.model_server import FakeModelServer, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, Harness, make_harness

DRAFT = ("Ordered Ana's flowers on florist.example: log in, basket, pay with 4111 1111 1111 1111, "
         "order 88231, then emailed Ana the receipt.")
REWRITE = {"description": "Order flowers on florist.example", "sensitive": False, "extends": None,
           "body": "1. Log in.\n2. Add <item> to the basket.\n3. Pay; note <order number>.\nVerify: the confirmation page."}


def _tool_results(nod: Harness) -> list[dict[str, Any]]:
    """The tool results the agent's last call of the turn saw."""
    return [json.loads(m["content"]) for m in nod.server.calls()[-1]["messages"] if m["role"] == "tool"]


async def _skills(nod: Harness) -> tuple[Skill, ...]:
    return (await nod.svc.memory.load(nod.owner.id)).document.skills


async def _save(nod: Harness, rewrite: dict[str, Any], name: str = "order-flowers", body: str = DRAFT) -> dict[str, Any]:
    nod.server.enqueue(MEMORY, structured(rewrite), purpose="skill_rewrite")
    nod.server.enqueue(AGENT, tool("skills", {"action": "save", "name": name, "description": "flowers", "body": body}),
                       text("Done."))
    await nod.say("thanks, the flowers are ordered")
    return _tool_results(nod)[-1]


async def test_a_save_is_scrubbed_rewritten_with_placeholders_and_quiet(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, openai_api_key="sk-proj-SECRETSECRETSECRET1234"):
        result = await _save(nod, REWRITE, body=DRAFT + " key sk-proj-SECRETSECRETSECRET1234")
        assert result["saved"] == "order-flowers" and nod.sink.sent == ["Done."]
        asked = json.dumps(server.calls("skill_rewrite")[0]["messages"])
        assert "4111" not in asked and "SECRETSECRET" not in asked and "<card number>" in asked  # scrubbed first
        assert "placeholder" in asked and "outside party" in asked  # the model is told to generalise and drop sends
        (skill,) = await _skills(nod)
        assert skill.body == REWRITE["body"] and "emailed" not in skill.body and "88231" not in skill.body
        server.enqueue(AGENT, text("ok"))
        await nod.say("hello again")
        assert "order-flowers: Order flowers on florist.example" in server.calls()[-1]["messages"][0]["content"]
