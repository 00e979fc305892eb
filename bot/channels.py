"""The channels ``nod run`` starts: Telegram and WhatsApp, each when it is configured.

Every channel hands its messages to one front door, and every reply leaves through one
router that sends it back to the identity it answers (falling back to the owner's other
channel when that one refuses). Objects are made first, so their webhook handlers can be
mounted before the web server starts; they start after it listens, because Telegram's
setWebhook may call back at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from adapters.telegram.channel import PATH as TELEGRAM_WEBHOOK
from adapters.telegram.channel import Pauses, TelegramChannel, TelegramConfig
from adapters.web.app import Handler
from adapters.whatsapp.channel import WhatsAppChannel
from adapters.whatsapp.media import TwilioMedia
from adapters.whatsapp.sink import TwilioSender, build_client
from bot.settings import Settings
from bot.wiring import Services
from core.inbox.front import FrontDoor
from core.inbox.routing import ChannelRouter
from core.ports import AudioSource, MediaSource, ReplySink

DEFAULT_PAUSES = Pauses()
TELEGRAM_PATH = TELEGRAM_WEBHOOK
DEFAULT_TELEGRAM_API = "https://api.telegram.org"


class Files(AudioSource, MediaSource, Protocol):
    """A channel's way to fetch what an owner sent: voice notes' audio, photos and documents."""


class Channel(Protocol):
    """What ``nod run`` needs of a channel; each channel package's channel class is one."""

    @property
    def sender(self) -> ReplySink: ...

    @property
    def audio(self) -> Files: ...

    def webhooks(self) -> dict[str, Handler]: ...

    async def start(self, front: FrontDoor) -> None: ...

    async def stop(self) -> None: ...


def _telegram(settings: Settings, pauses: Pauses) -> TelegramChannel | None:
    if not settings.on("telegram"):
        return None
    assert settings.telegram_bot_token  # what "on" means (PARTS), said again for the type checker
    return TelegramChannel(TelegramConfig(
        settings.telegram_bot_token, settings.telegram_api_base_url or DEFAULT_TELEGRAM_API,
        settings.telegram_webhook_url, settings.telegram_webhook_secret, pauses))


def _whatsapp(settings: Settings, pauses: Pauses) -> WhatsAppChannel | None:
    if not settings.on("whatsapp"):
        return None
    sid, token, sender_id, public_url = (settings.twilio_account_sid, settings.twilio_auth_token,
                                         settings.twilio_whatsapp_from, settings.public_url)
    assert sid and token and sender_id and public_url  # what "on" means (PARTS), said again for the type checker
    client = build_client(sid, token, settings.twilio_api_base_url)
    media = TwilioMedia(sid, token, settings.twilio_api_base_url)
    sender = TwilioSender(client, sender_id, template_sid=settings.twilio_reminder_content_sid)
    return WhatsAppChannel(sender, token, public_url, media)


# Every channel nod run can start, by the name its identities carry: adding a channel is its
# package and one line here (and its settings).
CHANNELS: dict[str, Callable[[Settings, Pauses], Channel | None]] = {"telegram": _telegram, "whatsapp": _whatsapp}


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

    @property
    def telegram(self) -> TelegramChannel | None:
        found = self.running.get("telegram")
        return found if isinstance(found, TelegramChannel) else None

    @property
    def whatsapp(self) -> WhatsAppChannel | None:
        found = self.running.get("whatsapp")
        return found if isinstance(found, WhatsAppChannel) else None

    async def start(self) -> None:
        for channel in self.running.values():
            await channel.start(self.front)


@asynccontextmanager
async def channels(settings: Settings, svc: Services,
                   telegram_pauses: Pauses = DEFAULT_PAUSES) -> AsyncIterator[Channels]:
    """The configured channels around one front door; stopped in reverse on the way out.

    ``telegram_pauses``: how long Telegram's retries wait (tests make them short).
    """
    running = {name: built for name, build in CHANNELS.items() if (built := build(settings, telegram_pauses)) is not None}
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
