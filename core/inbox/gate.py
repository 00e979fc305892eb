"""Who may talk to Nod: only known identities are owners.

An unknown sender gets one short refusal, rate-limited per sender and in all so that Nod
cannot be used to spam, and nothing of theirs is stored beyond one log line; with open
sign-up their first message makes them an owner instead. Known identities are cached for a
minute, which is safe because identities are only ever added: docs/reliability.md.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from datetime import datetime, timedelta

from core.clock import Clock
from core.errors import AlreadyExists
from core.inbox.recent import Recent
from core.owner import Identity, Owner
from core.ports import Owners

log = logging.getLogger("nod.inbox.gate")
REFUSAL = "Sorry, I'm a private assistant and I only talk with the people I work for."
REFUSALS_PER_MINUTE = 20
KNOWN_FOR = timedelta(minutes=1)
KNOWN_CAPACITY = 10_000


class Gate:
    def __init__(self, owners: Owners, clock: Clock, open_signup: bool = False) -> None:
        self._owners = owners
        self._clock = clock
        self._open_signup = open_signup
        self._refused = Recent(timedelta(hours=1))
        self._refusals_sent: deque[datetime] = deque()  # when, over the last minute
        self._known: OrderedDict[Identity, tuple[Owner, datetime]] = OrderedDict()

    async def owner_for(self, sender: Identity, display_name: str | None, sign_up: bool = True) -> Owner | None:
        now = self._clock.now()
        cached = self._known.get(sender)
        if cached is not None and now - cached[1] < KNOWN_FOR:
            return cached[0]
        owner = await self._owners.by_identity(sender)
        if owner is None and self._open_signup and sign_up:
            owner = await self._sign_up(sender, display_name)
        if owner is not None:
            self._known[sender] = (owner, now)
            self._known.move_to_end(sender)
            if len(self._known) > KNOWN_CAPACITY:
                self._known.popitem(last=False)
        return owner

    async def _sign_up(self, sender: Identity, display_name: str | None) -> Owner:
        first = (display_name or "").strip()[:60]
        names = [first] if first else []
        names.append(f"{first or sender.channel} ({sender.channel} {sender.external_id})".strip())
        for name in names:
            try:
                owner = await self._owners.add(name, "UTC", (sender,), self._clock.now())
            except AlreadyExists:
                found = await self._owners.by_identity(sender)  # a parallel first message won
                if found is not None:
                    return found
                continue
            log.info("owner_signed_up owner=%s channel=%s", owner.id, sender.channel)
            return owner
        raise AlreadyExists(f"Could not sign up {sender.channel} {sender.external_id}.")

    def refusal(self, sender: Identity) -> str | None:
        """The refusal to send this stranger now, or None when it would be one too many."""
        now = self._clock.now()
        log.warning(
            "stranger_refused channel=%s id=%s (to let them in: nod owners add NAME --link %s:%s)",
            sender.channel, sender.external_id, sender.channel, sender.external_id,
        )
        while self._refusals_sent and now - self._refusals_sent[0] >= timedelta(minutes=1):
            self._refusals_sent.popleft()
        if len(self._refusals_sent) >= REFUSALS_PER_MINUTE or not self._refused.first_time(sender, now):
            return None
        self._refusals_sent.append(now)
        return REFUSAL
