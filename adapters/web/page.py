"""Settings → Memory as a page: the sign-in link, the session cookie, the server-rendered HTML.

``GET /settings/memory?t=…`` takes a one-time link (core.page.access), sets the session
cookie — HttpOnly, SameSite=Lax, Secure when the public URL is https, 30 days — and
redirects to the page without the token in the address. The page itself is rendered on
the server from the same view the JSON API serves (``core.page.view``), with a little
JavaScript for the buttons; nothing leaves the server (no external font, script or
image), and every response carries a strict Content-Security-Policy. Without a session the
page says how to get a new link, in one sentence.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web

from core.clock import Clock
from core.errors import NotFound
from core.gmail.link import NOT_CONFIGURED, GmailLink
from core.memory import transfer
from core.memory.render import render_export
from core.owner import Owner
from core.page import find
from core.page.access import PAGE_PATH, SESSION_LIFETIME, PageAccess
from core.page.edits import MemoryEdits
from core.page.view import memory_view
from core.ports import MemoryStore, Messages, OwnerZones, Schedules
from core.schedules.tool import described

log = logging.getLogger("nod.web.page")
COOKIE = "nod_session"
STATIC = Path(__file__).with_name("static")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
GMAIL_OFF = ("Gmail is not set up on this Nod: whoever runs it has not turned the Gmail connection on, "
             "so there is nothing to connect here yet.")  # the operator's sentence (settings) is the CLI's
ANCHOR = re.compile(r"[a-z][a-z0-9-]{0,80}")  # an element id a message may be shown beside
DONE = {  # what a form said, by the code its redirect carries (never text from the address bar)
    "added": "Added.", "saved": "Saved.", "confirmed": "Confirmed.", "forgotten": "Forgotten, with its earlier versions.",
    "restored": "Restored; what stood in its place is in Let go.", "settings": "Settings saved.",
    "skill-saved": "Skill saved.", "skill-forgotten": "Skill forgotten.", "cancelled": "Cancelled.",
    "imported": "Imported the ticked notes.", "restored-backup": "Your memory was imported from the backup file.",
    "gmail-refresh": "Learning your writing style from your sent email…", "gmail-off": "Gmail disconnected.",
}
SIGNED_OUT = ("This page needs a fresh sign-in link: send /settings to Nod on Telegram or WhatsApp "
              "(or run nod page --owner NAME), then open the link within 15 minutes.")


@dataclass(frozen=True)
class PageServices:
    access: PageAccess
    edits: MemoryEdits
    memory: MemoryStore
    owners: OwnerZones
    messages: Messages
    clock: Clock
    secure: bool
    gmail: GmailLink | None = None  # None when Gmail is off; gmail_off says why
    gmail_off: str = ""
    schedules: Schedules | None = None


SERVICES: web.AppKey[PageServices] = web.AppKey("page", PageServices)


@web.middleware
async def security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every page and API answer: no framing, no sniffing, no referrer (a link carries a token), no caching."""
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPException as raised:  # a redirect is raised, and must carry the headers too
        _secured(request, raised)
        raise
    _secured(request, response)
    return response


