"""How the operator names an owner's identity on each channel (``--link CHANNEL:ID``), by channel name.

Each channel package parses its own identities; adding a channel adds one line here. The older
``--telegram ID`` and ``--whatsapp +NUMBER`` flags are read through the same parsers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from adapters.telegram.identity import parse_identity as telegram_identity
from adapters.whatsapp.identity import parse_identity as whatsapp_identity
from core.errors import InvalidInput
from core.owner import Identity

PARSERS: dict[str, Callable[[str], str]] = {"telegram": telegram_identity, "whatsapp": whatsapp_identity}


def identity(channel: str, raw: str) -> Identity:
    parse = PARSERS.get(channel)
    if parse is None:
        raise InvalidInput(f"There is no channel {channel!r}; the channels are {', '.join(PARSERS)}.")
    return Identity(channel, parse(raw))


def linked(links: Iterable[str], by_channel: dict[str, list[str]]) -> tuple[Identity, ...]:
    """``--link CHANNEL:ID`` values, then each channel's own flag (``--telegram``, ``--whatsapp``)."""
    found = []
    for link in links:
        channel, colon, raw = link.partition(":")
        if not colon or not raw:
            raise InvalidInput(f"--link is CHANNEL:ID, e.g. telegram:123456789 or whatsapp:+351912345678, not {link!r}.")
        found.append(identity(channel.strip().lower(), raw))
    found += [identity(channel, raw) for channel, values in by_channel.items() for raw in values]
    return tuple(found)
