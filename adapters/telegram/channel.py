"""The Telegram channel: a python-telegram-bot Application around Nod's front door.

Long polling by default. With a webhook URL the application is built with
``updater(None)`` (python-telegram-bot's custom-webhook pattern): Nod's own aiohttp server
receives ``POST /webhooks/telegram``, checks ``X-Telegram-Bot-Api-Secret-Token`` (403
otherwise), puts the update on the application's queue and answers 200 at once.

Updates are handled one at a time, in order, so an owner's messages are stored in the
order they were sent; the slow work runs beside the queue: a turn is a task of the
conductor (the channel shows "typing" until it ends), and a command's answer — a digest
may call the memory model — is sent from a task of its own. A tap on a task-card button
becomes an owner message flagged ``card_title``: the words are Nod's, never evidence for
memory. At start Nod registers its commands so Telegram shows them in the menu.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from telegram import BotCommand, Update
from telegram.constants import ChatAction
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application, ContextTypes, TypeHandler

from adapters.telegram.inbound import incoming_message, is_private, sender_of, tapped_choice
from adapters.telegram.sink import TelegramSender
from core.errors import ConfigError, DeliveryFailed
from core.inbox.commands import COMMANDS, command_name
from core.inbox.front import FrontDoor, Handled, Incoming

log = logging.getLogger("nod.telegram")
ALLOWED_UPDATES = ["message", "callback_query"]
TYPING_EVERY_S = 4.5
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
SLOW_COMMANDS = ("memory", "context")
EXPIRED_CHOICE = "That choice is no longer available."


@dataclass(frozen=True)
class TelegramConfig:
    token: str
    api_base_url: str = "https://api.telegram.org"
    webhook_url: str | None = None
    webhook_secret: str | None = None


def build_application(config: TelegramConfig) -> Application:  # type: ignore[type-arg]
    base = config.api_base_url.rstrip("/")
    builder = (Application.builder().token(config.token).base_url(f"{base}/bot").base_file_url(f"{base}/file/bot")
               .connect_timeout(10).read_timeout(20).write_timeout(20))
    if config.webhook_url:
        builder = builder.updater(None)
    return builder.build()


class TelegramChannel:
    def __init__(self, config: TelegramConfig, application: Application | None = None) -> None:  # type: ignore[type-arg]
        self._config = config
        self.application = application or build_application(config)
        self.sender = TelegramSender(self.application.bot)
        self._front: FrontDoor | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, front: FrontDoor) -> None:
        self._front = front
        app = self.application
        app.add_handler(TypeHandler(Update, self._on_update))
        app.add_error_handler(self._on_error)
        try:
            await app.initialize()
            if self._config.webhook_url:
                await app.bot.set_webhook(self._config.webhook_url, secret_token=self._config.webhook_secret,
                                          allowed_updates=ALLOWED_UPDATES)
        except InvalidToken as exc:
            raise ConfigError("Telegram refused TELEGRAM_BOT_TOKEN; copy it again from @BotFather.") from exc
        except TelegramError as exc:
            raise ConfigError(f"Telegram's Bot API at {self._config.api_base_url} answered: {exc.message}.") from exc
        await self._register_commands()
        if not self._config.webhook_url and app.updater is not None:
            await app.updater.start_polling(allowed_updates=ALLOWED_UPDATES)
        await app.start()
        log.info("telegram_started mode=%s", "webhook" if self._config.webhook_url else "polling")

    async def _register_commands(self) -> None:
        commands = [BotCommand(name, what) for name, what in COMMANDS.items()]
        try:
            await self.sender.retrying("setMyCommands", lambda: self.application.bot.set_my_commands(commands))
        except (DeliveryFailed, TelegramError) as exc:  # the menu is a convenience; Nod still works
            log.warning("telegram_commands_not_registered error=%s", exc)

    async def stop(self) -> None:
        app = self.application
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks))
        await app.shutdown()

    async def webhook(self, request: web.Request) -> web.Response:
        """``POST /webhooks/telegram``: check the secret, queue the update, answer at once."""
        secret = self._config.webhook_secret or ""
        if not secret or not hmac.compare_digest(request.headers.get(SECRET_HEADER, ""), secret):
            log.warning("telegram_webhook_refused reason=secret remote=%s", request.remote)
            return web.Response(status=403, text="forbidden")
        try:
            update = Update.de_json(json.loads(await request.read()), self.application.bot)
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("telegram_webhook_malformed error=%s", type(exc).__name__)
            return web.Response(status=400, text="malformed update")
        await self.application.update_queue.put(update)
        return web.Response(status=200)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not is_private(update):
            return  # groups, supergroups, channels: answer nothing, store nothing
        sender = sender_of(update)
        front = self._front
        if sender is None or front is None:
            return
        if update.callback_query is not None:
            await self._on_tap(update, front)
            return
        incoming = incoming_message(update, sender)
        if incoming is not None:
            await self._hand_over(front, incoming, int(sender.external_id))

    async def _hand_over(self, front: FrontDoor, incoming: Incoming, chat_id: int) -> None:
        if command_name(incoming.text) in SLOW_COMMANDS:  # a digest may call the model: answer beside the queue
            self._spawn(self._answer(front.handle(incoming), chat_id))
            return
        handled = await front.handle(incoming)
        await self._follow_up(handled, chat_id)

    async def _answer(self, handling: Coroutine[Any, Any, Handled], chat_id: int) -> None:
        await self._follow_up(await handling, chat_id)

    async def _follow_up(self, handled: Handled, chat_id: int) -> None:
        if handled.answer:
            self._spawn(self._send(chat_id, handled.answer))
        if handled.turn_started and handled.owner is not None:
            self._spawn(self._typing(chat_id, handled.owner.id))

    async def _on_tap(self, update: Update, front: FrontDoor) -> None:
        query = update.callback_query
        assert query is not None and update.effective_user is not None
        label = tapped_choice(update)
        try:
            await query.answer(None if label else EXPIRED_CHOICE)
            if label is not None:
                await query.edit_message_reply_markup(None)  # one tap per card
        except TelegramError as exc:
            log.info("telegram_tap_ack_failed error=%s", exc)
        if label is None:
            return
        sender = sender_of(update)
        assert sender is not None
        incoming = Incoming(sender, label, str(update.update_id), update.effective_user.first_name, card_title=True)
        await self._follow_up(await front.handle(incoming), int(sender.external_id))

    async def _send(self, chat_id: int, text: str) -> None:
        try:
            await self.sender.send(chat_id, text)
        except DeliveryFailed as exc:
            log.warning("telegram_send_failed chat=%s code=%s error=%s", chat_id, exc.code, exc)

    async def _typing(self, chat_id: int, owner_id: int) -> None:
        """'typing…' in the chat until the owner's turn ends (Telegram shows it for 5 seconds)."""
        assert self._front is not None
        finished = asyncio.ensure_future(self._front.wait(owner_id))
        try:
            while not finished.done():
                try:
                    await self.application.bot.send_chat_action(chat_id, ChatAction.TYPING)
                except TelegramError as exc:
                    log.debug("telegram_typing_failed error=%s", exc)
                await asyncio.wait({finished}, timeout=TYPING_EVERY_S)
        finally:
            finished.cancel()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """python-telegram-bot's error handler: log; nothing reaches the owner from here."""
        log.error("telegram_update_failed", exc_info=context.error)
