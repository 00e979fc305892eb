"""history_search: the whole active conversation, searched, listed by period or around a message."""

from __future__ import annotations

from core.agent.turn_context import TurnContext
from core.history.request import HistorySearchArguments
from core.tools.tool import Access, Tool, ToolResult


class HistorySearchTool(Tool[HistorySearchArguments]):
    name = "history_search"
    description = ("Search the whole active conversation, the owner's and Nod's messages. "
                   "query matches any of its words; from/to (dates in the owner's zone, inclusive) filter or, "
                   "alone, list a period; around=message id shows it with five messages each side; before=date; "
                   "order relevance|newest; continue with cursor=nextCursor and the same query, dates and order.")
    arguments = HistorySearchArguments
    access = Access.READ

    async def run(self, ctx: TurnContext, args: HistorySearchArguments) -> ToolResult:
        return ToolResult(await self.services.history.search(ctx.owner, args))
