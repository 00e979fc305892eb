"""The front door every channel calls with what a sender wrote.

When ``handle`` returns, what the sender wrote is stored, so the channel may acknowledge it;
when it raises, the channel must not. The order of checks: docs/turn.md, "The front door".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from core.agent.conductor import Conductor
from core.attachments.media import refusal as media_refusal
from core.clock import Clock
from core.inbox.commands import OwnerCommands, command_argument, command_name
from core.inbox.gate import Gate
from core.message import Inbound
from core.owner import Identity, Owner
from core.ports import Receipts, Schedules
from core.schedules.runner import notices
from core.voice import refusal

log = logging.getLogger("nod.inbox")
PRIVATE_ONLY = "I only work in private chats: write to me directly."
SLOW_COMMANDS = ("memory", "context")  # digests: a model call; nothing else waits for them


@dataclass(frozen=True)
class FrontDoorResult:
    answer: str | None = None  # to send right away: a command's answer or a refusal
    owner: Owner | None = None
    turn_started: bool = False
    # a digest may wait for the memory model: the channel acknowledges first, then sends this
    later: Callable[[], Awaitable[str]] | None = None


class FrontDoor:
    def __init__(self, gate: Gate, commands: OwnerCommands, conductor: Conductor, receipts: Receipts,
                 clock: Clock, schedules: Schedules | None = None) -> None:
        self._schedules = schedules
        self._gate = gate
        self._commands = commands
        self._conductor = conductor
        self._receipts = receipts
        self._clock = clock

    async def owner_of(self, sender: Identity) -> Owner | None:
        """The owner behind ``sender``, or None for a stranger (nothing is stored either way)."""
        return await self._gate.owner_for(sender, None, sign_up=False)

    async def handle(self, incoming: Inbound, owner: Owner | None = None) -> FrontDoorResult:
        """Take in what a sender wrote; ``owner`` when the channel already knows (the terminal)."""
        sender = incoming.sender
        owner = owner or await self._gate.owner_for(sender, incoming.display_name)
        if owner is None:
            return FrontDoorResult(self._gate.refusal(sender))
        if incoming.edited:  # new words for a stored message: its turn restarts while it awaits, else nothing
            restarted = await self._conductor.edit(owner, incoming)
            return FrontDoorResult(owner=owner, turn_started=restarted is not None)
        name = None if incoming.card_title or incoming.forwarded else command_name(incoming.text)
        if name is not None:
            if incoming.external_id and not await self._receipts.first(
                    owner.id, sender.channel, incoming.external_id, f"command:{name}", self._clock.now()):
                log.info("command_redelivered owner=%s name=%s channel=%s", owner.id, name, sender.channel)
                return FrontDoorResult(owner=owner)
            log.info("command owner=%s name=%s channel=%s", owner.id, name, sender.channel)
            if name in SLOW_COMMANDS:
                return FrontDoorResult(owner=owner, later=lambda: self._commands.run(owner, name))
            return FrontDoorResult(await self._commands.run(owner, name, command_argument(incoming.text)), owner)
        if incoming.voice is not None:
            refused = refusal(incoming.voice, self._conductor.can_listen)
            if refused is not None:
                log.info("voice_refused owner=%s channel=%s", owner.id, sender.channel)
                kept = await self._conductor.keep(owner, incoming)
                return FrontDoorResult(refused if kept else None, owner)  # a redelivery is not answered twice
        if incoming.media is not None and incoming.attachment:  # a file with no words: no turn when it cannot be read
            refused = media_refusal(incoming.media, self._conductor.sees_images, with_words=False)
            if refused is not None:
                log.info("attachment_refused owner=%s channel=%s", owner.id, sender.channel)
                kept = await self._conductor.keep(owner, incoming)
                return FrontDoorResult(refused if kept else None, owner)
        stored = await self._conductor.receive(owner, incoming)
        told = await self._notices(owner) if stored is not None else None
        return FrontDoorResult(told, owner, stored is not None)

    async def group(self, channel: str, chat_id: str) -> str | None:
        """The one sentence for a group that addressed Nod, the first time only; nothing of the group's is stored
        but a marker that it was said (its chat id)."""
        if await self._receipts.first_mark(f"group-told:{channel}:{chat_id}", self._clock.now()):
            log.info("group_told channel=%s", channel)
            return PRIVATE_ONLY
        return None

    async def _notices(self, owner: Owner) -> str | None:
        """Reminders missed while Nod was down, or not delivered: told at the owner's next message."""
        if self._schedules is None:
            return None
        try:
            return await notices(self._schedules, owner)
        except Exception:  # noqa: BLE001 - the message is stored; a notice can wait for the next one
            log.exception("schedule_notices_failed owner=%s", owner.id)
            return None

    async def recover(self, channels: Collection[str], owner_id: int | None = None) -> int:
        """Answer what a stopped process left unanswered on ``channels`` (see Conductor.recover)."""
        return await self._conductor.recover(channels, owner_id)

    async def wait(self, owner_id: int) -> None:
        """Until the owner's turn has ended (a channel shows 'typing' meanwhile)."""
        await self._conductor.wait(owner_id)

    async def close(self) -> None:
        await self._conductor.close()
