"""A fake Telegram Bot API on 127.0.0.1, spoken to by python-telegram-bot itself.

It answers the methods Nod uses (getMe, setMyCommands, deleteWebhook, setWebhook,
getUpdates, sendMessage, sendChatAction, answerCallbackQuery, editMessageReplyMarkup)
the way Telegram does, records every call, queues updates for long polling, and can be
told to fail a method next (``fail("sendMessage", 429, retry_after=1)``). sendMessage
checks its text as Telegram does: with ``parse_mode=HTML`` the markup is parsed by
Telegram's rules (``tests.fakes.telegram_html``: its tags only, balanced) and refused with
400 "Bad Request: can't parse entities: …" otherwise; more than 4,096 characters of
visible text, or none, is refused too. The message sent back carries the visible text and
its entities, as Telegram's does; ``messages`` keeps them. Files a test adds (``add_file``)
are served as Telegram does: ``getFile`` gives their path and size,
``GET /file/bot<token>/<path>`` their bytes. The helpers at the bottom build update JSON
as Telegram sends it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import serve
from tests.fakes.telegram_html import EntityError, Parsed, parse_html

TOKEN = "123456:TEST-token"
BOT_ID = 123456
_JSON_FIELDS = ("reply_markup", "commands", "allowed_updates")
MESSAGE_LIMIT = 4_096  # characters of visible text


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class FakeTelegramServer:
    token: str = TOKEN
    calls: list[Call] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # what sendMessage answered, as Telegram does
    _updates: list[dict[str, Any]] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _called: asyncio.Event = field(default_factory=asyncio.Event)
    _failures: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1000))
    _runner: web.AppRunner | None = None
    port: int = 0
    files: dict[str, tuple[bytes, str, int]] = field(default_factory=dict)  # file_id -> bytes, path, declared size
    downloads: list[str] = field(default_factory=list)  # the file paths fetched
    # awaited with each getUpdates offset before answering: a test checks what is stored by then
    before_poll: Callable[[int], Awaitable[None]] | None = None
    held: asyncio.Event | None = None  # set: file downloads wait for it (a download a crash cuts short)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeTelegramServer:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        app.router.add_get("/bot{token}/{method}", self._handle)  # Telegram takes GET too (nod doctor's getMe)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def push(self, update: dict[str, Any]) -> None:
        """Queue an update for getUpdates (long polling)."""
        self._updates.append(update)
        self._arrived.set()

    def add_file(self, file_id: str, data: bytes, declared_size: int | None = None, folder: str = "voice",
                 ending: str = "oga") -> None:
        """A file getFile answers for; ``declared_size`` is what it says (the real size by default)."""
        path = f"{folder}/file_{len(self.files)}.{ending}"
        self.files[file_id] = (data, path, len(data) if declared_size is None else declared_size)

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        self.downloads.append(path)
        self._called.set()
        if self.held is not None:
            await self.held.wait()
        for data, stored, _ in self.files.values():
            if stored == path:
                return web.Response(body=data, content_type="audio/ogg")
        return web.Response(status=404)

    def fail(self, method: str, status: int, retry_after: int | None = None, description: str = "error") -> None:
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        self._failures.setdefault(method, []).append((status, body))

    async def wait_for_download(self, count: int = 1, timeout: float = 15.0) -> list[str]:
        """Until ``count`` file downloads began, or TimeoutError."""
        async def enough() -> None:
            while len(self.downloads) < count:
                self._called.clear()
                await self._called.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.downloads

    def of(self, method: str) -> list[dict[str, Any]]:
        return [c.params for c in self.calls if c.method == method]

    def texts(self, chat_id: int | None = None) -> list[str]:
        return [p["text"] for p in self.of("sendMessage") if chat_id is None or int(p["chat_id"]) == chat_id]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Until ``count`` calls of ``method`` arrived (woken by each call), or TimeoutError."""
        async def enough() -> None:
            while len(self.of(method)) < count:
                self._called.clear()
                await self._called.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.of(method)

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        form = dict(await request.post()) if request.can_read_body else {}
        params = {k: json.loads(v) if k in _JSON_FIELDS else v for k, v in form.items()}
        self.calls.append(Call(method, params))
        self._called.set()
        failures = self._failures.get(method)
        if failures:
            status, body = failures.pop(0)
            return web.json_response(body, status=status)
        if method == "sendMessage":
            try:
                parsed = _message_text(params)
            except EntityError as exc:
                return web.json_response({"ok": False, "error_code": 400, "description": f"Bad Request: {exc}"}, status=400)
            return web.json_response({"ok": True, "result": self._sent(params, parsed)})
        try:
            return web.json_response({"ok": True, "result": await self._result(method, params)})
        except _BadRequest as exc:
            return web.json_response({"ok": False, "error_code": 400, "description": str(exc)}, status=400)

    def _sent(self, params: dict[str, Any], parsed: Parsed) -> dict[str, Any]:
        chat = {"id": int(params["chat_id"]), "type": "private", "first_name": "Owner"}
        message = {"message_id": next(self._ids), "date": 1_764_750_000, "chat": chat, "text": parsed.text}
        if parsed.entities:
            message["entities"] = parsed.entities
        if "reply_markup" in params:
            message["reply_markup"] = params["reply_markup"]
        self.messages.append(message)
        return message

    async def _result(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getMe":
            return {"id": BOT_ID, "is_bot": True, "first_name": "Nod", "username": "NodTestBot",
                    "can_join_groups": False, "can_read_all_group_messages": False, "supports_inline_queries": False}
        if method == "getUpdates":
            offset = int(params.get("offset", 0) or 0)
            if self.before_poll is not None:
                await self.before_poll(offset)
            return await self._poll(offset)
        if method == "getFile":
            found = self.files.get(str(params.get("file_id")))
            if found is None:
                raise _BadRequest("Bad Request: invalid file_id")
            data, path, size = found
            if size > 20 * 1024 * 1024:
                raise _BadRequest("Bad Request: file is too big")
            return {"file_id": params["file_id"], "file_unique_id": f"u{params['file_id']}", "file_size": size,
                    "file_path": path}
        return True

    async def _poll(self, offset: int) -> list[dict[str, Any]]:
        ready = [u for u in self._updates if u["update_id"] >= offset]
        if not ready:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), 0.2)
            except TimeoutError:
                return []
            ready = [u for u in self._updates if u["update_id"] >= offset]
        return ready


