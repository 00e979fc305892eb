"""The per-owner spending limit and the check-in that lifts it.

The period is the calendar month in the owner's time zone. The limit is the owner's own
(``nod owners set NAME --spending-limit USD``) or the operator's default. When the month's
recorded cost reaches it, the optional memory-model calls (evidence selection, the reply
check) are skipped and the next owner request gets a question instead of an agent turn:
shall Nod spend more? A yes allows one more limit's worth on top of what is already
spent; the raise ends with the month. Local models cost nothing, so a limit never stops them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from core.agent.usage import month_start, period_key
from core.clock import Clock
from core.owner import Owner
from core.ports import Owners, UsageLedger

_YES = re.compile(r"(yes|y|yeah|yep|sure|ok|okay|go ahead|continue|please do)\b[\s.!]*", re.IGNORECASE)


@dataclass(frozen=True)
class Capacity:
    spent_usd: float
    limit_usd: float | None

    @property
    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd


class Spending:
    def __init__(self, usage: UsageLedger, owners: Owners, clock: Clock, default_limit_usd: float | None) -> None:
        self._usage = usage
        self._owners = owners
        self._clock = clock
        self._default = default_limit_usd

    def base_limit(self, owner: Owner) -> float | None:
        own = owner.settings.spending_limit_usd
        return own if own is not None else self._default

    async def capacity(self, owner: Owner) -> Capacity:
        base = self.base_limit(owner)
        now = self._clock.now()
        spent = await self._usage.spent_since(owner.id, month_start(now, owner.zone))
        if base is None:
            return Capacity(spent, None)
        settings = owner.settings
        raised = settings.spending_raised_usd if settings.spending_raised_period == period_key(now, owner.zone) else 0.0
        return Capacity(spent, base + raised)

    async def allows_optional_calls(self, owner: Owner) -> bool:
        """Whether evidence selection and the reply check may spend: not once the limit is reached."""
        return not (await self.capacity(owner)).exhausted

    async def ask(self, owner: Owner, capacity: Capacity) -> str:
        """Remember that Nod asked this month, and return the question for the owner."""
        period = period_key(self._clock.now(), owner.zone)
        await self._owners.update_settings(owner.id, lambda now: replace(now, spending_checkin_period=period))
        return (
            f"This month I've used ${capacity.spent_usd:.2f} of your ${capacity.limit_usd or 0:.2f} "
            "spending limit. Shall I keep going? Reply yes and I'll allow the same amount again "
            "for the rest of the month."
        )

    async def answer(self, owner: Owner, text: str) -> str | None:
        """If ``text`` says yes to a pending check-in, raise the limit and say so; else None."""
        period = period_key(self._clock.now(), owner.zone)
        settings = owner.settings
        if settings.spending_checkin_period != period or not _YES.fullmatch(text.strip()):
            return None
        base = self.base_limit(owner) or 0.0
        capacity = await self.capacity(owner)
        new_limit = max(capacity.spent_usd, capacity.limit_usd or 0.0) + base
        await self._owners.update_settings(owner.id, lambda now: replace(
            now, spending_raised_period=period, spending_raised_usd=new_limit - base, spending_checkin_period=None))
        return f"Thanks — this month's limit is now ${new_limit:.2f}. What would you like me to do?"
