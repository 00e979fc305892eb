"""The front door every channel calls with what a sender wrote.

In order: a redelivery already seen is dropped; a sender who is not an owner gets the
gate's refusal and nothing is stored; a command is answered at once without a turn; any
other message goes to the conductor, which stores it and starts the owner's turn, whose
reply reaches the channel later through the reply sink. The channel only translates its
platform's message into ``Incoming`` and sends back ``Handled.answer`` when there is one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.agent.conductor import Aside, Conductor, Inbound
from core.clock import Clock
from core.inbox.commands import OwnerCommands, command_name
from core.inbox.gate import Gate
from core.inbox.recent import Recent
from core.storage.owners import Identity, Owner

log = logging.getLogger("nod.inbox")


@dataclass(frozen=True)
class Incoming:
    sender: Identity
    text: str
    external_id: str | None = None
    display_name: str | None = None
    card_title: bool = False
    attachment: bool = False
    forwarded: bool = False
    asides: tuple[Aside, ...] = ()
    sent_at: datetime | None = None


@dataclass(frozen=True)
class Handled:
    answer: str | None = None  # to send right away: a command's answer or a refusal
    owner: Owner | None = None
    turn_started: bool = False


class FrontDoor:
    def __init__(self, gate: Gate, commands: OwnerCommands, conductor: Conductor, clock: Clock) -> None:
        self._gate = gate
        self._commands = commands
        self._conductor = conductor
        self._clock = clock
        self._seen = Recent(timedelta(hours=24))

    async def handle(self, incoming: Incoming) -> Handled:
        key = (incoming.sender, incoming.external_id)
        if incoming.external_id and self._seen.seen(key, self._clock.now()):
            log.info("redelivery_dropped channel=%s external_id=%s", incoming.sender.channel, incoming.external_id)
            return Handled()
        handled = await self._handle(incoming)
        if incoming.external_id:  # only once handled: a delivery that failed here must get through when retried
            self._seen.remember(key, self._clock.now())
        return handled

    async def _handle(self, incoming: Incoming) -> Handled:
        sender = incoming.sender
        owner = await self._gate.owner_for(sender, incoming.display_name)
        if owner is None:
            return Handled(self._gate.refusal(sender))
        name = None if incoming.card_title or incoming.forwarded else command_name(incoming.text)
        if name is not None:
            log.info("command owner=%s name=%s channel=%s", owner.id, name, sender.channel)
            return Handled(await self._commands.run(owner, name), owner)
        stored = await self._conductor.receive(Inbound(
            owner, sender.channel, incoming.text, external_id=incoming.external_id, card_title=incoming.card_title,
            attachment=incoming.attachment, forwarded=incoming.forwarded, sent_at=incoming.sent_at,
            address=sender.external_id, asides=incoming.asides))
        return Handled(None, owner, stored is not None)

    async def wait(self, owner_id: int) -> None:
        """Until the owner's turn has ended (a channel shows 'typing' meanwhile)."""
        await self._conductor.wait(owner_id)

    async def close(self) -> None:
        await self._conductor.close()
