"""A scheduled task's run: the owner's instruction, answered by an agent turn of origin ``schedule``.

The instruction is not stored as an owner message — it was said when the task was made,
and is not something the owner says again now — so the turn gets it as its request with
no id (0): memory_learn, memory_forget and memory_control refuse a scheduled run (no owner
message), while reading memory and skills works, and a skill may be saved or patched
because the owner made the schedule. Spending limits and the reply check apply as in any
turn; a run past the limit answers with the one sentence the turn gives.
"""

from __future__ import annotations

from core.agent.turn import TurnDeps, run_turn
from core.agent.turn_context import TurnOrigin, begin
from core.message import Role, StoredMessage
from core.owner import Owner
from core.schedules.model import Schedule, spoken_time

INSTRUCTION = "(A scheduled task the owner set up on {made}; do it now and write the result for them.)\n{text}"


class ScheduledTasks:
    def __init__(self, deps: TurnDeps) -> None:
        self._deps = deps

    async def run(self, owner: Owner, schedule: Schedule) -> str:
        owner = await self._deps.owners.by_id(owner.id)  # spending and saving as they are now
        thread = await self._deps.messages.active_thread(owner.id)
        ctx = await begin(owner, TurnOrigin.SCHEDULE, thread, None, self._deps.memory, self._deps.spending)
        text = INSTRUCTION.format(made=spoken_time(schedule.created_at, owner.zone), text=schedule.text)
        request = StoredMessage(owner.id, Role.OWNER, text, "schedule", self._deps.clock.now(),
                                origin=TurnOrigin.SCHEDULE.value, id=0, thread_id=thread, secret=False)
        outcome = await run_turn(self._deps, ctx, request)
        return outcome.reply.bounded().text_form()
