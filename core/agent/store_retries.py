"""When to try again a request whose reply the database would not store.

Such a request stays awaiting and recovery (every minute) takes it up again; each attempt
is a whole turn with its model calls. While the database keeps refusing (a full disk for
hours) the attempts back off — 1, 2, 4 … up to 60 minutes apart — instead of spending a
turn a minute. In memory: a restarted process tries at once, which is what a restart is for.
"""

from __future__ import annotations

from datetime import datetime, timedelta

FIRST_WAIT = timedelta(minutes=1)
LONGEST_WAIT = timedelta(minutes=60)


class StoreRetries:
    def __init__(self) -> None:
        self._next: dict[int, tuple[datetime, timedelta]] = {}

    def failed(self, request_id: int, now: datetime) -> None:
        """Storing the reply to ``request_id`` failed at ``now``: wait longer before the next try."""
        _, wait = self._next.get(request_id, (now, FIRST_WAIT / 2))
        wait = min(wait * 2, LONGEST_WAIT)
        self._next[request_id] = (now + wait, wait)

    def stored(self, request_id: int) -> None:
        """The reply to ``request_id`` was stored at last: nothing left to back off from."""
        self._next.pop(request_id, None)

    def due(self, request_id: int, now: datetime) -> bool:
        """Whether recovery may take ``request_id`` up now."""
        found = self._next.get(request_id)
        return found is None or now >= found[0]
