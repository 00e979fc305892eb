"""The Telegram channel: python-telegram-bot's Bot around Nod's front door.

Nothing is acknowledged before it is stored: a webhook answers 200 only after the front door
stored the update, and polling confirms an offset only then, so a crash never loses one.
Why polling is Nod's own and not PTB's Updater: docs/channels.md.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import ssl
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
from aiohttp import web
from telegram import BotCommand, Update
from telegram.constants import ChatAction
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application
from telegram.request import HTTPXRequest

from adapters.telegram.audio import TelegramAudio
from adapters.telegram.inbound import (
    CHANNEL,
    addressed_in_group,
    edited_message,
    incoming_message,
    is_private,
    sender_of,
    tapped_choice,
)
from adapters.telegram.sink import BACKOFF_S, MAX_RETRY_AFTER_S, TelegramSender
from core.errors import ConfigError, DeliveryFailed, InvalidInput
from core.inbox.answering import Answering
from core.inbox.commands import COMMANDS
from core.inbox.front import FrontDoor, FrontDoorResult
from core.message import Inbound
from core.owner import Identity

log = logging.getLogger("nod.telegram")
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
TYPING_EVERY_S = 4.0  # Telegram shows "typing…" for 5 seconds: sent again before it fades
POLL_TIMEOUT_S = 30


@dataclass(frozen=True)
class Pauses:
    """How long the channel waits before trying again (tests make them short)."""

    poll_retry_s: tuple[float, ...] = (1.0, 5.0, 15.0)  # after a failed poll or an update not stored
    send_backoff_s: tuple[float, ...] = BACKOFF_S  # after a 5xx or timeout sending
    retry_after_cap_s: float = MAX_RETRY_AFTER_S  # the longest flood-control wait
    typing_every_s: float = TYPING_EVERY_S  # "typing…" sent again this often while a turn runs
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
PATH = "/webhooks/telegram"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
EXPIRED_CHOICE = "That choice is no longer available."


@dataclass(frozen=True)
class TelegramConfig:
    token: str
    api_base_url: str = "https://api.telegram.org"
    webhook_url: str | None = None
    webhook_secret: str | None = None
    pauses: Pauses = Pauses()
    poll_timeout_s: int = POLL_TIMEOUT_S


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default (as PTB's clients would make it), made once per process: each client
    loaded the CA bundle again, about 20 ms of CPU, two per channel built."""
    return httpx.create_ssl_context()


def build_application(config: TelegramConfig) -> Application:  # type: ignore[type-arg]
    """PTB's application for its configured Bot only: Nod feeds no update queue. Its two HTTP
    clients (calls, and long polling with PTB's default timeouts) share one TLS context."""
    base = config.api_base_url.rstrip("/")
    shared = {"verify": tls_context()}
    calls = HTTPXRequest(connection_pool_size=256, connect_timeout=10, read_timeout=20, write_timeout=20,
                         httpx_kwargs=shared)
    return (Application.builder().token(config.token).base_url(f"{base}/bot").base_file_url(f"{base}/file/bot")
            .request(calls).get_updates_request(HTTPXRequest(connection_pool_size=1, httpx_kwargs=shared))
            .updater(None).build())


