"""schedules: create, list and cancel the owner's reminders and tasks (rules in ``core.schedules.tool``)."""

from __future__ import annotations

from core.agent.turn_context import TurnContext
from core.schedules.tool import ScheduleCancelAction, ScheduleCreateAction, ScheduleListAction, SchedulesArguments
from core.tools.tool import Tool, ToolResult


class Schedules(Tool[SchedulesArguments]):
    name = "schedules"
    description = ("Reminders and scheduled tasks: the only way you can do anything at a later time. create: "
                   "kind reminder (text sent as written) or task (you run the text then), at (local time), optional "
                   "repeat (RRULE); confirm the time it returns in your reply. list: what is coming. cancel: by id. "
                   "Only when the owner's own message asks.")
    arguments = SchedulesArguments
    actions = (ScheduleCreateAction, ScheduleListAction, ScheduleCancelAction)

    async def run(self, ctx: TurnContext, args: SchedulesArguments) -> ToolResult:
        book = self.services.schedules
        if book is None:
            return ToolResult({"error": "Schedules are not available on this Nod."})
        return ToolResult(await book.handle(ctx, args, self.services.clock.now()))
