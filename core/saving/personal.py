"""manage_personal_context: the agent's one door to saving, forgetting and controlling memory.

The agent never writes a note: each action hands the server the agent's arguments, and
the server reads the owner's own messages and applies its own rules (learn.py,
control.py). The result goes back to the agent only; nothing is posted to the owner, so
saves are silent on every channel.
"""

from __future__ import annotations

from typing import Any

from core.agent.turn_context import TurnContext
from core.saving.control import Controls
from core.saving.learn import Learner


class ManagePersonalContext:
    def __init__(self, learner: Learner, controls: Controls) -> None:
        self._learner = learner
        self._controls = controls

    async def handle(self, ctx: TurnContext, args: dict[str, Any]) -> dict[str, Any]:
        action = args.get("action")
        if action == "memory_learn":
            return await self._learner.learn(ctx, args)
        if action == "memory_forget":
            return await self._controls.forget(ctx, args)
        if action == "memory_control":
            return await self._controls.control(ctx, args)
        return {"error": "action must be memory_learn, memory_forget or memory_control."}
