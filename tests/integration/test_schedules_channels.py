"""Reminders on the real channels (issue 41): the channel the owner used last, and WhatsApp's 24-hour window.

Outside the window Twilio refuses free-form messages (63016; the fake refuses them the same
way): the reminder goes to the owner's other channel, else through the operator's approved
template, else it is recorded undelivered and the owner hears of it at their next message.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from core.message import Message, Role
from core.owner import Identity
from core.schedules.model import Kind
from core.schedules.runner import Scheduler
from tests.fakes.model_server import FakeModelServer
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.twilio_server import FakeTwilioServer
from tests.integration.harness import START
from tests.integration.live import MAYA_TELEGRAM, MAYA_WHATSAPP, Live, make_live

DUE = datetime(2026, 12, 4, 9, 0, tzinfo=START.tzinfo)
RUI = "+351910000002"


async def _reminder(live: Live, owner_id: int, last: Identity) -> None:
    """A reminder due at DUE for an owner whose last message came from ``last``."""
    await live.nod.svc.messages.append(Message(owner_id, Role.OWNER, "hello", last.channel, START,
                                                  f"last-{owner_id}", address=last.external_id))
    await live.nod.svc.schedules.create(owner_id, Kind.REMINDER, "call the dentist", DUE.replace(tzinfo=None), None,
                                        DUE, START, None)


async def _tick(scheduler: Scheduler) -> int:
    claimed = await scheduler.tick()
    await scheduler.settle()
    return claimed


async def _fire(live: Live) -> int:
    live.nod.svc.clock.set(DUE)  # type: ignore[attr-defined]
    return await _tick(live.nod.svc.scheduler(live.running.sink))


async def test_a_reminder_goes_once_to_the_channel_used_last(live: Live, twilio: FakeTwilioServer) -> None:
    await _reminder(live, live.nod.owner.id, Identity("whatsapp", MAYA_WHATSAPP))
    assert await _fire(live) == 1 and await _fire(live) == 0
    assert twilio.bodies() == ["Reminder: call the dentist"] and live.telegram.of("sendMessage") == []


async def test_a_reminder_on_telegram(live: Live, twilio: FakeTwilioServer) -> None:
    await _reminder(live, live.nod.owner.id, Identity("telegram", str(MAYA_TELEGRAM)))
    assert await _fire(live) == 1 and await _fire(live) == 0
    assert live.telegram.texts() == ["Reminder: call the dentist"] and twilio.bodies() == []


async def test_outside_the_window_a_reminder_falls_back_to_telegram(live: Live, twilio: FakeTwilioServer) -> None:
    twilio.closed_windows.add(MAYA_WHATSAPP)
    await _reminder(live, live.nod.owner.id, Identity("whatsapp", MAYA_WHATSAPP))
    assert await _fire(live) == 1
    [sent] = live.telegram.texts()
    assert sent.startswith("(I couldn't reply where you wrote: WhatsApp only accepts") and sent.endswith("call the dentist")
    assert twilio.bodies() == []


async def test_outside_the_window_with_no_other_channel_the_template_carries_it(
        tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer, twilio: FakeTwilioServer) -> None:
    twilio.closed_windows.add(RUI)
    async for live in make_live(tmp_path, server, telegram, twilio, twilio_reminder_content_sid="HX0123456789"):
        rui = await live.nod.svc.owners.add("Rui", "Europe/Lisbon", (Identity("whatsapp", RUI),), START)
        await _reminder(live, rui.id, Identity("whatsapp", RUI))
        assert await _fire(live) == 1
        assert twilio.bodies() == ["Reminder: call the dentist"] and twilio.sent[0]["ContentSid"] == "HX0123456789"


async def test_outside_the_window_without_a_template_it_is_told_at_the_next_message(
        live: Live, server: FakeModelServer, twilio: FakeTwilioServer) -> None:
    twilio.closed_windows.add(RUI)
    rui = await live.nod.svc.owners.add("Rui", "Europe/Lisbon", (Identity("whatsapp", RUI),), START)
    await _reminder(live, rui.id, Identity("whatsapp", RUI))
    assert await _fire(live) == 1 and twilio.bodies() == []
    twilio.closed_windows.clear()  # Rui writes again: the window opens
    from tests.fakes.twilio_server import inbound_form

    status, _ = await live.post_whatsapp(inbound_form("SM9", RUI, "good morning"))
    assert status == 200
    told = await twilio.wait_for(1)
    assert "call the dentist" in told[0] and "could not be delivered" in told[0]
