"""Evidence selection and the reply check, through the scripted model server."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from core.agent.prompt import CONTEXT_CLOSE
from core.agent.turn_context import TurnOrigin
from core.memory import document as ops
from core.memory.values import Evidence, Origin
from core.message import Message, Role
from tests.fakes.model_server import Answer, FakeModelServer, structured, text, tool
from tests.integration.harness import AGENT, MEMORY, START, Harness, make_harness


def select(notes: list[str], searches: list[str], totals: bool = False, dates: tuple[str | None, str | None] = (None, None)) -> Answer:
    asked = [{"query": q, "from": dates[0], "to": dates[1]} for q in searches]
    return structured({"notes": notes, "searches": asked, "totals": totals})


def rank(notes: list[str], messages: list[int]) -> Answer:
    return structured({"notes": notes, "messages": messages})


async def _setup(nod: Harness, count: int = 3, words: str = "We stayed at the river hotel in Porto") -> list[int]:
    note = ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=START,
                          evidence=(Evidence(1, "Ana lives in Porto"),))
    await nod.svc.memory.update(nod.owner.id, lambda d: ops.add_entry(d, note))
    ids = []
    for i in range(count):
        stored = await nod.svc.messages.append(
            Message(nod.owner.id, Role.OWNER, f"{words} (trip {i})", "local", START - timedelta(days=count - i)))
        ids.append(stored.message.id)
    return ids


def _packet(nod: Harness) -> str:
    """The packet as the agent got it: in the labelled context block of the final user message."""
    body = nod.server.calls()[0]["messages"]
    assert [m["role"] for m in body].count("system") == 1
    final = body[-1]["content"]
    if "Evidence selected for this request:" not in final:
        return ""
    return final.split("Evidence selected for this request:\n", 1)[1].split(CONTEXT_CLOSE, 1)[0]


async def test_only_supplied_paths_and_ids_reach_the_packet(nod: Harness) -> None:
    ids = await _setup(nod)
    nod.server.enqueue(MEMORY, select(["people/sister", "people/ghost"], ["river hotel"]),
                       rank(["people/sister", "people/ghost"], [ids[1], 999_999, ids[0]]), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, structured({"verdict": "keep", "text": ""}), purpose="reply_check")
    nod.server.enqueue(AGENT, text("You stayed at the river hotel."))
    await nod.say("Where did we stay in Porto?")
    packet = _packet(nod)
    assert "note people/sister (Confirmed): Sister: Ana, lives in Porto" in packet and "ghost" not in packet
    shown = [int(line.split("#")[1].split()[0]) for line in packet.splitlines() if line.startswith("- message #")]
    assert shown == [ids[1], ids[0]]  # supplied ids only, in the model's ranking order; 999999 dropped
    assert nod.server.calls()[-1]["messages"][-1]["content"].endswith("Where did we stay in Porto?")


async def test_twelve_records_for_a_question_and_a_hundred_for_totals(nod: Harness) -> None:
    ids = await _setup(nod, count=20)
    for totals, shown, marker in ((False, 11, "[9 more records"), (True, 20, None)):
        nod.server.enqueue(MEMORY, select(["people/sister"], ["river hotel"], totals), rank(["people/sister"], ids),
                           purpose="evidence_selection")
        nod.server.enqueue(MEMORY, structured({"verdict": "keep", "text": ""}), purpose="reply_check")
        nod.server.enqueue(AGENT, text("ok"))
        nod.server.requests.clear()
        await nod.say("How many hotel nights did we have?")
        packet = _packet(nod)
        assert packet.count("- message #") == shown and packet.count("- note ") == 1
        assert (marker in packet) if marker else "more records" not in packet


async def test_a_long_message_is_shortened_and_marked_and_a_small_window_gets_a_small_packet(tmp_path: Path, server: FakeModelServer) -> None:
    for tokens, limit in ((None, 1_200), (8_000, 300)):
        (tmp_path / str(tokens)).mkdir()
        async for nod in make_harness(tmp_path / str(tokens), server, agent_context_tokens=tokens):
            ids = await _setup(nod, count=1, words="river hotel " + "long story " * 200)
            server.enqueue(MEMORY, select([], ["river hotel"]), rank([], ids), purpose="evidence_selection")
            server.enqueue(MEMORY, structured({"verdict": "keep", "text": ""}), purpose="reply_check")
            server.enqueue(AGENT, text("ok"))
            server.requests.clear()
            await nod.say("Tell me about the river hotel")
            packet = _packet(nod)
            line = next(x for x in packet.splitlines() if x.startswith("- message"))
            assert f"history_search around={ids[0]}" in line and len(line) < limit + 200
            assert ("small context window" in packet) is (tokens is not None)


async def test_a_revision_is_delivered_and_a_failed_check_delivers_the_draft(nod: Harness) -> None:
    await _setup(nod)
    for check, delivered in ((structured({"verdict": "revise", "text": "Your sister Ana lives in Porto."}),
                              "Your sister Ana lives in Porto."),
                             (text("not json"), "Ana lives in Lisbon."),
                             (Answer(status=400), "Ana lives in Lisbon.")):
        nod.server.enqueue(MEMORY, select(["people/sister"], []), rank(["people/sister"], []), purpose="evidence_selection")
        nod.server.enqueue(MEMORY, check, purpose="reply_check")
        nod.server.enqueue(AGENT, text("Ana lives in Lisbon."))
        await nod.say("Where does my sister live?")
        assert nod.sink.sent[-1] == delivered
    assert len(nod.server.calls("reply_check")) == 3


async def test_a_timed_out_check_delivers_the_draft(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_deadline_s=0.5):
        await _setup(nod)
        server.enqueue(MEMORY, select(["people/sister"], []), rank(["people/sister"], []), purpose="evidence_selection")
        server.enqueue(MEMORY, structured({"verdict": "revise", "text": "late"}, delay_s=5, ignore_cancel=True),
                       purpose="reply_check")
        server.enqueue(AGENT, text("Ana lives in Porto."))
        await nod.say("Where does my sister live?")
        assert nod.sink.sent == ["Ana lives in Porto."]
        assert [r.outcome for r in await nod.usage_rows("reply_check")] == ["timeout"]


async def test_one_check_per_draft_and_a_new_request_clears_the_cache(nod: Harness) -> None:
    await _setup(nod)
    request = (await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "Where does Ana live?", "local", START))).message
    ctx = await nod.context(request)
    nod.server.enqueue(MEMORY, select(["people/sister"], []), rank(["people/sister"], []),
                       select(["people/sister"], []), rank(["people/sister"], []), purpose="evidence_selection")
    nod.server.enqueue(MEMORY, *[structured({"verdict": "revise", "text": "Porto."})] * 2, purpose="reply_check")
    deps = nod.svc.turn
    assert await deps.evidence.packet(ctx, request)
    assert [await deps.check.check(ctx, request, "Lisbon.", ()) for _ in range(3)] == ["Porto."] * 3
    assert len(nod.server.calls("reply_check")) == 1
    newer = (await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "And Ana?", "local", START))).message
    newer_ctx = await nod.context(newer)
    assert await deps.check.check(ctx, request, "Lisbon.", ()) == "Porto."  # still cached for the old request
    assert await deps.evidence.packet(newer_ctx, newer)
    assert await deps.check.check(ctx, request, "Lisbon.", ()) == "Lisbon."  # the old turn's cache is gone
    assert await deps.check.check(newer_ctx, newer, "Lisbon.", ()) == "Porto."
    assert len(nod.server.calls("reply_check")) == 2


async def test_no_memory_model_means_no_selection_and_no_check(tmp_path: Path, server: FakeModelServer) -> None:
    async for nod in make_harness(tmp_path, server, memory_model=None):
        await _setup(nod)
        server.enqueue(AGENT, text("Ana lives in Lisbon."))
        await nod.say("Where does my sister live?")
        assert nod.sink.sent == ["Ana lives in Lisbon."]
        assert [r["model"] for r in server.requests] == [AGENT] and _packet(nod) == ""


async def test_no_selection_outside_owner_messages_or_past_the_spending_limit(nod: Harness) -> None:
    from dataclasses import replace

    from core.agent.usage import UsageRecord

    await _setup(nod)
    await nod.svc.owners.update_settings(nod.owner.id, lambda now: replace(now, spending_limit_usd=1.0))
    await nod.svc.usage.record(UsageRecord(nod.owner.id, "agent", AGENT, 0, 0, 5.0, 1, "ok", START))
    request = (await nod.svc.messages.append(Message(nod.owner.id, Role.OWNER, "hi", "local", START))).message
    for origin in (TurnOrigin.OWNER_MESSAGE, TurnOrigin.EVENT):
        assert await nod.svc.turn.evidence.packet(await nod.context(request, origin), request) is None
    assert nod.server.requests == []


async def test_a_task_card_is_checked_in_its_text_form_and_a_revision_drops_the_buttons(nod: Harness) -> None:
    await _setup(nod)
    for check, delivered in ((structured({"verdict": "keep"}), ("Which visit?", ("Lisbon", "Porto"))),
                             (structured({"verdict": "revise", "text": "Ana lives in Porto; shall I plan a visit?"}),
                              ("Ana lives in Porto; shall I plan a visit?", ()))):
        nod.server.enqueue(MEMORY, select(["people/sister"], []), rank(["people/sister"], []), purpose="evidence_selection")
        nod.server.enqueue(MEMORY, check, purpose="reply_check")
        nod.server.enqueue(AGENT, tool("offer_choices", {"choices": ["Lisbon", "Porto"]}), text("Which visit?"))
        await nod.say("Plan a visit to my sister")
        last = nod.sink.replies[-1]
        assert (last.text, last.choices) == delivered
    checked = json.loads(nod.server.calls("reply_check")[0]["messages"][1]["content"])
    assert checked["draft"] == "Which visit?\n\n1. Lisbon\n2. Porto"
