"""The memory page's JSON API under ``/api/memory``: the same view and edits as the page.

Every route needs the owner's page session (401 otherwise); every state-changing one also
needs the CSRF token the page was given, in ``X-CSRF-Token`` (403 otherwise). A session
reaches only its own owner's memory, so another owner's paths and ids are simply not there
(404). Errors are ``{"error": sentence}``: 400 for a malformed request or a rule (a card
number typed into a note), 404, 409 for an edit of a version that changed since the page
showed it (with ``current``), 413 for a body over 1 MiB or a full memory, 502 when Google
did not answer (Gmail), 503 when the database is away. Shapes are documented in docs/page.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from adapters.web import gmail
from adapters.web.page import COOKIE, SERVICES, cancel_schedule, export, export_json, full_view, signed_in
from core.errors import Conflict, EditedElsewhere, InvalidInput, MailError, MemoryFull, NodError, NotFound, StorageError
from core.gmail.values import CALLBACK_PATH
from core.memory.values import AREA_TITLES
from core.owner import Owner

log = logging.getLogger("nod.web.api")
BASE = "/api/memory"
Route = Callable[[web.Request, Owner, dict[str, Any]], Awaitable[web.StreamResponse]]


def _error(status: int, sentence: str, **extra: Any) -> web.Response:
    return web.json_response({"error": sentence, **extra}, status=status)


def _fail(exc: NodError) -> web.Response:
    if isinstance(exc, EditedElsewhere):
        return _error(409, str(exc), current=exc.current)
    if isinstance(exc, NotFound):
        return _error(404, str(exc))
    if isinstance(exc, Conflict):
        return _error(409, str(exc))
    if isinstance(exc, MemoryFull):
        return _error(413, str(exc))
    if isinstance(exc, StorageError):
        return _error(503, "The database is not answering; try again in a moment.")
    if isinstance(exc, MailError):
        return _error(502, str(exc))
    return _error(400, str(exc))


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        data = json.loads(await request.read())
    except ValueError as exc:
        raise InvalidInput("The request body is not JSON.") from exc
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.")
    return data


def _text(body: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"`{name}` must be text.")
    return value


def _flag(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise InvalidInput(f"`{name}` must be true or false.")
    return value


def route(handler: Route, changes: bool) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler behind the session (and, when it changes something, the CSRF token)."""
    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            owner = await signed_in(request)
            if owner is None:
                return _error(401, "Sign in first: send /settings to Nod for a link.")
            if changes and not request.app[SERVICES].access.csrf_ok(request.cookies.get(COOKIE),
                                                                      request.headers.get("X-CSRF-Token")):
                return _error(403, "This request is missing the page's CSRF token; reload the page.")
            return await handler(request, owner, await _body(request) if changes else {})
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "The request is too large (at most 1 MiB).")
        except NodError as exc:
            return _fail(exc)
    return guarded


def _path(request: web.Request) -> str:
    return f"{request.match_info['area']}/{request.match_info['slug']}"


async def _view(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    return web.json_response(await full_view(request.app[SERVICES], owner))


async def _export(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    return await export(request, owner)


async def _export_json(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    return await export_json(request, owner)


async def _add(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    path = await request.app[SERVICES].edits.add(owner, _text(body, "path") or "", _text(body, "text") or "",
                                                 _text(body, "abstract", False), _text(body, "expires", False))
    return web.json_response({"saved": path}, status=201)


async def _rewrite(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    path = await request.app[SERVICES].edits.rewrite(owner, _path(request), _text(body, "etag", False),
                                                     _text(body, "text") or "", _text(body, "abstract", False),
                                                     _text(body, "expires", False))
    return web.json_response({"saved": path})


async def _confirm(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    await request.app[SERVICES].edits.confirm(owner, _path(request), _text(body, "etag", False))
    return web.json_response({"confirmed": _path(request)})


async def _forget(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    await request.app[SERVICES].edits.forget(owner, _path(request), _text(body, "etag", False))
    return web.json_response({"forgotten": _path(request)})


async def _restore(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    raw = request.match_info["index"]
    if not raw.isdecimal() or len(raw) > 6:
        raise NotFound("No such archived version.")
    path = await request.app[SERVICES].edits.restore(owner, int(raw), _text(body, "etag", False))
    return web.json_response({"restored": path})


async def _edit_skill(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    name = request.match_info["name"]
    await request.app[SERVICES].edits.edit_skill(owner, name, _text(body, "etag", False),
                                                 _text(body, "description") or "", _text(body, "body") or "")
    return web.json_response({"saved": name})


async def _forget_skill(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    name = request.match_info["name"]
    await request.app[SERVICES].edits.forget_skill(owner, name, _text(body, "etag", False))
    return web.json_response({"forgotten": name})


async def _cancel_schedule(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    return web.json_response({"cancelled": await cancel_schedule(request, owner)})


async def _settings(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    now = await request.app[SERVICES].edits.settings(owner, _flag(body, "saving_enabled"), _flag(body, "remember_sensitive"))
    return web.json_response({"saving_enabled": now.settings.saving_enabled,
                              "remember_sensitive": now.settings.remember_sensitive})


async def _preview(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    notes = await request.app[SERVICES].edits.preview_import(owner, _text(body, "text") or "")
    return web.json_response({"notes": [{**note, "title": AREA_TITLES[note["area"]]} for note in notes]})


async def _import(request: web.Request, owner: Owner, body: dict[str, Any]) -> web.Response:
    notes = body.get("notes")
    if not isinstance(notes, list) or not all(isinstance(n, dict) for n in notes):
        raise InvalidInput("`notes` must be a list of {area, text}.")
    chosen = [(str(n.get("area", "")), _text(n, "text") or "") for n in notes]
    result = await request.app[SERVICES].edits.import_notes(owner, chosen)
    return web.json_response({"saved": list(result.saved),
                              "skipped": [{"text": text, "reason": why} for text, why in result.skipped]})


def mount(app: web.Application) -> None:
    """The JSON API's routes (the page's services are mounted first, adapters.web.page.mount)."""
    note = BASE + "/notes/{area}/{slug}"
    for method, path, handler, changes in (
        ("GET", BASE, _view, False), ("GET", BASE + "/export", _export, False),
        ("GET", BASE + "/export.json", _export_json, False),
        ("POST", BASE + "/notes", _add, True), ("PUT", note, _rewrite, True),
        ("POST", note + "/confirm", _confirm, True), ("DELETE", note, _forget, True),
        ("POST", BASE + "/archive/{index}/restore", _restore, True),
        ("PUT", BASE + "/skills/{name}", _edit_skill, True), ("DELETE", BASE + "/skills/{name}", _forget_skill, True),
        ("PUT", BASE + "/settings", _settings, True), ("DELETE", BASE + "/schedules/{id}", _cancel_schedule, True),
        ("POST", BASE + "/import/preview", _preview, True), ("POST", BASE + "/import", _import, True),
        ("POST", BASE + "/gmail/connect", gmail.connect, True), ("POST", BASE + "/gmail/refresh", gmail.refresh, True),
        ("POST", BASE + "/gmail/disconnect", gmail.disconnect, True),
    ):
        app.router.add_route(method, path, route(handler, changes))
    app.router.add_get(CALLBACK_PATH, gmail.callback)
