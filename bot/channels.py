"""The channels Nod knows, one registry entry each, and the ones ``nod run`` starts.

Adding a channel is its package and one line in ``CHANNELS`` (docs/architecture.md, "Adding a
channel"); webhooks are mounted before the server starts, channels start after it listens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from adapters.telegram.kind import TELEGRAM
from adapters.whatsapp.kind import WHATSAPP
from core.errors import InvalidInput
from core.inbox.routing import ChannelRouter
from core.owner import Identity
from core.ports import AudioSource, MediaSource, ReplySink

if TYPE_CHECKING:  # bot.settings composes its fields from this registry, so it is imported for types only
    from adapters.web.app import Handler
    from bot.settings import Settings
    from bot.wiring import Services
    from core.inbox.front import FrontDoor


class Files(AudioSource, MediaSource, Protocol):
    """A channel's way to fetch what an owner sent: voice notes' audio, photos and documents."""


class Channel(Protocol):
    """A running channel, as ``nod run`` drives it; each channel package's channel class is one."""

    @property
    def sender(self) -> ReplySink: ...

    @property
    def audio(self) -> Files: ...

    def webhooks(self) -> dict[str, Handler]: ...

    async def start(self, front: FrontDoor) -> None: ...

    async def stop(self) -> None: ...


class ChannelKind(Protocol):
    """A kind of channel before it runs: one per channel package (its ``kind.py``), imports no SDK."""

    @property
    def name(self) -> str:
        """The channel its identities carry (``--link NAME:ID``), and the part that says it is on."""

    @property
    def label(self) -> str:
        """Its line in the start summary."""

    @property
    def settings(self) -> type[BaseModel]:
        """Its environment variables, each a field aliased by its name; bot.settings.Settings composes them."""

    @property
    def parts(self) -> Mapping[str, tuple[str, ...]]:
        """Part → the settings it needs, the first one turning it on (a part named ``name`` among them)."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The settings whose values are secrets (kept out of what models see)."""

    @property
    def turn_on(self) -> str:
        """What to set to turn it on, in the start summary's words ("TELEGRAM_BOT_TOKEN")."""

    @property
    def off_hint(self) -> str:
        """Where its settings come from, said when it is off ("from @BotFather"), or ""."""

    @property
    def example(self) -> str:
        """An identity as the operator writes it, for the help and the errors."""

    def parse_identity(self, raw: str) -> str:
        """An identity as the operator writes it, as Nod stores it; InvalidInput when it is not one."""

    def summary(self, settings: Any) -> str:
        """Its state in the start summary when it is on ("on, webhook …")."""

    def build(self, settings: Any) -> Channel:
        """The running channel, when it is on; its SDK loads here."""


Registry = Mapping[str, ChannelKind]


def registry(*kinds: ChannelKind) -> Registry:
    return MappingProxyType({kind.name: kind for kind in kinds})


# Every channel Nod can run, by the name its identities carry. Adding a channel: its package, and one entry here.
CHANNELS = registry(TELEGRAM, WHATSAPP)


def identity(channels: Registry, channel: str, raw: str) -> Identity:
    kind = channels.get(channel)
    if kind is None:
        raise InvalidInput(f"There is no channel {channel!r}; the channels are {', '.join(channels)}.")
    return Identity(channel, kind.parse_identity(raw))


def linked(channels: Registry, links: Iterable[str]) -> tuple[Identity, ...]:
    """``--link CHANNEL:ID`` values (the older ``--telegram``, ``--whatsapp`` arrive as such), each checked by its channel."""
    found = []
    for link in links:
        channel, colon, raw = link.partition(":")
        if not colon or not raw:
            examples = " or ".join(f"{kind.name}:{kind.example}" for kind in channels.values())
            raise InvalidInput(f"--link is CHANNEL:ID, e.g. {examples}, not {link!r}.")
        found.append(identity(channels, channel.strip().lower(), raw))
    return tuple(found)


@dataclass
class Channels:
    front: FrontDoor
    sink: ReplySink  # every channel's way out, with the fallback between them
    running: dict[str, Channel] = field(default_factory=dict)
    webhooks: dict[str, Handler] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The channels running here: the ones whose unanswered messages this process may answer."""
        return tuple(self.running)

    async def start(self) -> None:
        for channel in self.running.values():
            await channel.start(self.front)


@asynccontextmanager
async def channels(settings: Settings, svc: Services) -> AsyncIterator[Channels]:
    """The channels ``settings`` turn on, around one front door; stopped in reverse on the way out."""
    running = {name: kind.build(settings) for name, kind in settings.channels.items() if settings.on(name)}
    sinks: dict[str, ReplySink] = {name: channel.sender for name, channel in running.items()}
    files: dict[str, Files] = {name: channel.audio for name, channel in running.items()}
    router = ChannelRouter(sinks, svc.owners)
    made = Channels(svc.front_door(router, files, files), router, running)
    for channel in running.values():
        made.webhooks.update(channel.webhooks())
    try:
        yield made
    finally:
        await made.front.close()
        for channel in reversed(running.values()):
            await channel.stop()
