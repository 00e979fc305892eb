"""Replies go back where the request came from; a failed channel falls back to another.

One owner may reach Nod on several channels and has one conversation: the reply to a
message goes to the identity that sent it. When that channel gives up (WhatsApp refuses
a free-form message outside its 24-hour window, the owner blocked the Telegram bot), the
reply goes to the owner's other identities, in the order they were linked, with a line
saying why. A message Nod starts itself (a reminder) that no channel took because the
window for free-form messages has closed gets one more try in the channel's pre-approved
form (WhatsApp's template, when the operator configured one); otherwise the failure is
raised for the caller to record.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from core.errors import DeliveryFailed
from core.owner import Identity, Owner
from core.ports import Owners, ReplySink
from core.replies import Reply

log = logging.getLogger("nod.inbox.routing")
OUTSIDE_WINDOW = "63016"  # WhatsApp (Twilio): a free-form message outside the 24-hour window


class ChannelRouter:
    def __init__(self, sinks: Mapping[str, ReplySink], owners: Owners) -> None:
        self._sinks = dict(sinks)
        self._owners = owners

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        sink = self._sinks.get(to.channel)
        if sink is None:
            raise DeliveryFailed(f"No channel {to.channel!r} is running to deliver the reply.")
        try:
            await sink.deliver(owner, to, reply)
            return
        except DeliveryFailed as exc:
            failure = exc
        log.warning("delivery_failed owner=%s channel=%s code=%s error=%s", owner.id, to.channel, failure.code, failure)
        for other in await self._owners.identities(owner.id):
            if other == to or other.channel not in self._sinks or other.channel == to.channel:
                continue
            note = f"(I couldn't reply where you wrote: {failure}.)\n\n"
            try:
                await self._sinks[other.channel].deliver(owner, other, Reply(note + reply.text, reply.choices))
                log.info("delivery_fallback owner=%s from=%s to=%s", owner.id, to.channel, other.channel)
                return
            except DeliveryFailed as exc:
                log.warning("delivery_failed owner=%s channel=%s code=%s error=%s", owner.id, other.channel, exc.code, exc)
        if failure.code == OUTSIDE_WINDOW and reply.unprompted:
            await sink.deliver(owner, to, replace(reply, approved_form=True))  # raises when there is no template
            log.info("delivery_approved_form owner=%s channel=%s", owner.id, to.channel)
            return
        raise failure
