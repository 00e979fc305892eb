"""Every request kind Nod makes, against a real local model server (issue 38).

The tiny model (SmolLM2-135M) answers badly; what is tested is Nod: every request is
accepted (no 4xx/5xx — the one exception being llama-cpp-python's refusal of json_schema,
which Nod learns from once per model), every answer is parsed or cleanly dropped, every call
ends within its ``max_tokens`` and its deadline, nothing invented is saved, no framing comes
back to the owner, and the owner always gets a sentence.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import timedelta
from typing import Any

import pytest

from core.agent.budgets import AGENT_MAX_TOKENS, scaled
from core.agent.chat import ToolCall
from core.errors import AnswerCut, UnreadableAnswer
from core.evidence import reply_check, selection
from core.gmail import style
from core.gmail.sampling import Samples
from core.inbox import digests
from core.inbox.digests import Digest, Digests
from core.maintenance import reflect
from core.maintenance.operations import Reflection
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.message import Message, Role
from core.saving import learn, trust
from core.skills import learned
from core.structured import Answer
from core.tools.registry import TOOL_SPECS
from tests.realserver.harness import AGENT_DEADLINE_S, MEMORY_DEADLINE_S, NOW, Real, make_real
from tests.realserver.recorder import note_parsed

pytestmark = pytest.mark.timeout(900)
FRAMING = re.compile(r"\[Nod server|Context from Nod's server|Owner context:|Your memory of the owner:|"
                     r"The owner's message follows|^\s*\[\d+\]", re.M)
SPOKEN = ("Remember that my sister Ana lives in Porto and I'm allergic to peanuts", "Where does my sister live?",
          "Forget the peanut thing", "What do you know about me?")


async def _every_call_was_accepted_bounded_and_read(real: Real) -> None:
    """The closing checks of every test: what the server answered and what Nod made of it."""
    assert real.proxy is not None
    refused = [s for s in real.proxy.seen if not 200 <= s.status < 300]
    assert all(s.json_mode == "json_schema" and s.status in (400, 422, 500) for s in refused), refused
    assert len(refused) <= 1  # json_schema is refused once by llama-cpp-python, then json_object is learnt
    assert not any(s.null_content for s in real.proxy.seen)
    assert all(s.max_tokens for s in real.proxy.seen)  # every call carries its budget
    assert all(s.tool_choice == "auto" for s in real.proxy.seen if s.tools)  # else llama-cpp-python hides the tools
    for row in await real.usage_rows():
        assert row.outcome in ("ok", "cut", "unreadable"), row  # answered; parsed or cleanly dropped
        scale = real.svc.gateway.roles.max_tokens_scale
        budget = scaled(AGENT_MAX_TOKENS, scale) if row.purpose == "agent" else scaled(Answer.KINDS[row.purpose].max_tokens, scale)
        assert row.tokens_out <= budget, row
        assert row.duration_ms <= 1000 * (AGENT_DEADLINE_S if row.purpose == "agent" else MEMORY_DEADLINE_S) + 2000
        note_parsed(real.server_name, "chat" if row.purpose == "agent" else row.purpose, row.outcome == "ok")


async def _nothing_invented_is_saved(real: Real) -> None:
    """Every saved note quotes an owner message it cites: the memory model wrote nothing of its own."""
    doc = (await real.svc.memory.load(real.owner.id)).document
    for entry in doc.entries:
        if entry.origin is not Origin.STATED or entry.path == "people/sister-seeded":
            continue
        sources = await real.svc.messages.get_many(entry.source_ids)
        assert sources and all(m.role is Role.OWNER for m in sources.values()), entry
        for evidence in entry.evidence:
            if evidence.quote:
                assert any(evidence.quote.lower() in m.text.lower() for m in sources.values()), entry


def _sentence(text: str) -> None:
    assert text.strip(), "the owner got nothing"
    assert not FRAMING.search(text), f"framing came back to the owner: {text[:200]!r}"


async def test_the_issues_conversation_each_message_gets_a_sentence_and_nothing_invented_is_saved(
        real: Real, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.INFO, logger="nod.agent.turn")
    for words in SPOKEN:
        await real.say(words)
    assert len(real.sink.sent) == len(SPOKEN)
    echoed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("turn_answer_unframed")]
    with capsys.disabled():  # what the tiny model still copied of the framing (cut before delivery)
        print(f"\n{real.server_name}: {len(echoed)} of {len(SPOKEN)} answers copied framing; delivered: {real.sink.sent}")
    for text in real.sink.sent:
        _sentence(text)
    digest = await Digests(real.svc.gateway, real.svc.spending, real.svc.memory).memory(real.owner)  # /memory
    _sentence(digest)
    await _nothing_invented_is_saved(real)
    await _every_call_was_accepted_bounded_and_read(real)


async def _seeded(real: Real) -> int:
    """A stated note and an older message, so selection, the reply check and the digest have something to read."""
    older = (await real.svc.messages.append(Message(real.owner.id, Role.OWNER, "My sister Ana moved to Porto last year",
                                                      "local", NOW - timedelta(days=30)))).message
    note = ops.make_entry("people/sister-seeded", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=NOW,
                          evidence=(Evidence(older.id, "sister Ana moved to Porto"),))
    await real.svc.memory.update(real.owner.id, lambda d: ops.add_entry(d, note))
    return older.id


async def test_a_turn_with_notes_runs_selection_and_the_check_and_answers(real: Real) -> None:
    await _seeded(real)
    await real.say("Where does my sister live?")
    _sentence(real.sink.sent[-1])
    assert real.proxy is not None and any(s.purpose == "evidence_selection" for s in real.proxy.seen)
    await _every_call_was_accepted_bounded_and_read(real)


async def test_the_agent_tool_result_round_trip_is_accepted(real: Real) -> None:
    request = (await real.svc.messages.append(Message(real.owner.id, Role.OWNER, "What do you know about my sister?",
                                                        "local", NOW))).message
    ctx = await real.context(request)
    call = ToolCall("call_0", "memory_find", json.dumps({"words": "sister"}))
    outcome = await real.svc.turn.tools.run(ctx, call)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Nod, Maya's assistant. Answer briefly."},
        {"role": "user", "content": request.text},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": outcome.content()},
    ]
    reply = await real.svc.gateway.agent_step(real.owner.id, messages, TOOL_SPECS)
    assert reply.text or reply.tool_calls
    await _every_call_was_accepted_bounded_and_read(real)


def _purposes(older: int) -> list[tuple[type[Answer], list[dict[str, Any]]]]:
    """Each memory-model purpose with the prompt its module writes (its own instructions, a realistic input)."""
    notes = ["people/sister-seeded: Sister: Ana, lives in Porto"]
    return [
        (selection.EvidenceChoice, [{"role": "system", "content": selection.SELECT}, {"role": "user", "content": json.dumps(
            {"now": "Thursday 2026-12-03 09:00", "time_zone": "Europe/Lisbon", "recent": [], "request": "Where does my sister live?",
             "notes": [{"path": "people/sister-seeded", "text": "Sister: Ana, lives in Porto"}]})}]),
        (selection.EvidenceRanking, [{"role": "system", "content": selection.RANK}, {"role": "user", "content": json.dumps(
            {"request": "Where does my sister live?", "notes": [{"path": "people/sister-seeded", "text": "Sister: Ana"}],
             "messages": [{"id": older, "sent_at": "2026-11-03T09:00", "role": "owner", "text": "My sister Ana moved to Porto"}]})}]),
        (reply_check.ReplyVerdict, [{"role": "system", "content": reply_check.INSTRUCTIONS}, {"role": "user", "content": json.dumps(
            {"request": "Where does my sister live?", "draft": "Your sister Ana lives in Porto.", "saved_notes": notes,
             "evidence": "people/sister-seeded (Confirmed): Sister: Ana, lives in Porto", "reads": [], "reads_omitted": 0})}]),
        (learn.LearnedNotes, [{"role": "system", "content": learn.INSTRUCTIONS}, {"role": "user", "content": json.dumps(
            {"memory_index": notes, "current_message": {"id": older + 1, "sent_at": "2026-12-03T09:00+00:00",
                                                        "text": "Remember that I'm allergic to peanuts"},
             "earlier_messages": []})}]),
        (trust.TrustVerdict, [{"role": "system", "content": trust.TRUST_INSTRUCTIONS},
                                {"role": "user", "content": "Action: memory_forget people/peanuts\nOwner's message: Forget the peanut thing"}]),
        (Reflection, [{"role": "system", "content": reflect.INSTRUCTIONS}, {"role": "user", "content": json.dumps(
            {"memory_index": notes, "messages": [{"id": older, "sent_at": "Monday 2026-11-03 09:00",
                                                  "text": "My sister Ana moved to Porto last year"}]})}]),
        (Digest, [{"role": "system", "content": digests.INSTRUCTIONS},
                            {"role": "user", "content": json.dumps({"notes": notes})}]),
        (learned.SkillRewrite, [{"role": "system", "content": learned.INSTRUCTIONS}, {"role": "user", "content": json.dumps(
            {"name": "book-train", "description": "Book a train on CP", "body": "1. Open cp.pt. 2. Pick the date."})}]),
        (style.WritingStyle, style._prompt(Samples(("Hi Rui, thanks! See you Friday. M.",), 0, ()), None)),
    ]


async def test_every_memory_model_purpose_is_accepted_and_parsed_or_cleanly_dropped(real: Real) -> None:
    older = await _seeded(real)
    for answer, prompt in _purposes(older):
        try:
            await real.svc.gateway.ask(real.owner.id, answer, prompt)
        except (UnreadableAnswer, AnswerCut):
            pass  # cleanly dropped: counted "unreadable" or "cut", never an exception past the caller
    purposes = {row.purpose for row in await real.usage_rows()}
    assert purposes == {"evidence_selection", "reply_check", "memory_learn", "trust_check", "reflect", "digest",
                        "skill_rewrite", "writing_style"}
    await _every_call_was_accepted_bounded_and_read(real)


async def test_saving_forgetting_skills_and_reflection_through_their_real_paths(real: Real) -> None:
    said = (await real.svc.messages.append(Message(real.owner.id, Role.OWNER, "Remember that my boat is called Gaivota",
                                                     "local", NOW))).message
    ctx = await real.context(said)
    tools = real.svc.turn.tools
    await tools.run(ctx, ToolCall("c1", "manage_personal_context", json.dumps({"action": "memory_learn", "message_ids": None})))
    await tools.run(ctx, ToolCall("c2", "manage_personal_context", json.dumps({"action": "memory_forget", "path": "about/boat"})))
    await tools.run(ctx, ToolCall("c3", "skills", json.dumps({"action": "save", "name": "book-train", "description": "Book a "
                                                               "train on CP", "body": "1. Open cp.pt. 2. Pick the date."})))
    forwarded = (await real.svc.messages.append(Message(real.owner.id, Role.OWNER, "Rui: my new number is 912 000 000",
                                                          "local", NOW - timedelta(hours=2), forwarded=True))).message
    await real.svc.messages.append(Message(real.owner.id, Role.OWNER, "I started learning the cello last month",
                                              "local", NOW - timedelta(hours=1)))
    await real.svc.maintenance.run()
    doc = (await real.svc.memory.load(real.owner.id)).document
    assert not any(forwarded.id in e.source_ids for e in doc.entries)  # a forwarded message is never a source
    await _nothing_invented_is_saved(real)
    await _every_call_was_accepted_bounded_and_read(real)


async def test_json_object_chosen_by_setting_is_accepted_from_the_first_call(tmp_path: Any, proxy: Any) -> None:
    async for real in make_real(tmp_path, proxy, json_mode="json_object"):
        await _seeded(real)
        await Digests(real.svc.gateway, real.svc.spending, real.svc.memory).memory(real.owner)
        assert all(200 <= s.status < 300 for s in proxy.seen) and proxy.seen[0].json_mode == "json_object"
        await _every_call_was_accepted_bounded_and_read(real)
