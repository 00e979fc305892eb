"""Owners as values: who Nod works for, their settings, and the identities that lead to them.

An identity (channel, external id) belongs to at most one owner; one owner may have
identities on several channels and still has one memory and one conversation.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import InvalidInput


@dataclass(frozen=True)
class OwnerSettings:
    saving_enabled: bool = True
    remember_sensitive: bool = False
    spending_limit_usd: float | None = None  # per month in the owner's zone; None: the default
    spending_raised_period: str | None = None  # "YYYY-MM" the owner said yes to spending more in
    spending_raised_usd: float = 0.0
    spending_checkin_period: str | None = None  # "YYYY-MM" Nod asked to check in about

    @classmethod
    def from_json(cls, body: str) -> OwnerSettings:
        data = json.loads(body or "{}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True)
class Identity:
    channel: str
    external_id: str


@dataclass(frozen=True)
class Owner:
    id: int
    name: str
    time_zone: str
    settings: OwnerSettings
    created_at: datetime

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


def check_time_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInput(f"Unknown time zone {name!r}; use an IANA name such as Europe/Lisbon.") from exc
    return name
