"""The pure parts of issue 38's fixes: budgets, framing removal, one schema per action, what is logged of a refusal."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from adapters.openai_model.chat import server_message
from adapters.openai_model.transport import refused_request
from bot.settings import Settings
from core.agent.budgets import AGENT_MAX_TOKENS, MIN_TOKENS, scaled
from core.agent.framing import CONTEXT_CLOSE, CONTEXT_OPEN, unframed
from core.evidence.selection import EvidenceChoice
from core.structured import Answer, parse_answer, parse_arguments
from core.tools.registry import TOOLS
from tests.unit.test_schemas import ANSWERS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_memory_answer_kind_has_a_budget_and_the_scale_keeps_a_floor() -> None:
    assert all(isinstance(a.max_tokens, int) and a.max_tokens > MIN_TOKENS for a in ANSWERS)
    assert Answer.KINDS == {a.purpose: Answer.KINDS[a.purpose] for a in ANSWERS}
    assert all(a.max_tokens == Answer.KINDS[a.purpose].max_tokens for a in ANSWERS)  # one budget per purpose
    assert scaled(Answer.KINDS["digest"].max_tokens, 0.1) == 80 and scaled(AGENT_MAX_TOKENS, 0.001) == MIN_TOKENS


def test_the_readme_lists_every_budget_as_the_code_sets_it() -> None:
    said = re.search(r"all scaled by `NOD_MAX_TOKENS_SCALE`: (.*?)\. A model", README.read_text(), re.S)
    assert said, "README's Budgets line moved"
    listed = {name: int(n.replace(",", "")) for name, n in re.findall(r"(\w+)\s+([\d,]+)", said.group(1))}
    assert listed == {"agent": AGENT_MAX_TOKENS, **{p: kind.max_tokens for p, kind in Answer.KINDS.items()}}


@pytest.mark.parametrize("echoed, kept", [
    (f"{CONTEXT_OPEN}\n\nNow: Thursday 2026-12-03 09:00 (Europe/Lisbon).\n\n{CONTEXT_CLOSE}\n\nAna lives in Porto.",
     "Ana lives in Porto."),
    ("[Nod server: context for this request, not the owner's words]\n[end of context; the owner's message follows]\n"
     "[12] Where does my sister live?", "Where does my sister live?"),
    ("Owner context:\nMemory (every saved note):\n", "Memory (every saved note):"),
    ("- message 3, 2026-11-01 10:00: my sister Ana\nShe lives in Porto.", "She lives in Porto."),
    ("(No more tool steps now: answer the owner after you have found what you've given.)\nPorto.", "Porto."),
    ("Your sister Ana lives in Porto [1].\n\n1. Porto\n2. Lisbon", "Your sister Ana lives in Porto [1].\n\n1. Porto\n2. Lisbon"),
])
def test_framing_a_model_copied_is_cut_and_nothing_else(echoed: str, kept: str) -> None:
    assert unframed(echoed) == kept


@pytest.mark.parametrize("tool", [t for t in TOOLS if t.actions], ids=lambda t: t.name)
def test_a_multi_action_tool_shows_one_strict_object_per_action_each_accepted_by_its_handler(tool: Any) -> None:
    branches = tool.spec().parameters["anyOf"]
    handled = set(tool.arguments.model_fields["action"].annotation.__args__)
    assert sorted(b["properties"]["action"]["enum"][0] for b in branches) == sorted(handled)  # each action once
    for branch in branches:
        example = {name: _example(spec) for name, spec in branch["properties"].items()}
        assert set(branch["required"]) == set(branch["properties"]) and branch["additionalProperties"] is False
        parse_arguments(tool.arguments, example, tool.name)  # the handler's own validation takes it


def _example(spec: dict[str, Any]) -> Any:
    if "enum" in spec:
        return spec["enum"][0]
    kind = spec["type"][0] if isinstance(spec["type"], list) else spec["type"]
    return {"string": "x", "array": [1], "integer": 1, "boolean": True}[kind]


def test_selection_dates_are_typed_and_a_bad_one_drops_only_itself() -> None:
    answer = parse_answer(EvidenceChoice, {"notes": [], "totals": False, "searches": [
        {"query": "hotel", "from": "Lisbon", "to": "2026-11-29"}, {"query": "dentist", "from": "2026-02-30", "to": None}]})
    assert [(s.query, s.start, s.end, s.bad_dates) for s in answer.searches] == [
        ("hotel", None, "2026-11-29", 1), ("dentist", None, None, 1)]


def _error(status: int, body: dict[str, Any]) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, json=body, request=request)
    return openai.APIStatusError("x", response=response, body=body)


LLAMA_CPP_PYTHON = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/x/app.py\", line 376")


def test_the_servers_words_are_kept_past_its_brackets_and_the_owners_are_not() -> None:
    said = server_message(_error(500, {"error": {"message": LLAMA_CPP_PYTHON}}))
    assert said == "1 validation error: body.response_format.type: Input should be 'text' or 'json_object'"
    conversation = [{"role": "user", "content": "my sister Ana lives in Porto near the river"}]
    echoing = {"error": {"message": "Prompt too long: the text my sister Ana lives in Porto is 9000 tokens [limit=8192]"}}
    logged = server_message(_error(400, echoing), conversation)
    assert "sister" not in logged and "Porto" not in logged and "[limit=8192]" in logged and "9000 tokens" in logged
    fastapi = {"detail": [{"loc": ["body", "messages", 1, "content"], "msg": "Input should be a valid string",
                           "input": "my secret plans"}]}
    assert server_message(_error(422, fastapi)) == "body.messages.1.content: Input should be a valid string"
    assert len(server_message(_error(400, {"error": {"message": "x " * 1000}}))) <= 300


@pytest.mark.parametrize("status, body, refused", [
    (400, b"{}", True), (422, b"{}", True), (404, b"{}", True), (429, b"{}", False), (408, b"{}", False),
    (500, json.dumps({"error": {"message": LLAMA_CPP_PYTHON}}).encode(), True), (500, b"out of memory", False),
    (503, b"loading model", False),
])
def test_a_refused_request_is_told_apart_from_an_outage(status: int, body: bytes, refused: bool) -> None:
    assert refused_request(status, body) is refused


def test_the_agent_deadline_and_the_budget_scale_are_the_operators() -> None:
    settings = Settings(agent_deadline_s=600, max_tokens_scale=0.5)
    assert (settings.agent_deadline_s, settings.max_tokens_scale) == (600, 0.5)
    with pytest.raises(ValueError, match="NOD_AGENT_DEADLINE_SECONDS must be a positive number"):
        Settings(agent_deadline_s=0)
    with pytest.raises(ValueError, match="NOD_MAX_TOKENS_SCALE must be a finite number, not inf"):
        Settings(max_tokens_scale=float("inf"))


def test_the_shared_tls_contexts_check_certificates_and_host_names_and_are_made_once() -> None:
    """The model servers' clients share one context, Telegram's two another (loading the CA bundle
    costs CPU per client), and sharing weakens nothing: certificates are required and host names
    checked, from a real bundle."""
    import ssl

    from adapters.openai_model.transport import tls_context as models
    from adapters.telegram.channel import tls_context as telegram

    for made in (models, telegram):
        context = made()
        assert context is made()
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0
