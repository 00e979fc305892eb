"""A small bounded memory of recently seen keys, each forgotten after a time-to-live.

Used to answer a redelivered webhook once even when it carries no stored message (a
command), and to rate-limit refusals to strangers. It lives in one process: the database's
unique external ids are what makes redelivery safe across workers; this only spares
repeated work inside one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from datetime import datetime, timedelta


class Recent:
    def __init__(self, ttl: timedelta, capacity: int = 10_000) -> None:
        self._ttl = ttl
        self._capacity = capacity
        self._seen: OrderedDict[Hashable, datetime] = OrderedDict()

    def _forget_old(self, now: datetime) -> None:
        while self._seen:
            key, at = next(iter(self._seen.items()))
            if now - at < self._ttl and len(self._seen) <= self._capacity:
                return
            del self._seen[key]

    def first_time(self, key: Hashable, now: datetime) -> bool:
        """True, and remember ``key``, unless it was seen within the time-to-live."""
        if self.seen(key, now):
            return False
        self.remember(key, now)
        return True

    def seen(self, key: Hashable, now: datetime) -> bool:
        self._forget_old(now)
        return key in self._seen

    def remember(self, key: Hashable, now: datetime) -> None:
        self._seen[key] = now
