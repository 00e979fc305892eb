"""Sending to Telegram: HTML in parts of at most 4,096 characters, bounded retries.

The reply's Markdown is written as HTML parts by ``html_parts`` (each part's tags
balanced, cut between blocks); if Telegram rejects a part (a bad-request answer), the
same part goes again as its plain visible text. Flood control (429) waits the
``retry_after`` Telegram asks for, up to a minute; a server error or timeout is tried
again after a short backoff; after ``ATTEMPTS`` tries, or at once when the owner blocked
the bot, the send gives up with ``DeliveryFailed`` and a log line. Choices ride on the
last part as inline buttons whose data is their number; the label is read back from the
tapped message.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError
from telegram.warnings import PTBDeprecationWarning

from adapters.telegram.formatting import TELEGRAM_LIMIT, html_parts, visible_text
from core.errors import DeliveryFailed
from core.owner import Identity, Owner
from core.replies import Reply

log = logging.getLogger("nod.telegram")
ATTEMPTS = 4
MAX_RETRY_AFTER_S = 60.0  # the longest flood-control pause Nod waits out
BACKOFF_S = (0.5, 2.0, 5.0)
T = TypeVar("T")


def _seconds(error: RetryAfter) -> float:
    with warnings.catch_warnings():  # python-telegram-bot 22 warns that the int form is going away
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = error.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def choice_keyboard(choices: tuple[str, ...]) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=f"choice:{n}")]
                                 for n, label in enumerate(choices, start=1)])


class TelegramSender:
    def __init__(self, bot: Bot, backoff_s: tuple[float, ...] = BACKOFF_S,
                 max_retry_after_s: float = MAX_RETRY_AFTER_S) -> None:
        self._bot = bot
        self._backoff = backoff_s
        self._max_retry_after = max_retry_after_s

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        await self.send(int(to.external_id), reply.text, reply.choices)

    async def send(self, chat_id: int, text: str, choices: tuple[str, ...] = ()) -> None:
        parts = html_parts(text, TELEGRAM_LIMIT) or ["…"]
        for number, part in enumerate(parts, start=1):
            markup = choice_keyboard(choices) if choices and number == len(parts) else None
            await self._send_part(chat_id, part, markup)

    async def _send_part(self, chat_id: int, part: str, markup: InlineKeyboardMarkup | None) -> Message:
        try:
            return await self.retrying("sendMessage", lambda: self._bot.send_message(
                chat_id, part, parse_mode=ParseMode.HTML, reply_markup=markup))
        except BadRequest:
            log.info("telegram_markup_rejected chat=%s; sending plain text", chat_id)
        plain = visible_text(part)
        try:
            return await self.retrying("sendMessage", lambda: self._bot.send_message(chat_id, plain, reply_markup=markup))
        except BadRequest as exc:
            raise DeliveryFailed("Telegram refused the message", code="400") from exc

    async def retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call`` with Telegram's retry rules; BadRequest passes through for the caller."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await call()
            except RetryAfter as exc:
                delay = min(_seconds(exc), self._max_retry_after)
                log.warning("telegram_flood_control method=%s retry_after=%.1f attempt=%s", what, delay, attempt)
            except BadRequest:
                raise
            except Forbidden as exc:
                log.warning("telegram_forbidden method=%s", what)
                raise DeliveryFailed("Telegram says the bot is blocked or was never started", code="403") from exc
            except NetworkError as exc:  # 5xx, timeouts, connection failures
                delay = self._backoff[min(attempt - 1, len(self._backoff) - 1)]
                log.warning("telegram_unavailable method=%s error=%s attempt=%s", what, type(exc).__name__, attempt)
            except TelegramError as exc:
                raise DeliveryFailed(f"Telegram refused the call ({type(exc).__name__})") from exc
            if attempt < ATTEMPTS:
                await asyncio.sleep(delay)
        raise DeliveryFailed(f"Telegram did not accept {what} after {ATTEMPTS} attempts.", code="retries")
