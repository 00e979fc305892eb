"""WhatsApp (through Twilio) as a kind of channel: its settings, when it is on, how an operator names an owner on it.

This is what the registry (bot.channels) reads before anything runs, for the settings, the
start summary and ``--link whatsapp:+NUMBER``; it imports no SDK, so the one-shot commands
stay quick. twilio loads in ``build``, when ``nod run`` starts the channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, Field

from core.errors import InvalidInput

if TYPE_CHECKING:
    from adapters.whatsapp.channel import WhatsAppChannel

PATH = "/webhooks/whatsapp"


class WhatsAppSettings(BaseModel):
    """Twilio's environment variables, composed into bot.settings.Settings."""

    twilio_account_sid: str | None = Field(None, validation_alias="TWILIO_ACCOUNT_SID")
    twilio_auth_token: str | None = Field(None, validation_alias="TWILIO_AUTH_TOKEN")
    twilio_whatsapp_from: str | None = Field(None, validation_alias="TWILIO_WHATSAPP_FROM")
    twilio_api_base_url: str | None = Field(None, validation_alias="TWILIO_API_BASE_URL")
    twilio_reminder_content_sid: str | None = Field(None, validation_alias="TWILIO_REMINDER_CONTENT_SID")
    # Nod's own setting (bot.settings.Settings declares and checks it), read here too: Twilio
    # signs the public URL it called, so the channel needs it
    public_url: str | None = Field(None, validation_alias="NOD_PUBLIC_URL")


class WhatsApp:
    name: ClassVar[str] = "whatsapp"
    label: ClassVar[str] = "WhatsApp"
    settings: ClassVar[type[BaseModel]] = WhatsAppSettings
    parts: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({
        "whatsapp": ("twilio_account_sid", "twilio_auth_token", "twilio_whatsapp_from", "public_url"),
    })
    secrets: ClassVar[tuple[str, ...]] = ("twilio_auth_token",)
    turn_on: ClassVar[str] = "the TWILIO_* settings"
    off_hint: ClassVar[str] = ""
    example: ClassVar[str] = "+351912345678"

    def parse_identity(self, raw: str) -> str:
        """+<digits>, as Twilio's ``whatsapp:`` address carries it."""
        number = raw.removeprefix("whatsapp:").replace(" ", "")
        if not number.startswith("+") or not number[1:].isdigit():
            raise InvalidInput(f"A WhatsApp number is +<digits>, not {raw!r}.")
        return number

    def summary(self, settings: WhatsAppSettings) -> str:
        return f"on, Twilio from {settings.twilio_whatsapp_from}, webhook {str(settings.public_url).rstrip('/')}{PATH}"

    def build(self, settings: WhatsAppSettings) -> WhatsAppChannel:
        from adapters.whatsapp.channel import WhatsAppChannel  # the SDK, for nod run only
        from adapters.whatsapp.media import TwilioMedia
        from adapters.whatsapp.sink import TwilioSender, build_client

        sid, token, sender_id, public_url = (settings.twilio_account_sid, settings.twilio_auth_token,
                                             settings.twilio_whatsapp_from, settings.public_url)
        assert sid and token and sender_id and public_url  # what "on" means (parts), said again for the type checker
        client = build_client(sid, token, settings.twilio_api_base_url)
        media = TwilioMedia(sid, token, settings.twilio_api_base_url)
        sender = TwilioSender(client, sender_id, template_sid=settings.twilio_reminder_content_sid)
        return WhatsAppChannel(sender, token, public_url, media)


WHATSAPP = WhatsApp()
