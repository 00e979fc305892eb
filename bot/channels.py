"""The channels ``nod run`` starts: Telegram and WhatsApp, each when it is configured.

Every channel hands its messages to one front door, and every reply leaves through one
router that sends it back to the identity it answers (falling back to the owner's other
channel when that one refuses). Objects are made first, so their webhook handlers can be
mounted before the web server starts; they start after it listens, because Telegram's
setWebhook may call back at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from adapters.telegram.channel import Pauses, TelegramChannel, TelegramConfig
from adapters.web.app import Handler
from adapters.whatsapp.channel import PATH as WHATSAPP_PATH
from adapters.whatsapp.channel import WhatsAppChannel
from adapters.whatsapp.media import TwilioMedia
from adapters.whatsapp.sink import TwilioSender, build_client
from bot.settings import Settings
from bot.wiring import Services
from core.agent.conductor import ReplySink
from core.attachments.model import MediaSource
from core.inbox.front import FrontDoor
from core.inbox.routing import ChannelRouter
from core.voice import AudioSource

DEFAULT_PAUSES = Pauses()
TELEGRAM_PATH = "/webhooks/telegram"
DEFAULT_TELEGRAM_API = "https://api.telegram.org"


@dataclass
class Channels:
    front: FrontDoor
    sink: ReplySink  # every channel's way out, with the fallback between them
    telegram: TelegramChannel | None = None
    whatsapp: WhatsAppChannel | None = None
    webhooks: dict[str, Handler] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The channels running here: the ones whose unanswered messages this process may answer."""
        return tuple(name for name, channel in (("telegram", self.telegram), ("whatsapp", self.whatsapp))
                     if channel is not None)

    async def start(self) -> None:
        if self.telegram is not None:
            await self.telegram.start(self.front)
        if self.whatsapp is not None:
            self.whatsapp.start(self.front)


def _telegram(settings: Settings, pauses: Pauses) -> TelegramChannel | None:
    if not settings.on("telegram"):
        return None
    assert settings.telegram_bot_token  # what "on" means (PARTS), said again for the type checker
    return TelegramChannel(TelegramConfig(
        settings.telegram_bot_token, settings.telegram_api_base_url or DEFAULT_TELEGRAM_API,
        settings.telegram_webhook_url, settings.telegram_webhook_secret, pauses))


def _whatsapp(settings: Settings) -> WhatsAppChannel | None:
    if not settings.on("whatsapp"):
        return None
    sid, token, sender_id, public_url = (settings.twilio_account_sid, settings.twilio_auth_token,
                                         settings.twilio_whatsapp_from, settings.public_url)
    assert sid and token and sender_id and public_url  # what "on" means (PARTS), said again for the type checker
    client = build_client(sid, token, settings.twilio_api_base_url)
    media = TwilioMedia(sid, token, settings.twilio_api_base_url)
    sender = TwilioSender(client, sender_id, template_sid=settings.twilio_reminder_content_sid)
    return WhatsAppChannel(sender, token, public_url, media)


@asynccontextmanager
async def channels(settings: Settings, svc: Services,
                   telegram_pauses: Pauses = DEFAULT_PAUSES) -> AsyncIterator[Channels]:
    """The configured channels around one front door; stopped in reverse on the way out.

    ``telegram_pauses``: how long Telegram's retries wait (tests make them short).
    """
    telegram, whatsapp = _telegram(settings, telegram_pauses), _whatsapp(settings)
    sinks: dict[str, ReplySink] = {}
    audio: dict[str, AudioSource] = {}  # where each channel's voice notes are fetched from
    media: dict[str, MediaSource] = {}  # and its photos and documents
    if telegram is not None:
        sinks["telegram"] = telegram.sender
        audio["telegram"] = media["telegram"] = telegram.audio
    if whatsapp is not None:
        sinks["whatsapp"] = whatsapp.sender
        audio["whatsapp"] = media["whatsapp"] = whatsapp.audio
    router = ChannelRouter(sinks, svc.owners)
    made = Channels(svc.front_door(router, audio, media), router, telegram, whatsapp)
    if telegram is not None and settings.telegram_webhook_url:
        made.webhooks[TELEGRAM_PATH] = telegram.webhook
    if whatsapp is not None:
        made.webhooks[WHATSAPP_PATH] = whatsapp.webhook
    try:
        yield made
    finally:
        await made.front.close()
        if whatsapp is not None:
            await whatsapp.stop()
        if telegram is not None:
            await telegram.stop()
