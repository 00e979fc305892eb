"""The agent's ``schedules`` tool: create, list and cancel the owner's reminders and tasks.

Creating or cancelling one changes what Nod will do later on its own, so, like forgetting a
note, it needs the owner's own words: a turn started by an owner message whose stored text
asks for it (``core.saving.trust``). Text from a search result, a tool result, a forwarded
message or Nod's own reply never makes one; a refusal tells the agent to ask the owner
first. ``at`` is a local date-time in the owner's zone; the result says the next run the
way a person would ("Sunday 7 December, 19:00 Lisbon time") for the agent to confirm.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext, TurnOrigin
from core.errors import InvalidInput
from core.ports import Messages, Schedules
from core.saving.trust import owner_asks
from core.schedules.model import (
    MAX_TEXT_CHARS,
    Kind,
    Schedule,
    check_repeat,
    local_to_utc,
    occurrences_after,
    parse_rule,
    spoken_time,
)
from core.secrets import contains_secret
from core.structured import Arguments
from core.text import stems

log = logging.getLogger("nod.schedules")
CREATE_WORDS = {"remind", "reminder", "reminders", "schedule", "scheduled", "every", "daily", "weekly", "monthly",
                "alarm", "alert", "ping", "nudge", "notify", "tell", "wake", "lembra", "lembrete", "recuerda", "recuérdame"}
CANCEL_WORDS = {"cancel", "stop", "delete", "remove", "drop", "don't", "dont", "never", "forget", "unschedule", "off"}
# without a memory model the words alone decide: only unmistakable ones, and a word of the schedule's text too
STRICT_CREATE_WORDS = {"remind", "reminder", "schedule", "alarm", "lembra", "lembrete", "recuerda", "recuérdame"}
STRICT_CANCEL_WORDS = {"cancel", "delete", "remove", "unschedule"}
MAX_PER_MESSAGE = 3  # schedules one owner message may make
ASK_FIRST = "The owner's current message does not ask for this. Ask the owner first; nothing was changed."
RULE_DEADLINE_S = 2.0
PAST_GRACE = timedelta(minutes=1)  # "at 9:00" said at 9:00:30 still means now


class SchedulesArguments(Arguments):
    action: Literal["create", "list", "cancel"]
    kind: Literal["reminder", "task"] | None = Field(
        None, description="create: reminder (the text is sent as written) or task (you run the text as an instruction then).")
    text: str | None = Field(None, description="create: what to remind of, or the task's instruction; up to 1,000 characters.")
    at: str | None = Field(None, description="create: ISO 8601 local date-time in the owner's time zone, e.g. 2026-12-07T09:00.")
    repeat: str | None = Field(None, description="create: an RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=SU;BYHOUR=19;BYMINUTE=0; "
                                                 "omit for once. At most every 15 minutes.")
    id: int | None = Field(None, description="cancel: the schedule's id, from list.")


class ScheduleCreateAction(Arguments):
    """What the model is shown for create (one strict object per action, DESIGN.md)."""

    action: Literal["create"]
    kind: Literal["reminder", "task"] = Field(description="reminder: the text is sent as written; task: you run it then.")
    text: str = Field(description="What to remind of, or the task's instruction; up to 1,000 characters.")
    at: str = Field(description="ISO 8601 local date-time in the owner's time zone, e.g. 2026-12-07T09:00.")
    repeat: str | None = Field(description="An RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=SU; null for once.")


class ScheduleListAction(Arguments):
    action: Literal["list"]


class ScheduleCancelAction(Arguments):
    action: Literal["cancel"]
    id: int = Field(description="The schedule's id, from list.")


def described(schedule: Schedule, zone_name: str) -> dict[str, Any]:
    """A schedule as the agent, /reminders and the page show it."""
    zone = ZoneInfo(zone_name)
    return {"id": schedule.id, "kind": schedule.kind.value, "text": schedule.text,
            "next_run": spoken_time(schedule.next_run_at, zone) if schedule.next_run_at else None,
            "repeat": schedule.repeat}


class ScheduleTool:
    def __init__(self, schedules: Schedules, messages: Messages, gateway: Gateway) -> None:
        self._schedules = schedules
        self._messages = messages
        self._gateway = gateway

    async def handle(self, ctx: TurnContext, args: SchedulesArguments, now: datetime) -> dict[str, Any]:
        if args.action == "list":
            return {"schedules": [described(s, ctx.owner.time_zone) for s in await self._schedules.active(ctx.owner.id)]}
        said = await self._owner_words(ctx)
        if said is None:
            return {"error": f"schedules {args.action} only runs in a turn started by the owner's message; nothing was changed."}
        if args.action == "cancel":
            return await self._cancel(ctx, args, said, now)
        return await self._create(ctx, args, said, now)

    async def _owner_words(self, ctx: TurnContext) -> str | None:
        if ctx.origin is not TurnOrigin.OWNER_MESSAGE or ctx.request_id is None:
            return None
        message = await self._messages.get(ctx.request_id)
        if message is None or message.owner_id != ctx.owner.id or message.forwarded or message.card_title:
            return None
        return message.text

    async def _create(self, ctx: TurnContext, args: SchedulesArguments, said: str, now: datetime) -> dict[str, Any]:
        kind, text, start = self._checked(ctx, args, now)
        made_now = [s for s in await self._schedules.active(ctx.owner.id) if s.created_from == ctx.request_id]
        if len(made_now) >= MAX_PER_MESSAGE:
            raise InvalidInput(f"One message may set up at most {MAX_PER_MESSAGE} reminders or tasks.")
        when = spoken_time(local_to_utc(start, ctx.owner.zone), ctx.owner.zone)
        action = f"create a {kind.value} at {when}" + (f", repeating {args.repeat}" if args.repeat else "") + f": {text}"
        if not await self._asks(ctx, said, action, text, CREATE_WORDS, STRICT_CREATE_WORDS):
            return {"error": ASK_FIRST, "ask_owner": True}
        if args.repeat is not None:  # the calendar work off the event loop, and bounded in time
            try:
                await asyncio.wait_for(asyncio.to_thread(check_repeat, start, args.repeat, ctx.owner.zone, now), RULE_DEADLINE_S)
            except TimeoutError:
                raise InvalidInput("That repeat takes too long to work out; use a simpler rule.") from None
        first = occurrences_after(start, args.repeat, ctx.owner.zone, now - PAST_GRACE)
        if not first:
            raise InvalidInput(f"That time has passed: it is now {spoken_time(now, ctx.owner.zone)}.")
        made = await self._schedules.create(ctx.owner.id, kind, text, start, args.repeat, first[0], now, ctx.request_id)
        log.info("schedule_created owner=%s schedule=%s kind=%s repeat=%s", ctx.owner.id, made.id, kind.value,
                 args.repeat is not None)
        return {**described(made, ctx.owner.time_zone), "note": "Confirm this time to the owner in your reply."}

    def _checked(self, ctx: TurnContext, args: SchedulesArguments, now: datetime) -> tuple[Kind, str, datetime]:
        if args.kind is None or not args.text or not args.text.strip() or not args.at:
            raise InvalidInput("schedules create needs kind, text and at.")
        text = args.text.strip()
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInput(f"The text may be at most {MAX_TEXT_CHARS:,} characters.")
        if contains_secret(text):
            raise InvalidInput("The text holds something that looks like a secret; Nod does not keep those.")
        try:
            start = datetime.fromisoformat(args.at)
        except ValueError:
            raise InvalidInput("at must be an ISO 8601 local date-time, e.g. 2026-12-07T09:00.") from None
        if start.tzinfo is not None:  # an offset given: read as that moment, kept as the owner's wall time
            start = start.astimezone(ctx.owner.zone).replace(tzinfo=None)
        if args.repeat is not None:
            parse_rule(args.repeat, start, ctx.owner.zone)  # its form: cheap; its calendar is checked after the trust check
        elif local_to_utc(start, ctx.owner.zone) < now - PAST_GRACE:
            raise InvalidInput(f"That time has passed: it is now {spoken_time(now, ctx.owner.zone)}.")
        return Kind(args.kind), text, start

    async def _asks(self, ctx: TurnContext, said: str, action: str, text: str, words: set[str], strict: set[str]) -> bool:
        """The trust check; without a memory model, only unmistakable words that also name the schedule."""
        if self._gateway.memory_configured:
            return await owner_asks(self._gateway, ctx.owner.id, said, action, words)
        return bool(stems(said) & stems(text)) and await owner_asks(self._gateway, ctx.owner.id, said, action, strict)

    async def _cancel(self, ctx: TurnContext, args: SchedulesArguments, said: str, now: datetime) -> dict[str, Any]:
        if args.id is None:
            raise InvalidInput("schedules cancel needs the id, from schedules list.")
        mine = {s.id: s for s in await self._schedules.active(ctx.owner.id)}
        if args.id not in mine:
            raise InvalidInput(f"There is no active schedule {args.id}; list them first.")
        target = mine[args.id]
        if not await self._asks(ctx, said, f"cancel the {target.kind.value}: {target.text}", target.text,
                                CANCEL_WORDS, STRICT_CANCEL_WORDS):
            return {"error": ASK_FIRST, "ask_owner": True}
        await self._schedules.cancel(ctx.owner.id, args.id, now)
        log.info("schedule_cancelled owner=%s schedule=%s", ctx.owner.id, args.id)
        return {"cancelled": args.id}
