"""The owner's slash commands, the same on every channel: none of them runs an agent turn.

``/start`` and ``/help`` explain Nod; ``/memory`` and ``/context`` send a digest;
``/reset`` stops any running turn and starts a new conversation (memory stays);
``/stop`` cancels the running turn; ``/reminders`` lists what is coming, with ids;
``/settings`` answers with a one-time sign-in link to
the memory page and ``/settings logout`` ends the owner's page sessions (or says in one
sentence why the page is off). Any other ``/word`` on its own — "/remind", "/usage" — is a
command Nod does not have: it gets the help text, with no model turn; a slash inside a
sentence ("/shrug that was odd", "1/2 cup") is ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from core.agent.conductor import Conductor
from core.inbox.digests import Digests
from core.owner import Owner
from core.ports import Messages, PageLinks, Schedules
from core.schedules.tool import described

COMMANDS: dict[str, str] = {
    "start": "What Nod is",
    "help": "What Nod can do",
    "memory": "What Nod remembers about you",
    "context": "What Nod sees at the start of every turn",
    "reset": "Start a new conversation (memory stays)",
    "stop": "Stop the answer in progress",
    "settings": "A sign-in link to your memory page",
    "reminders": "Your reminders and scheduled tasks",
}
HELP = (
    "I'm Nod, your assistant. Write to me as you would to a person; I remember what you "
    "ask me to remember, from your own words.\n\n"
    + "\n".join(f"/{name} — {what}" for name, what in COMMANDS.items())
)



def command_argument(text: str) -> str:
    """What follows the command word: ``logout`` in "/settings logout"."""
    parts = text.strip().split(maxsplit=1)
    return parts[1].strip().lower() if len(parts) > 1 else ""


UNKNOWN = "unknown"  # what command_name answers for a /word Nod has no command for
_COMMAND_WORD = re.compile(r"/([A-Za-z][A-Za-z0-9_]{0,31})(@\w+)?")


def command_name(text: str) -> str | None:
    """``memory`` for "/memory" or "/memory@NodBot"; ``UNKNOWN`` for a lone "/word" that is no
    command; None when the text is not a command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word = stripped[1:].split(maxsplit=1)[0].split("@", 1)[0].lower() if len(stripped) > 1 else ""
    if word in COMMANDS:
        return word
    return UNKNOWN if _COMMAND_WORD.fullmatch(stripped) else None


class OwnerCommands:
    def __init__(self, conductor: Conductor, messages: Messages, digests: Digests,
                 page: PageLinks | None = None, page_off: str = "", schedules: Schedules | None = None) -> None:
        self._schedules = schedules
        self._conductor = conductor
        self._messages = messages
        self._digests = digests
        self._page = page
        self._page_off = page_off  # why there is no page: the sentence /settings answers

    async def run(self, owner: Owner, name: str, argument: str = "") -> str:
        if name == "settings":
            return await self._settings(owner, argument)
        if name == UNKNOWN:
            return "I don't have that command.\n\n" + HELP
        actions: dict[str, Callable[[Owner], Awaitable[str]]] = {
            "start": _help, "help": _help, "memory": self._digests.memory,
            "context": self._digests.context, "reset": self._reset, "stop": self._stop,
            "reminders": self._reminders,
        }
        return await actions[name](owner)

    async def _settings(self, owner: Owner, argument: str) -> str:
        if self._page is None:
            return self._page_off or "The memory page is off on this Nod."
        if argument == "logout":
            ended = await self._page.revoke(owner.id)
            return f"Signed out of the memory page ({ended} session{'s' if ended != 1 else ''} ended)."
        link = await self._page.link(owner.id)
        return f"Your memory page (the link works once, for 15 minutes):\n{link}"

    async def _reset(self, owner: Owner) -> str:
        await self._conductor.stop(owner.id)
        await self._messages.reset_thread(owner.id)
        return "Started a new conversation. Your memory is kept."

    async def _reminders(self, owner: Owner) -> str:
        coming = await self._schedules.active(owner.id) if self._schedules is not None else []
        if not coming:
            return "You have no reminders or scheduled tasks. Ask me, e.g. \"remind me tomorrow at 9 to call the dentist\"."
        lines = []
        for schedule in coming:
            shown = described(schedule, owner.time_zone)
            repeat = f", repeats ({schedule.repeat})" if schedule.repeat else ""
            text = schedule.text if len(schedule.text) <= 120 else schedule.text[:119].rstrip() + "…"
            lines.append(f"#{schedule.id} {shown['next_run']}{repeat} — {schedule.kind.value}: {text}")
        return "Coming up:\n" + "\n".join(lines) + "\n\nTo cancel one, tell me its number."

    async def _stop(self, owner: Owner) -> str:
        return "Stopped." if await self._conductor.stop(owner.id) else "Nothing is running."


async def _help(owner: Owner) -> str:
    return HELP
