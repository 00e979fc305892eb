"""``nod chat``: talk to Nod in the terminal, through the same conductor as every channel.

Interactive, it keeps reading while a turn runs, so ``/stop`` can end it. Fed by a pipe
it reads one message a line and answers each before reading the next, so a script's
transcript is deterministic. ``/memory`` and ``/context`` print a digest without an
agent turn; ``/reset`` starts a new conversation (memory stays); ``/quit`` or the end of
input leaves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO

from core.agent.conductor import Conductor, Inbound
from core.memory.digest import context_digest, memory_digest
from core.storage.memory_store import MemoryStore
from core.storage.messages import MessageStore
from core.storage.owners import Owner

CHANNEL = "local"
HELP = "Commands: /memory, /context, /reset, /stop, /quit."


class TerminalSink:
    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def deliver(self, owner: Owner, channel: str, text: str) -> None:
        self._out.write(text.rstrip() + "\n\n")
        self._out.flush()


@dataclass
class LocalChat:
    owner: Owner
    conductor: Conductor
    messages: MessageStore
    memory: MemoryStore
    out: TextIO

    def _say(self, text: str) -> None:
        self.out.write(text.rstrip() + "\n\n")
        self.out.flush()

    async def _command(self, line: str) -> bool:
        """Handle a slash command; False when the chat should end."""
        word = line.split()[0].lower()
        actions: dict[str, Callable[[], Awaitable[str]]] = {
            "/memory": self._memory,
            "/context": self._context,
            "/reset": self._reset,
            "/stop": self._stop,
            "/help": _help,
            "/start": _help,
        }
        if word == "/quit":
            return False
        action = actions.get(word)
        self._say(await action() if action else f"Unknown command {word}. {HELP}")
        return True

    async def _memory(self) -> str:
        return memory_digest((await self.memory.load(self.owner.id)).document)

    async def _context(self) -> str:
        return context_digest((await self.memory.load(self.owner.id)).document)

    async def _reset(self) -> str:
        await self.conductor.stop(self.owner.id)
        await self.messages.reset_thread(self.owner.id)
        return "Started a new conversation. Your memory is kept."

    async def _stop(self) -> str:
        return "Stopped." if await self.conductor.stop(self.owner.id) else "Nothing is running."

    async def handle(self, line: str, wait: bool) -> bool:
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            return await self._command(text)
        await self.conductor.receive(Inbound(self.owner, CHANNEL, text))
        if wait:
            await self.conductor.wait(self.owner.id)
        return True

    async def run(self, lines: TextIO, interactive: bool) -> None:
        loop = asyncio.get_running_loop()
        if interactive:
            self._say(f"Talking to Nod as {self.owner.name}. {HELP}")
        while True:
            line = await loop.run_in_executor(None, lines.readline)
            if not line:
                break
            if not await self.handle(line, wait=not interactive):
                await self.conductor.close()  # /quit: a turn still running is stopped
                return
        await self.conductor.wait(self.owner.id)  # end of input: let the last answer arrive


async def _help() -> str:
    return f"I'm Nod. Write to me as you would to a person. {HELP}"
