"""The read-only agent tools: memory_read, memory_find and history_search.

A tool takes the owner and the JSON arguments the model wrote and returns a JSON-ready
dict. It never raises to its caller: a refusal or a bad argument comes back as
``{"error": "..."}``, a sentence the model can act on (the pi-mono agent-loop rule), so
neither the agent loop nor ``nod tool`` needs to know what can go wrong inside.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.errors import NodError
from core.history.search import HistorySearch
from core.memory.reading import memory_find, memory_read
from core.owner import Owner
from core.ports import MemoryRepository, Messages

READ_TOOLS = ("memory_read", "memory_find", "history_search")
log = logging.getLogger("nod.tools")


@dataclass(frozen=True)
class ReadTools:
    memory: MemoryRepository
    messages: Messages
    history: HistorySearch

    async def run(self, owner: Owner, name: str, args: Any) -> dict[str, Any]:
        """The tool's result, or ``{"error": sentence}``; never an exception."""
        table: dict[str, Callable[[Owner, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "memory_read": self._memory_read,
            "memory_find": self._memory_find,
            "history_search": self.history.search,
        }
        if name not in table:
            return {"error": f"There is no tool {name!r}; the read-only tools are {', '.join(READ_TOOLS)}."}
        if not isinstance(args, dict):
            return {"error": f"{name} takes a JSON object of arguments."}
        try:
            return await table[name](owner, args)
        except NodError as exc:
            log.info("tool_refused owner=%s tool=%s reason=%s", owner.id, name, type(exc).__name__)
            return {"error": str(exc)}
        except Exception:  # a bug or a database failure still ends as a result, never a crash of the caller
            log.exception("tool_failed owner=%s tool=%s", owner.id, name)
            return {"error": f"{name} failed unexpectedly; try again or another way."}

    async def _memory_read(self, owner: Owner, args: dict[str, Any]) -> dict[str, Any]:
        doc = (await self.memory.load(owner.id)).document
        return await memory_read(doc, args.get("path"), owner.id, owner.zone, self.messages)

    async def _memory_find(self, owner: Owner, args: dict[str, Any]) -> dict[str, Any]:
        doc = (await self.memory.load(owner.id)).document
        return memory_find(doc, args.get("words"))
