"""The memory page's Gmail card: Connect, Refresh, Disconnect, and Google's redirect back.

``POST /api/memory/gmail/connect`` answers Google's consent URL for a state bound to this
page session; the browser goes there and Google sends it back to
``GET /oauth/google/callback?state=…&code=…``, which completes the connection only for the
same session (``core.gmail.link``), then shows the page, where the first run is going on.
A consent started by ``nod gmail connect`` has no session: its one-time state is enough,
and the callback answers with a sentence instead of the page. ``refresh`` starts a run,
``disconnect`` revokes the token at Google and deletes it. The routes sit behind the same
session and CSRF checks as every change (``adapters.web.api.route``).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from adapters.web.page import COOKIE, GMAIL_OFF, SERVICES, message_page
from core.errors import NodError, NotFound
from core.gmail.link import GmailLink
from core.owner import Owner
from core.page.access import PAGE_PATH

log = logging.getLogger("nod.web.gmail")
CONNECTED = "Gmail is connected. Nod is learning your writing style from your sent email; you can close this tab."


def _gmail(request: web.Request) -> GmailLink:
    page = request.app[SERVICES]
    if page.gmail is None:
        raise NotFound(GMAIL_OFF)
    return page.gmail


async def connect(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    session = request.app[SERVICES].access.session_hash(request.cookies.get(COOKIE))
    return web.json_response({"url": await _gmail(request).start(owner.id, session)})


async def refresh(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    await _gmail(request).refresh(owner.id)
    return web.json_response({"running": True}, status=202)


async def disconnect(request: web.Request, owner: Owner, _: dict[str, Any]) -> web.Response:
    done = await _gmail(request).disconnect(owner.id)
    return web.json_response({"disconnected": True, "revoked": done.revoked})


async def callback(request: web.Request) -> web.StreamResponse:
    """Google's redirect after the consent screen: connect, or say in one sentence why not."""
    page = request.app[SERVICES]
    if page.gmail is None:
        return message_page(404, "Gmail", GMAIL_OFF)
    cookie = request.cookies.get(COOKIE)
    signed_in = await page.access.owner_of(cookie)
    session = page.access.session_hash(cookie) if signed_in is not None else None
    query = request.query
    try:
        owner_id = await page.gmail.finish(query.get("state"), query.get("code"), query.get("error"), session)
    except NodError as exc:
        return message_page(400, "Gmail", str(exc))
    if signed_in == owner_id:
        raise web.HTTPSeeOther(PAGE_PATH)  # the code leaves the address bar; the page shows the run
    return message_page(200, "Gmail", CONNECTED)
