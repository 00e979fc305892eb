"""``nod schedules list|cancel``: an owner's reminders and scheduled tasks, for operators and scripts."""

from __future__ import annotations

import json

from bot.wiring import Services
from core.errors import NotFound
from core.schedules.tool import described


async def schedules_list(svc: Services, owner_name: str, as_json: bool) -> str:
    owner = await svc.owners.by_name(owner_name)
    coming = [described(s, owner.time_zone) for s in await svc.schedules.active(owner.id)]
    if as_json:
        return json.dumps({"owner": owner.name, "schedules": coming}, ensure_ascii=False, indent=2)
    if not coming:
        return f"{owner.name} has no reminders or scheduled tasks."
    return "\n".join(f"#{c['id']}  {c['next_run']}  {c['kind']}{' (repeats ' + c['repeat'] + ')' if c['repeat'] else ''}"
                     f"  {c['text']}" for c in coming)


async def schedules_cancel(svc: Services, owner_name: str, schedule_id: int, as_json: bool) -> str:
    owner = await svc.owners.by_name(owner_name)
    cancelled = await svc.schedules.cancel(owner.id, schedule_id, svc.clock.now())
    if cancelled is None:
        raise NotFound(f"{owner.name} has no active schedule {schedule_id}.")
    return json.dumps({"cancelled": schedule_id}) if as_json else f"Cancelled #{schedule_id}: {cancelled.text}"
