"""The owner's slash commands, the same on every channel: none of them runs an agent turn.

``/start`` and ``/help`` explain Nod; ``/memory`` and ``/context`` send a digest;
``/reset`` stops any running turn and starts a new conversation (memory stays);
``/stop`` cancels the running turn. Any other text starting with a slash is an ordinary
message: owners write "/shrug" too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from core.agent.conductor import Conductor
from core.inbox.digests import Digests
from core.owner import Owner
from core.ports import Messages

COMMANDS: dict[str, str] = {
    "start": "What Nod is",
    "help": "What Nod can do",
    "memory": "What Nod remembers about you",
    "context": "What Nod sees at the start of every turn",
    "reset": "Start a new conversation (memory stays)",
    "stop": "Stop the answer in progress",
}
HELP = (
    "I'm Nod, your assistant. Write to me as you would to a person; I remember what you "
    "ask me to remember, from your own words.\n\n"
    + "\n".join(f"/{name} — {what}" for name, what in COMMANDS.items())
)


def command_name(text: str) -> str | None:
    """``memory`` for "/memory" or "/memory@NodBot"; None when the text is not a command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word = stripped[1:].split(maxsplit=1)[0].split("@", 1)[0].lower() if len(stripped) > 1 else ""
    return word if word in COMMANDS else None


class OwnerCommands:
    def __init__(self, conductor: Conductor, messages: Messages, digests: Digests) -> None:
        self._conductor = conductor
        self._messages = messages
        self._digests = digests

    async def run(self, owner: Owner, name: str) -> str:
        actions: dict[str, Callable[[Owner], Awaitable[str]]] = {
            "start": _help, "help": _help, "memory": self._digests.memory,
            "context": self._digests.context, "reset": self._reset, "stop": self._stop,
        }
        return await actions[name](owner)

    async def _reset(self, owner: Owner) -> str:
        await self._conductor.stop(owner.id)
        await self._messages.reset_thread(owner.id)
        return "Started a new conversation. Your memory is kept."

    async def _stop(self, owner: Owner) -> str:
        return "Stopped." if await self._conductor.stop(owner.id) else "Nothing is running."


async def _help(owner: Owner) -> str:
    return HELP
