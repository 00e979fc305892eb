"""``nod chat``: talk to Nod in the terminal, through the same conductor as every channel.

Interactive, it keeps reading while a turn runs, so ``/stop`` can end it. Fed by a pipe
it reads one message a line and answers each before reading the next, so a script's
transcript is deterministic. ``/memory`` and ``/context`` print a digest without an
agent turn; ``/reset`` starts a new conversation (memory stays); ``/quit`` or the end of
input leaves.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TextIO

from core.agent.conductor import Conductor, Inbound
from core.inbox.commands import HELP, OwnerCommands, command_name
from core.replies import Reply
from core.owner import Identity, Owner

CHANNEL = "local"


def _is_text(line: str) -> bool:
    """False for a line read with surrogateescape from bytes that are not UTF-8."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class TerminalSink:
    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self._out.write(reply.text_form().rstrip() + "\n\n")
        self._out.flush()


@dataclass
class LocalChat:
    owner: Owner
    conductor: Conductor
    commands: OwnerCommands
    out: TextIO

    def _say(self, text: str) -> None:
        self.out.write(text.rstrip() + "\n\n")
        self.out.flush()

    async def _command(self, line: str) -> bool:
        """Handle a slash command; False when the chat should end."""
        word = line.split()[0].lower()
        if word == "/quit":
            return False
        name = command_name(line)
        if name is None:
            self._say(f"Unknown command {word}. Type /quit to leave.\n\n{HELP}")
            return True
        self._say(await self.commands.run(self.owner, name))
        return True

    async def handle(self, line: str, wait: bool) -> bool:
        text = line.strip()
        if not text:
            return True
        if not _is_text(text):
            self._say("That line is not UTF-8 text, so I skipped it.")
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
            self._say(f"Talking to Nod as {self.owner.name}. Type /help for commands, /quit to leave.")
        while True:
            line = await loop.run_in_executor(None, lines.readline)
            if not line:
                break
            if not await self.handle(line, wait=not interactive):
                await self.conductor.close()  # /quit: a turn still running is stopped
                return
        await self.conductor.wait(self.owner.id)  # end of input: let the last answer arrive