def _message_text(params: dict[str, Any]) -> Parsed:
    """The text as Telegram reads it (EntityError carries its refusal, after "Bad Request: ")."""
    text = str(params.get("text", ""))
    if str(params.get("parse_mode", "")).upper() == "HTML":
        try:
            parsed = parse_html(text)
        except EntityError as exc:
            raise EntityError(f"can't parse entities: {exc}") from exc
    else:
        parsed = Parsed(text)
    if not parsed.text.strip():
        raise EntityError("message text is empty")
    if len(parsed.text) > MESSAGE_LIMIT:
        raise EntityError("message is too long")
    return parsed


class _BadRequest(Exception):
    """A method's 400 answer, with Telegram's description."""


def _chat(user_id: int, chat_type: str) -> dict[str, Any]:
    if chat_type == "private":
        return {"id": user_id, "type": "private", "first_name": "Maya"}
    return {"id": -100_000 - user_id, "type": chat_type, "title": "Family"}


def message_update(update_id: int, user_id: int, text: str | None = None, *, chat_type: str = "private",
                   **extra: Any) -> dict[str, Any]:
    """An update carrying a message; ``extra`` adds fields (caption, photo, forward_origin…)."""
    message: dict[str, Any] = {
        "message_id": update_id, "date": int(time.time()), "chat": _chat(user_id, chat_type),
        "from": {"id": user_id, "is_bot": False, "first_name": "Maya"},
    }
    if text is not None:
        message["text"] = text
        if text.startswith("/"):
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    message.update(extra)
    return {"update_id": update_id, "message": message}


def callback_update(update_id: int, user_id: int, data: str, sent: dict[str, Any]) -> dict[str, Any]:
    """A tap on an inline button of ``sent`` (a sendMessage call's parameters)."""
    message = {"message_id": 77, "date": 1_764_750_000, "chat": _chat(user_id, "private"),
               "from": {"id": BOT_ID, "is_bot": True, "first_name": "Nod"}, "text": sent["text"],
               "reply_markup": sent["reply_markup"]}
    query = {"id": f"cb{update_id}", "from": {"id": user_id, "is_bot": False, "first_name": "Maya"},
             "chat_instance": "ci", "data": data, "message": message}
    return {"update_id": update_id, "callback_query": query}


def voice_update(update_id: int, user_id: int, file_id: str, *, duration: int = 4, file_size: int | None = None,
                 **extra: Any) -> dict[str, Any]:
    """An update carrying a voice message (OGG Opus, as Telegram's apps record it)."""
    voice: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u{file_id}", "duration": duration,
                             "mime_type": "audio/ogg"}
    if file_size is not None:
        voice["file_size"] = file_size
    return message_update(update_id, user_id, voice=voice, **extra)


def photo_update(update_id: int, user_id: int, file_id: str, *, width: int = 1280, height: int = 960,
                 file_size: int | None = None, caption: str | None = None, **extra: Any) -> dict[str, Any]:
    """An update carrying a photo, as Telegram sends one: its sizes smallest first, the caption beside."""
    sizes: list[dict[str, Any]] = [{"file_id": f"{file_id}-small", "file_unique_id": f"u{file_id}s", "width": 90,
                                    "height": 68, "file_size": 1_200}]
    largest: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u{file_id}", "width": width, "height": height}
    if file_size is not None:
        largest["file_size"] = file_size
    if caption is not None:
        extra["caption"] = caption
    return message_update(update_id, user_id, photo=[*sizes, largest], **extra)


def document_update(update_id: int, user_id: int, file_id: str, file_name: str, mime_type: str, *,
                    file_size: int | None = None, caption: str | None = None, **extra: Any) -> dict[str, Any]:
    """An update carrying a file sent as a document (an image file, a PDF, a text file)."""
    document: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_name": file_name,
                                "mime_type": mime_type}
    if file_size is not None:
        document["file_size"] = file_size
    if caption is not None:
        extra["caption"] = caption
    return message_update(update_id, user_id, document=document, **extra)


def edited_update(update_id: int, user_id: int, message_id: int, text: str) -> dict[str, Any]:
    """An ``edited_message`` update: new words for the message ``message_id`` the owner sent."""
    edited = message_update(message_id, user_id, text)["message"]
    edited["edit_date"] = int(time.time())
    return {"update_id": update_id, "edited_message": edited}
