"""memory_forget and memory_control: destructive actions that need the owner's own words.

Both run only in work the owner started and pass the trust check (``core.saving.trust``) on
the stored current message before anything changes; memory_control also needs that message
quoted whole. Whatever fails is not done: the agent is told to ask the owner first. Which
origins may run which action: docs/memory.md (How saving works).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext, TurnOrigin
from core.memory import document as ops
from core.memory.quotes import normalized
from core.memory.values import MemoryDocument
from core.ports import MemoryRepository, Messages, Owners
from core.saving.trust import owner_asks
from core.text import stems

log = logging.getLogger("nod.saving")
ASK_FIRST = "The owner's current message does not ask for this. Ask the owner first; nothing was changed."


VERBS = {
    "forget": {"forget", "delete", "remove", "erase", "drop", "wipe", "esquece", "olvida"},
    "stop": {"stop", "pause", "don't", "dont", "never", "quit", "disable", "off"},
    "resume": {"resume", "start", "restart", "continue", "enable", "on"},
    "clear": {"clear", "wipe", "erase", "delete", "forget", "reset"},
}


class Controls:
    def __init__(self, gateway: Gateway, messages: Messages, memory: MemoryRepository, owners: Owners) -> None:
        self._gateway = gateway
        self._messages = messages
        self._memory = memory
        self._owners = owners

    async def _current_text(self, ctx: TurnContext) -> str | None:
        if ctx.request_id is None:
            return None
        message = await self._messages.get(ctx.request_id)
        if message is None or message.owner_id != ctx.owner.id:
            return None
        return message.text

    async def _trusted(self, ctx: TurnContext, said: str, action: str, verb: str, note_words: str = "") -> bool:
        if note_words and not stems(said) & stems(note_words):
            return False
        return await owner_asks(self._gateway, ctx.owner.id, said, action, VERBS[verb])

    async def forget(self, ctx: TurnContext, path: str | None) -> dict[str, Any]:
        if ctx.origin is not TurnOrigin.OWNER_MESSAGE:
            return {"error": "memory_forget only runs in a turn started by an owner message; nothing was deleted."}
        if not path:
            return {"error": "memory_forget needs the path of the note to forget."}
        entry = ctx.document.get(path)
        if entry is None:
            return {"error": f"No note at {path}; nothing was deleted."}
        said = await self._current_text(ctx)
        about = f"{entry.slug.replace('-', ' ')} {entry.text}"
        if said is None or not await self._trusted(ctx, said, f"forget the note {path}: {entry.text}", "forget", about):
            return {"error": ASK_FIRST, "ask_owner": True}
        ctx.state.saved(await self._memory.update(ctx.owner.id, lambda d: ops.forget(d, path) if d.get(path) else d))
        log.info("memory_forget owner=%s path=%s", ctx.owner.id, path)
        return {"forgotten": path}

    async def control(self, ctx: TurnContext, command: str | None, quote: str | None) -> dict[str, Any]:
        if command not in ("stop", "resume", "clear"):
            return {"error": "memory_control needs command: stop, resume or clear."}
        allowed = (TurnOrigin.OWNER_MESSAGE,) if command == "clear" else (TurnOrigin.OWNER_MESSAGE, TurnOrigin.TASK)
        if ctx.origin not in allowed:
            return {"error": f"memory_control {command} needs work the owner started; nothing was changed."}
        said = await self._current_text(ctx)
        if said is None or quote is None or normalized(quote) != normalized(said):
            return {"error": "memory_control needs the owner's complete current message, quoted exactly; nothing was changed."}
        if not await self._trusted(ctx, said, f"{command} memory", command):
            return {"error": ASK_FIRST, "ask_owner": True}
        if command == "clear":
            ctx.state.saved(await self._memory.update(ctx.owner.id, lambda d: MemoryDocument(maintenance=d.maintenance)))
        else:
            await self._owners.update_settings(ctx.owner.id, lambda now: replace(now, saving_enabled=command == "resume"))
        log.info("memory_control owner=%s command=%s", ctx.owner.id, command)
        return {"done": command}
