"""Telegram as a kind of channel: its settings, when it is on, how an operator names an owner on it.

This is what the registry (bot.channels) reads before anything runs, for the settings, the
start summary and ``--link telegram:ID``; it imports no SDK, so the one-shot commands stay
quick. python-telegram-bot loads in ``build``, when ``nod run`` starts the channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, Field

from core.errors import InvalidInput

if TYPE_CHECKING:
    from adapters.telegram.channel import Pauses, TelegramChannel

DEFAULT_API = "https://api.telegram.org"


class TelegramSettings(BaseModel):
    """Telegram's environment variables, composed into bot.settings.Settings."""

    telegram_bot_token: str | None = Field(None, validation_alias="TELEGRAM_BOT_TOKEN")
    telegram_webhook_url: str | None = Field(None, validation_alias="TELEGRAM_WEBHOOK_URL")
    telegram_webhook_secret: str | None = Field(None, validation_alias="TELEGRAM_WEBHOOK_SECRET")
    telegram_api_base_url: str | None = Field(None, validation_alias="TELEGRAM_API_BASE_URL")


class Telegram:
    name: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram"
    settings: ClassVar[type[BaseModel]] = TelegramSettings
    # on with a token; a webhook URL alone is a mistake: it needs its secret (and the token)
    parts: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({
        "telegram": ("telegram_bot_token",),
        "telegram webhook": ("telegram_webhook_url", "telegram_webhook_secret", "telegram_bot_token"),
    })
    secrets: ClassVar[tuple[str, ...]] = ("telegram_bot_token", "telegram_webhook_secret")
    turn_on: ClassVar[str] = "TELEGRAM_BOT_TOKEN"
    off_hint: ClassVar[str] = "from @BotFather"
    example: ClassVar[str] = "123456789"

    def __init__(self, pauses: Pauses | None = None) -> None:
        self._pauses = pauses  # how long the channel's retries wait (tests make them short); None: the defaults

    def parse_identity(self, raw: str) -> str:
        """The owner's numeric user id."""
        if not raw.strip().isdigit():
            raise InvalidInput(f"A Telegram id is the owner's numeric user id (ask @userinfobot), not {raw!r}.")
        return raw.strip()

    def summary(self, settings: TelegramSettings) -> str:
        if settings.telegram_webhook_url:
            return f"on, webhook {settings.telegram_webhook_url}"
        return "on, polling (set TELEGRAM_WEBHOOK_URL for a webhook)"

    def build(self, settings: TelegramSettings) -> TelegramChannel:
        from adapters.telegram.channel import Pauses, TelegramChannel, TelegramConfig  # the SDK, for nod run only

        assert settings.telegram_bot_token  # what "on" means (parts), said again for the type checker
        return TelegramChannel(TelegramConfig(
            settings.telegram_bot_token, settings.telegram_api_base_url or DEFAULT_API,
            settings.telegram_webhook_url, settings.telegram_webhook_secret, self._pauses or Pauses()))


TELEGRAM = Telegram()
