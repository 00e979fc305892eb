"""The read-only agent tools — memory_read, memory_find, history_search — defined once.

Each tool is its arguments' pydantic model (the JSON schema the model receives and the
check of what it sends, ``core.structured``), a description, and a handler. ``ReadTools``
runs them for the agent's turn and for ``nod tool``: a tool takes the owner and the
arguments and returns a JSON-ready dict, and never raises to its caller — a refusal or a
bad argument is ``{"error": sentence}`` the model can act on (the pi-mono agent-loop
rule), and so is a failure nobody foresaw. Within a turn, the memory document comes from
the turn's snapshot; ``nod tool`` reads it itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from core.errors import NodError
from core.history.request import MAX_LIMIT
from core.history.search import HistorySearch
from core.memory.model import MemoryDocument
from core.memory.reading import memory_find, memory_read
from core.owner import Owner
from core.ports import MemoryRepository, Messages
from core.structured import Arguments, parse_arguments

log = logging.getLogger("nod.tools")


class MemoryReadArguments(Arguments):
    path: str = Field(description="An area (about, preferences, people, routines, lessons) or area/slug.")


class MemoryFindArguments(Arguments):
    words: str = Field(description="Words to look for, in any word form.")


class HistorySearchArguments(Arguments):
    query: str | None = Field(None, description="Words to search for; any of them matches, in any form.")
    start: str | None = Field(None, alias="from", description="First day (YYYY-MM-DD, the owner's zone), inclusive.")
    to: str | None = Field(None, description="Last day (YYYY-MM-DD), inclusive.")
    around: int | None = Field(None, description="A message id: that message and five on each side.")
    before: str | None = Field(None, description="Only messages sent before this date.")
    order: Literal["relevance", "newest"] | None = None
    cursor: str | None = Field(None, description="nextCursor of the previous page, with the same query, dates and order.")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT)


@dataclass(frozen=True)
class ReadTool:
    name: str
    description: str
    arguments: type[Arguments]


READ_TOOLS: tuple[ReadTool, ...] = (
    ReadTool("memory_read", "Read memory: an area (about, preferences, people, routines, lessons) lists its "
             "entries; area/slug shows one entry in full with its sources.", MemoryReadArguments),
    ReadTool("memory_find", "Find saved notes by words (any word form) in their slug, abstract and text.",
             MemoryFindArguments),
    ReadTool("history_search", "Search the whole active conversation, the owner's and Nod's messages. "
             "query matches any of its words; from/to (dates in the owner's zone, inclusive) filter or, "
             "alone, list a period; around=message id shows it with five messages each side; before=date; "
             "order relevance|newest; continue with cursor=nextCursor and the same query, dates and order.",
             HistorySearchArguments),
)
READ_TOOL_NAMES = tuple(tool.name for tool in READ_TOOLS)
_BY_NAME = {tool.name: tool for tool in READ_TOOLS}


@dataclass(frozen=True)
class ReadTools:
    memory: MemoryRepository
    messages: Messages
    history: HistorySearch

    async def run(self, owner: Owner, name: str, args: Any, document: MemoryDocument | None = None) -> dict[str, Any]:
        """The tool's result, or ``{"error": sentence}``; never an exception."""
        tool = _BY_NAME.get(name)
        if tool is None:
            return {"error": f"There is no tool {name!r}; the read-only tools are {', '.join(READ_TOOL_NAMES)}."}
        handlers: dict[str, Callable[[Owner, Any, MemoryDocument | None], Awaitable[dict[str, Any]]]] = {
            "memory_read": self._memory_read, "memory_find": self._memory_find, "history_search": self._history_search,
        }
        try:
            return await handlers[name](owner, parse_arguments(tool.arguments, args, name), document)
        except NodError as exc:
            log.info("tool_refused owner=%s tool=%s reason=%s", owner.id, name, type(exc).__name__)
            return {"error": str(exc)}
        except Exception:  # a bug or a database failure still ends as a result, never a crash of the caller
            log.exception("tool_failed owner=%s tool=%s", owner.id, name)
            return {"error": f"{name} failed unexpectedly; try again or another way."}

    async def _document(self, owner: Owner, document: MemoryDocument | None) -> MemoryDocument:
        return document if document is not None else (await self.memory.load(owner.id)).document

    async def _memory_read(self, owner: Owner, args: MemoryReadArguments, document: MemoryDocument | None) -> dict[str, Any]:
        return await memory_read(await self._document(owner, document), args.path, owner.id, owner.zone, self.messages)

    async def _memory_find(self, owner: Owner, args: MemoryFindArguments, document: MemoryDocument | None) -> dict[str, Any]:
        return memory_find(await self._document(owner, document), args.words)

    async def _history_search(self, owner: Owner, args: HistorySearchArguments, document: MemoryDocument | None) -> dict[str, Any]:
        return await self.history.search(owner, args.model_dump(by_alias=True, exclude_none=True))
