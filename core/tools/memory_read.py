"""memory_read: an area's entries, or one entry in full with its sources."""

from __future__ import annotations

from pydantic import Field

from core.agent.turn_context import TurnContext
from core.memory.lookup import memory_read
from core.structured import Arguments
from core.tools.tool import Access, Tool, ToolResult


class MemoryReadArguments(Arguments):
    path: str = Field(description="An area (about, preferences, people, routines, lessons) or area/slug.")


class MemoryRead(Tool[MemoryReadArguments]):
    name = "memory_read"
    description = ("Read memory: an area (about, preferences, people, routines, lessons) lists its "
                   "entries; area/slug shows one entry in full with its sources.")
    arguments = MemoryReadArguments
    access = Access.READ

    async def run(self, ctx: TurnContext, args: MemoryReadArguments) -> ToolResult:
        owner = ctx.owner
        return ToolResult(await memory_read(ctx.document, args.path, owner.id, owner.zone, self.services.messages))
