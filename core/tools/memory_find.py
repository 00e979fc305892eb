"""memory_find: saved notes sharing words with the query, in any word form."""

from __future__ import annotations

from pydantic import Field

from core.agent.turn_context import TurnContext
from core.memory.lookup import memory_find
from core.structured import Arguments
from core.tools.tool import Access, Tool, ToolResult


class MemoryFindArguments(Arguments):
    words: str = Field(description="Words to look for, in any word form.")


class MemoryFind(Tool[MemoryFindArguments]):
    name = "memory_find"
    description = "Find saved notes by words (any word form) in their slug, abstract and text."
    arguments = MemoryFindArguments
    access = Access.READ

    async def run(self, ctx: TurnContext, args: MemoryFindArguments) -> ToolResult:
        return ToolResult(memory_find(ctx.document, args.words))
