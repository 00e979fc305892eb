"""``nod chat``: talk to Nod in the terminal, through the same front door as every channel.

The operator chose the owner (``--owner``), so the terminal is that owner's channel: what
is typed goes through the front door like a Telegram or WhatsApp message — slash commands
behave exactly as there, anything else is a message the agent answers — and only
``/quit`` is the terminal's own. Interactive, it keeps reading while a turn runs, so
``/stop`` can end it. Fed by a pipe it reads one message a line and answers each before
reading the next, so a script's transcript is deterministic. A line that is not UTF-8 is
refused with a sentence and the chat goes on. Answers are the model's Markdown read once
(``core.markdown``) and written as plain text: marks dropped, lists as "- " lines, quotes
as "> " lines, a link as "text (URL)".
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TextIO

from core.inbox.front import FrontDoor, FrontDoorResult
from core.markdown.parsing import appended, read
from core.markdown.pieces import NO_MARK, QUOTE_LINES, Mark, Style, verbatim
from core.markdown.splitting import joined
from core.message import Inbound
from core.owner import Identity, Owner
from core.replies import Reply, choice_lines

CHANNEL = "local"
QUIT = "/quit"


def _unmarked(language: str) -> Mark:
    return NO_MARK


PLAIN = Style(bold=NO_MARK, italic=NO_MARK, strike=NO_MARK, code=NO_MARK, code_block=_unmarked, quote=QUOTE_LINES,
              bullet="- ")


def plain_text(markdown: str, after: str = "") -> str:
    """``markdown`` as the terminal shows it, then ``after`` as written (the numbered choices)."""
    return joined(appended(read(markdown, PLAIN), after), verbatim)


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
        self._out.write(plain_text(reply.text, choice_lines(reply.choices)).rstrip() + "\n\n")
        self._out.flush()


@dataclass
class LocalChat:
    owner: Owner
    front: FrontDoor
    out: TextIO

    @property
    def sender(self) -> Identity:
        return Identity(CHANNEL, self.owner.name)

    def _say(self, text: str) -> None:
        self.out.write(plain_text(text).rstrip() + "\n\n")
        self.out.flush()

    async def _answered(self, handled: FrontDoorResult) -> None:
        if handled.answer:
            self._say(handled.answer)
        if handled.later is not None:
            self._say(await handled.later())

    async def handle(self, line: str, wait: bool) -> bool:
        """One line in; False when the chat should end."""
        text = line.strip()
        if not text:
            return True
        if not _is_text(text):
            self._say("That line is not UTF-8 text, so I skipped it.")
            return True
        if text.split()[0].lower() == QUIT:
            return False
        await self._answered(await self.front.handle(Inbound(self.sender, text), owner=self.owner))
        if wait:
            await self.front.wait(self.owner.id)
        return True

    async def run(self, lines: TextIO, interactive: bool) -> None:
        loop = asyncio.get_running_loop()
        if interactive:
            self._say(f"Talking to Nod as {self.owner.name}. Type /help for commands, {QUIT} to leave.")
        while True:
            line = await loop.run_in_executor(None, lines.readline)
            if not line:
                break
            if not await self.handle(line, wait=not interactive):
                await self.front.close()  # /quit: a turn still running is stopped
                return
        await self.front.wait(self.owner.id)  # end of input: let the last answer arrive