def _secured(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith(("/settings", "/api/memory", "/oauth")):
        if isinstance(response, web.Response) and not response.prepared and "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression()  # a full memory's page is a tenth of its size compressed
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers.setdefault("Cache-Control", "no-store")


async def signed_in(request: web.Request) -> Owner | None:
    """The owner whose session cookie this request carries, or None."""
    page = request.app[SERVICES]
    owner_id = await page.access.owner_of(request.cookies.get(COOKIE))
    return await page.owners.by_id(owner_id) if owner_id is not None else None


async def _page(request: web.Request) -> web.StreamResponse:
    page = request.app[SERVICES]
    token = request.query.get("t")
    if token is not None:
        signed = await page.access.sign_in(token)
        if signed is None:
            log.info("page_sign_in_refused")
            return _signed_out()
        response = web.HTTPSeeOther(PAGE_PATH)  # the token leaves the address bar and the history
        response.set_cookie(COOKIE, signed[1], max_age=int(SESSION_LIFETIME.total_seconds()), path="/",
                            httponly=True, samesite="Lax", secure=page.secure)
        log.info("page_signed_in owner=%s", signed[0])
        raise response  # aiohttp wants its redirects raised
    owner = await signed_in(request)
    if owner is None:
        return _signed_out()
    done, at = request.query.get("done", ""), request.query.get("at", "")
    flash = {"at": at if ANCHOR.fullmatch(at) else "top", "text": DONE[done], "error": False} if done in DONE else None
    return await render_page(request, owner, flash=flash, editing=request.query.get("edit"))


async def render_page(request: web.Request, owner: Owner, status: int = 200, flash: dict[str, Any] | None = None,
                      values: Mapping[str, str] | None = None, editing: str | None = None,
                      preview_html: str | None = None) -> web.Response:
    """The page, with what the last action said beside the part it changed (``flash``: at, text, error),
    a refused form's values kept in it, the note being edited (``?edit=area/slug``: the no-script edit)
    and an import's preview: what the script does in place, done by the server without it."""
    page = request.app[SERVICES]
    view = find.apply(await full_view(page, owner), find.Filters.read(request.query))
    csrf = page.access.csrf_token(request.cookies.get(COOKIE, ""))
    response = aiohttp_jinja2.render_template("memory.html", request, {
        "view": view, "csrf": csrf, "flash": flash, "values": values or {}, "editing": editing, "preview_html": preview_html,
        "page_path": PAGE_PATH})
    response.set_status(status)
    return response


async def full_view(page: PageServices, owner: Owner) -> dict[str, Any]:
    """The memory view with the Gmail connection's state beside it: what the page and ``GET /api/memory`` show."""
    loaded = await page.memory.load(owner.id)
    view = await memory_view(owner, loaded.document, loaded.version, page.messages, page.clock.now())
    gmail = await page.gmail.status(owner) if page.gmail is not None else {**NOT_CONFIGURED, "off": GMAIL_OFF}
    coming = await page.schedules.active(owner.id) if page.schedules is not None else []
    return {**view, "gmail": gmail, "schedules": [described(s, owner.time_zone) for s in coming]}


def message_page(status: int, title: str, sentence: str) -> web.Response:
    """A page of one sentence (signed out, a Gmail connection refused or done), in the page's own style."""
    body = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
            f"content=\"width=device-width, initial-scale=1\"><title>Nod — {html.escape(title)}</title>"
            "<link rel=\"icon\" href=\"/settings/static/icon.svg\" type=\"image/svg+xml\">"
            "<link rel=\"stylesheet\" href=\"/settings/static/page.css\"></head><body><main class=\"signed-out\">"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(sentence)}</p></main></body></html>")
    return web.Response(status=status, text=body, content_type="text/html")


def _signed_out() -> web.Response:
    return message_page(401, "Memory", SIGNED_OUT)


async def cancel_schedule(request: web.Request, owner: Owner) -> int:
    """Cancel the owner's reminder or task named in the path; another owner's id is as unknown as a made-up one."""
    page, raw = request.app[SERVICES], request.match_info["id"]
    cancelled = None
    if raw.isdecimal() and len(raw) <= 9 and page.schedules is not None:
        cancelled = await page.schedules.cancel(owner.id, int(raw), page.clock.now())
    if cancelled is None:
        raise NotFound("No such reminder or task.")
    return cancelled.id


async def export(request: web.Request, owner: Owner) -> web.Response:
    page = request.app[SERVICES]
    markdown = render_export((await page.memory.load(owner.id)).document, owner.name)
    return web.Response(text=markdown, content_type="text/markdown", charset="utf-8",
                        headers={"Content-Disposition": 'attachment; filename="nod-memory.md"'})


async def export_json(request: web.Request, owner: Owner) -> web.Response:
    """The lossless backup (``nod memory export --json``): what the page's backup import takes back."""
    page = request.app[SERVICES]
    if page.schedules is None:
        raise NotFound("The backup needs the reminders' store, which this server does not have.")
    text = await transfer.export_text(owner, page.memory, page.schedules)
    return web.Response(text=text, content_type="application/json", charset="utf-8",
                        headers={"Content-Disposition": 'attachment; filename="nod-memory.json"'})


class _CompiledOnce(jinja2.BytecodeCache):
    """The templates' compiled code, kept for the process. Each web application has a jinja
    environment of its own (aiohttp_jinja2 keeps the app in it), and compiling memory.html costs
    about 35 ms of CPU; jinja checks an entry against the template's source before using it."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED = _CompiledOnce()


def mount(app: web.Application, services: PageServices) -> None:
    """The page's routes on Nod's web application (the JSON API is mounted beside, adapters.web.api)."""
    app[SERVICES] = services
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                         autoescape=jinja2.select_autoescape(default=True), bytecode_cache=_COMPILED)
    app.router.add_get(PAGE_PATH, _page)
    app.router.add_static("/settings/static", STATIC, append_version=False)
