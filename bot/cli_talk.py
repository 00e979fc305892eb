"""The ``nod`` subcommands about talking, spending and upkeep: chat, usage, limits, maintenance."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace

from adapters.local.chat import CHANNEL, LocalChat, TerminalSink
from bot.wiring import Services
from core.agent.usage import day_start, month_start, render_usage
from core.errors import InvalidInput
from core.schedules.runner import advance


async def chat(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    front = svc.front_door(TerminalSink(sys.stdout))
    local = LocalChat(owner, front, sys.stdout)
    # bytes that are not UTF-8 arrive as surrogates, so one bad line is refused, not the session
    sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
    try:
        await front.recover((CHANNEL,), owner.id)  # a message a killed chat left unanswered
        await local.run(sys.stdin, interactive=sys.stdin.isatty())
    finally:
        await front.close()
    return ""


async def usage(svc: Services, owner_name: str, as_json: bool = False) -> str:
    owner = await svc.owners.by_name(owner_name)
    now = svc.clock.now()
    today = await svc.usage.by_purpose(owner.id, day_start(now, owner.zone))
    month = await svc.usage.by_purpose(owner.id, month_start(now, owner.zone))
    capacity = await svc.spending.capacity(owner)
    if as_json:
        return json.dumps({"owner": owner.name, "today": [asdict(t) for t in today], "month": [asdict(t) for t in month],
                           "month_cost_usd": sum(t.cost_usd for t in month), "limit_usd": capacity.limit_usd}, indent=2)
    return render_usage(today, month, capacity.limit_usd)


async def owners_set(svc: Services, name: str, spending_limit: str | None, tz: str | None = None) -> str:
    owner = await svc.owners.by_name(name)
    if tz is not None:
        await svc.owners.set_time_zone(owner.id, tz)
        moved = await svc.schedules.rezone(owner.id, tz, svc.clock.now(), advance)  # local times stay local
        if spending_limit is None:
            also = f"; {moved} reminder{'s' if moved != 1 else ''} and task{'s' if moved != 1 else ''} keep their local time" \
                if moved else ""
            return f"{owner.name}'s time zone is now {tz}{also}."
    if spending_limit is None:
        return f"{owner.name}: nothing to change (try --spending-limit USD or --tz ZONE)."
    if spending_limit.lower() == "default":
        limit = None
    else:
        try:
            limit = float(spending_limit)
        except ValueError:
            limit = -1.0
        if not limit > 0:
            raise InvalidInput(f"--spending-limit is a positive amount in US dollars or 'default', not {spending_limit!r}.")
    await svc.owners.update_settings(owner.id, lambda now: replace(now, spending_limit_usd=limit))
    shown = "the default" if limit is None else f"${limit:.2f} a month"
    return f"{owner.name}'s spending limit is now {shown}."


async def maintenance_run(svc: Services, owner_name: str | None) -> str:
    """One tick now; one line per owner. Nothing is posted to any chat."""
    ticks = await svc.maintenance.run(owner_name)
    return "\n".join(t.line() for t in ticks) or "No owners yet."