class TelegramChannel:
    def __init__(self, config: TelegramConfig, application: Application | None = None) -> None:  # type: ignore[type-arg]
        self._config = config
        self.application = application or build_application(config)
        self.sender = TelegramSender(self.application.bot, config.pauses.send_backoff_s,
                                     config.pauses.retry_after_cap_s)
        self.audio = TelegramAudio(self.application.bot, self.sender)  # voice notes' audio, into memory
        self._front: FrontDoor | None = None
        self._answering: Answering[int] = Answering(CHANNEL, self._send)
        self._polling: asyncio.Task[None] | None = None

    @property
    def _bot(self) -> Any:
        return self.application.bot

    async def start(self, front: FrontDoor) -> None:
        self._front = front
        try:
            await self.application.initialize()
            if self._config.webhook_url:
                await self._bot.set_webhook(self._config.webhook_url, secret_token=self._config.webhook_secret,
                                            allowed_updates=ALLOWED_UPDATES)
            else:
                await self._bot.delete_webhook()  # getUpdates refuses to run while a webhook is set
        except InvalidToken as exc:
            raise ConfigError("Telegram refused TELEGRAM_BOT_TOKEN; copy it again from @BotFather.") from exc
        except TelegramError as exc:
            raise ConfigError(f"Telegram's Bot API at {self._config.api_base_url} answered: {exc.message}.") from exc
        await self._register_commands()
        if not self._config.webhook_url:
            self._polling = asyncio.create_task(self._poll(), name="telegram-polling")
        log.info("telegram_started mode=%s", "webhook" if self._config.webhook_url else "polling")

    async def _register_commands(self) -> None:
        commands = [BotCommand(name, what) for name, what in COMMANDS.items()]
        try:
            await self.sender.retrying("setMyCommands", lambda: self._bot.set_my_commands(commands))
        except (DeliveryFailed, TelegramError) as exc:  # the menu is a convenience; Nod still works
            log.warning("telegram_commands_not_registered error=%s", type(exc).__name__)

    def webhooks(self) -> dict[str, Handler]:
        """``POST /webhooks/telegram`` when Telegram is set to call Nod; none while Nod polls."""
        return {PATH: self.webhook} if self._config.webhook_url else {}

    async def stop(self) -> None:
        if self._polling is not None:
            self._polling.cancel()
            await asyncio.wait({self._polling})
        await self._answering.stop()
        await self.application.shutdown()

    def _pause(self, failures: int) -> float:
        delays = self._config.pauses.poll_retry_s
        return delays[min(failures, len(delays) - 1)]

    async def _poll(self) -> None:
        """Long polling that confirms an update (the next offset) only once it is stored.

        It never ends but by cancellation: a failed poll, an update the library cannot read
        or the database being away each pause it, never stop it.
        """
        offset: int | None = None
        failures = 0
        while True:
            try:
                batch = await self._next_updates(offset)
            except InvalidToken:
                log.error("telegram_polling_stopped reason=token")
                return
            except Exception as exc:  # noqa: BLE001 - network, 5xx, a conflicting poller, a broken answer
                log.warning("telegram_poll_failed error=%s", type(exc).__name__)
                await asyncio.sleep(self._pause(failures))
                failures += 1
                continue
            failures = 0
            for update_id, update in batch:
                if update is not None and not await self._stored(update):
                    await asyncio.sleep(self._pause(failures))
                    failures += 1
                    break  # the same offset again: Telegram hands the update over once more
                offset = update_id + 1

    async def _next_updates(self, offset: int | None) -> list[tuple[int, Update | None]]:
        """The next raw updates, each read on its own: one the library cannot parse is skipped, not fatal."""
        with warnings.catch_warnings():  # PTB prefers get_updates, which fails a whole batch for one update
            warnings.simplefilter("ignore")
            raw = await self._bot.do_api_request(
                "getUpdates", api_kwargs={"offset": offset, "timeout": self._config.poll_timeout_s,
                                          "allowed_updates": ALLOWED_UPDATES},
                read_timeout=self._config.poll_timeout_s + 10)
        found: list[tuple[int, Update | None]] = []
        for data in raw if isinstance(raw, list) else []:
            update_id = data.get("update_id") if isinstance(data, dict) else None
            if type(update_id) is not int:
                continue
            found.append((update_id, self._parse_one(data)))
        return found

    def _parse_one(self, data: dict[str, Any]) -> Update | None:
        try:
            return Update.de_json(data, self._bot)
        except Exception as exc:  # noqa: BLE001 - unreadable: confirmed and dropped, so it cannot block the rest
            log.warning("telegram_update_unreadable update=%s error=%s", data.get("update_id"), type(exc).__name__)
            return None

    async def _stored(self, update: Update) -> bool:
        """Handle the update; False only when it could not be stored but may be later (the database).

        An update that can never be stored (a date no database holds, a malformed field) is
        logged and confirmed, so it cannot hold up every update behind it.
        """
        try:
            await self._process(update)
        except InvalidInput as exc:
            log.warning("telegram_update_refused update=%s reason=%s", update.update_id, type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - the database failed: not stored, so not confirmed
            log.warning("telegram_update_not_stored update=%s error=%s", update.update_id, type(exc).__name__)
            return False
        return True

    async def webhook(self, request: web.Request) -> web.Response:
        """``POST /webhooks/telegram``: check the secret, store the update, then answer 200."""
        if not self._secret_matches(request.headers.get(SECRET_HEADER, "")):
            log.warning("telegram_webhook_refused reason=secret remote=%s", request.remote)
            return web.Response(status=403, text="forbidden")
        update = self._parse(await request.read())
        if update is None:
            return web.Response(status=400, text="malformed update")
        if not await self._stored(update):
            return web.Response(status=503, text="not stored; deliver again")
        return web.Response(status=200)

    def _secret_matches(self, given: str) -> bool:
        secret = self._config.webhook_secret or ""
        # bytes: a header that is not ASCII is simply wrong, never a TypeError
        return bool(secret) and hmac.compare_digest(given.encode("utf-8", "replace"), secret.encode())

    def _parse(self, body: bytes) -> Update | None:
        try:
            data = json.loads(body)
            wellformed = isinstance(data, dict) and type(data.get("update_id")) is int
            update = Update.de_json(data, self._bot) if wellformed else None
        except Exception as exc:  # noqa: BLE001 - any malformed body is the sender's error: 400
            log.warning("telegram_webhook_malformed error=%s", type(exc).__name__)
            return None
        if update is None:
            log.warning("telegram_webhook_malformed error=not_an_update")
        return update

    async def _process(self, update: Update) -> None:
        """Store what the update carries (raises when the database fails); replies go beside."""
        front = self._front
        if front is None:  # the web server listens before the channel starts: not stored, so not acknowledged
            raise RuntimeError("the Telegram channel has not started")
        if not is_private(update):  # groups: one sentence the first time Nod is addressed there, nothing stored
            if addressed_in_group(update, self._bot.id, self._bot.username):
                assert update.effective_chat is not None
                told = await front.group(CHANNEL, str(update.effective_chat.id))
                if told is not None:
                    self._answering.send(update.effective_chat.id, told)
            return
        sender = sender_of(update)
        if sender is None:
            return
        if update.callback_query is not None:
            await self._on_tap(update, front, sender)
            return
        incoming = incoming_message(update, sender) or edited_message(update, sender)
        if incoming is not None:
            self._follow_up(await front.handle(incoming), int(sender.external_id))

    def _follow_up(self, handled: FrontDoorResult, chat_id: int) -> None:
        self._answering.follow_up(handled, chat_id)
        if handled.turn_started and handled.owner is not None:
            self._answering.spawn(self._typing(chat_id, handled.owner.id))

    async def _on_tap(self, update: Update, front: FrontDoor, sender: Identity) -> None:
        if await front.owner_of(sender) is None:
            log.info("telegram_tap_ignored reason=stranger")
            return
        query = update.callback_query
        assert query is not None and update.effective_user is not None
        label = tapped_choice(update)
        if label is None:
            self._answering.spawn(self._acknowledge_tap(update, EXPIRED_CHOICE))
            return
        incoming = Inbound(sender, label, str(update.update_id), update.effective_user.first_name, card_title=True)
        handled = await front.handle(incoming)
        self._answering.spawn(self._acknowledge_tap(update, None))
        self._follow_up(handled, int(sender.external_id))

    async def _acknowledge_tap(self, update: Update, notice: str | None) -> None:
        query = update.callback_query
        assert query is not None
        try:
            await query.answer(notice)
            if notice is None:
                await query.edit_message_reply_markup(None)  # one tap per card
        except TelegramError as exc:
            log.info("telegram_tap_ack_failed error=%s", type(exc).__name__)

    async def _send(self, chat_id: int, text: str) -> None:
        try:
            await self.sender.send(chat_id, text)
        except DeliveryFailed as exc:
            log.warning("telegram_send_failed chat=%s code=%s", chat_id, exc.code)

    async def _typing(self, chat_id: int, owner_id: int) -> None:
        """'typing…' in the chat until the owner's turn ends (Telegram shows it for 5 seconds)."""
        assert self._front is not None
        finished = asyncio.ensure_future(self._front.wait(owner_id))
        try:
            while not finished.done():
                try:
                    await self._bot.send_chat_action(chat_id, ChatAction.TYPING)
                except TelegramError as exc:
                    log.debug("telegram_typing_failed error=%s", type(exc).__name__)
                await asyncio.wait({finished}, timeout=self._config.pauses.typing_every_s)
        finally:
            finished.cancel()
