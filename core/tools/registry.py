"""The one tool registry: every tool the agent is offered, and the toolbox that answers their calls.

Adding a tool is its file and one line in ``TOOLS``. Every call carries the turn's context —
who the owner is, what started the turn, which owner message it answers, the turn's memory
snapshot — because the saving rules depend on it. A call never raises into the loop: bad
JSON, a bad argument, a refusal or a bug becomes ``{"error": sentence}`` for the model.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core.agent.chat import ToolCall, ToolSpec
from core.agent.spending import Capacity
from core.agent.turn_context import TurnContext, TurnOrigin, TurnState
from core.errors import NodError
from core.owner import Owner
from core.tools.history_search import HistorySearchTool
from core.tools.manage_personal_context import ManagePersonalContext
from core.tools.memory_find import MemoryFind
from core.tools.memory_read import MemoryRead
from core.tools.offer_choices import OfferChoices
from core.tools.schedules import Schedules
from core.tools.services import ToolServices
from core.tools.skills import Skills
from core.tools.tool import Access, Tool, ToolOutcome

log = logging.getLogger("nod.tools")

TOOLS: tuple[type[Tool[Any]], ...] = (
    MemoryRead, MemoryFind, HistorySearchTool, ManagePersonalContext, Skills, Schedules, OfferChoices,
)
TOOL_SPECS: tuple[ToolSpec, ...] = tuple(tool.spec() for tool in TOOLS)
TOOL_NAMES = tuple(tool.name for tool in TOOLS)
READ_TOOL_NAMES = tuple(tool.name for tool in TOOLS if tool.access is Access.READ)


class Toolbox:
    """Each tool built once; ``run`` answers the agent, ``read_for_operator`` answers ``nod tool``."""

    def __init__(self, services: ToolServices) -> None:
        self._services = services
        self._tools = {cls.name: cls(services) for cls in TOOLS}

    async def run(self, ctx: TurnContext, call: ToolCall) -> ToolOutcome:
        try:
            raw = json.loads(call.arguments or "{}")
        except ValueError:
            return ToolOutcome(call.name, {}, {"error": "The arguments were not valid JSON; send a JSON object."})
        if not isinstance(raw, dict):
            return ToolOutcome(call.name, {}, {"error": "The arguments must be a JSON object."})
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome(call.name, raw, {"error": f"There is no tool {call.name!r}; the tools are {', '.join(TOOL_NAMES)}."})
        return await self._answer(ctx, tool, raw)

    async def read_for_operator(self, owner: Owner, name: str, raw: Any) -> dict[str, Any]:
        """One read-only tool call as the agent makes it, on the owner's stored memory; never an exception."""
        tool = self._tools.get(name)
        if tool is None or tool.access is not Access.READ:
            return {"error": f"There is no tool {name!r}; the read-only tools are {', '.join(READ_TOOL_NAMES)}."}
        if not isinstance(raw, dict):
            return {"error": f"{name} takes a JSON object of arguments."}
        memory = await self._services.memory.load(owner.id)
        thread_id = await self._services.messages.active_thread(owner.id)
        ctx = TurnContext(owner, TurnOrigin.OPERATOR, thread_id, None, TurnState(memory, Capacity(0.0, None)))
        return (await self._answer(ctx, tool, raw)).result

    async def _answer(self, ctx: TurnContext, tool: Tool[Any], raw: dict[str, Any]) -> ToolOutcome:
        try:
            result = await tool.run(ctx, tool.parse(raw))
        except NodError as exc:
            log.info("tool_refused owner=%s tool=%s reason=%s", ctx.owner.id, tool.name, type(exc).__name__)
            return ToolOutcome(tool.name, raw, {"error": str(exc)})
        except Exception:  # a tool bug or a database failure becomes a result the model can route around
            log.exception("tool_failed owner=%s tool=%s", ctx.owner.id, tool.name)
            return ToolOutcome(tool.name, raw, {"error": f"{tool.name} failed unexpectedly; try again or another way."})
        return ToolOutcome(tool.name, raw, result.data, result.untrusted)
