"""manage_personal_context: the agent's one door to saving, forgetting and controlling memory.

The agent never writes a note: each action hands the server the agent's arguments, and the
server reads the owner's own messages and applies its own rules (``core.saving``). The
result goes back to the agent only; nothing is posted to the owner, so saves are silent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.agent.turn_context import TurnContext
from core.structured import Arguments
from core.tools.tool import Tool, ToolResult


class ManagePersonalContextArguments(Arguments):
    """What every action validates against; the model is shown one strict object per action instead."""

    action: Literal["memory_learn", "memory_forget", "memory_control"]
    message_ids: list[int] | None = Field(None, description="memory_learn: older owner messages holding the fact.")
    path: str | None = Field(None, description="memory_forget: the note's area/slug.")
    quote: str | None = Field(None, description="memory_control: the owner's complete current message.")
    command: Literal["stop", "resume", "clear"] | None = None


class MemoryLearnAction(Arguments):
    action: Literal["memory_learn"]
    message_ids: list[int] | None = Field(None, description="Older owner messages holding the fact; null: the current one.")


class MemoryForgetAction(Arguments):
    action: Literal["memory_forget"]
    path: str = Field(description="The note's area/slug.")


class MemoryControlAction(Arguments):
    action: Literal["memory_control"]
    command: Literal["stop", "resume", "clear"]
    quote: str = Field(description="The owner's complete current message.")


class ManagePersonalContext(Tool[ManagePersonalContextArguments]):
    name = "manage_personal_context"
    description = ("Save or forget the owner's notes, or stop/resume/clear memory. "
                   "memory_learn: the server writes notes from the owner's own messages. "
                   "Saves are silent: never announce them.")
    arguments = ManagePersonalContextArguments
    actions = (MemoryLearnAction, MemoryForgetAction, MemoryControlAction)

    async def run(self, ctx: TurnContext, args: ManagePersonalContextArguments) -> ToolResult:
        if args.action == "memory_learn":
            return ToolResult(await self.services.learner.learn(ctx, args.message_ids))
        if args.action == "memory_forget":
            return ToolResult(await self.services.controls.forget(ctx, args.path))
        return ToolResult(await self.services.controls.control(ctx, args.command, args.quote))
