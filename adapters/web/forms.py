"""The memory page's forms: every change the page makes, as a plain HTML form post.

Each form posts to a route here with the page's CSRF token in a hidden ``csrf`` field, so
the page works without its script: a change answers 303 back to the page, which says what
happened beside the part it changed (``?done=code&at=element-id``: a fixed sentence per
code, never text from the address); a refusal renders the page again with the sentence
beside the form, styled as an error, and what was typed kept in it. The page's script posts
the same forms with ``X-Nod-Inline: 1`` and gets ``{said, at}`` or ``{error, at}`` instead,
so it can show the answer in place without a reload. The rules are the edits' own
(``core.page.edits``); the session, CSRF and owner scoping are the JSON API's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from multidict import MultiDictProxy

from adapters.web.page import (
    COOKIE,
    DONE,
    GMAIL_OFF,
    SERVICES,
    SIGNED_OUT,
    cancel_schedule,
    message_page,
    render_page,
    signed_in,
)
from core.errors import Conflict as ConflictError
from core.errors import (
    EditedElsewhere,
    InvalidInput,
    MailError,
    MemoryFull,
    NodError,
    NotFound,
    StorageError,
)
from core.memory import transfer
from core.memory.values import AREA_TITLES
from core.owner import Owner
from core.page.access import PAGE_PATH

log = logging.getLogger("nod.web.forms")
Form = MultiDictProxy[str | bytes | Any]


@dataclass(frozen=True)
class Done:
    code: str  # a key of page.DONE: what the page says after the redirect
    at: str  # the element the sentence is shown beside
    said: str | None = None  # a fuller sentence for the script's answer (counts, names)
    go: str | None = None  # where the browser goes instead of the page (Google's consent screen)
    html: str | None = None  # a part of the page to show (an import's preview)


Action = Callable[[web.Request, Owner, Form], Awaitable[Done]]


def note_id(path: str) -> str:
    return "n-" + path.replace("/", "-")


def _status(exc: NodError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, MemoryFull):
        return 413
    if isinstance(exc, StorageError):
        return 503
    if isinstance(exc, MailError):
        return 502
    return 400


def _sentence(exc: NodError) -> str:
    if isinstance(exc, EditedElsewhere):
        return "This changed since the page showed it (in chat or another tab); here it is as it is now."
    if isinstance(exc, StorageError):
        return "The database is not answering; try again in a moment."
    return str(exc)


def _field(form: Form, name: str) -> str:
    value = form.get(name, "")
    return value if isinstance(value, str) else ""


def _path(request: web.Request) -> str:
    return f"{request.match_info['area']}/{request.match_info['slug']}"


def _quoted(name: str) -> str:
    return f"‘{name}’"


async def _add(request: web.Request, owner: Owner, form: Form) -> Done:
    area, slug = _field(form, "area"), _field(form, "slug").strip()
    if not slug:
        raise InvalidInput("Give the note a short name, such as sister.")
    await request.app[SERVICES].edits.add(owner, f"{area}/{slug}", _field(form, "text"), None, None)
    return Done("added", "add", f"Added {_quoted(slug)} to {AREA_TITLES[area]}.")


async def _rewrite(request: web.Request, owner: Owner, form: Form) -> Done:
    path = await request.app[SERVICES].edits.rewrite(
        owner, _path(request), _field(form, "etag"), _field(form, "text"), _field(form, "abstract") or None,
        _field(form, "expires") or None)
    return Done("saved", note_id(path), "Saved; the earlier version is in Let go.")


async def _confirm(request: web.Request, owner: Owner, form: Form) -> Done:
    await request.app[SERVICES].edits.confirm(owner, _path(request), _field(form, "etag"))
    return Done("confirmed", note_id(_path(request)), "Confirmed.")


async def _forget(request: web.Request, owner: Owner, form: Form) -> Done:
    await request.app[SERVICES].edits.forget(owner, _path(request), _field(form, "etag"))
    area, _, slug = _path(request).partition("/")
    return Done("forgotten", f"sec-{area}", f"Forgot {_quoted(slug)} and its earlier versions.")


async def _restore(request: web.Request, owner: Owner, form: Form) -> Done:
    raw = request.match_info["index"]
    if not raw.isdecimal() or len(raw) > 6:
        raise NotFound("No such archived version.")
    path = await request.app[SERVICES].edits.restore(owner, int(raw), _field(form, "etag"))
    area, _, slug = path.partition("/")
    return Done("restored", "archive", f"Restored {_quoted(slug)} to {AREA_TITLES[area]}; "
                "what stood in its place, if anything, is in Let go.")


async def _edit_skill(request: web.Request, owner: Owner, form: Form) -> Done:
    name = request.match_info["name"]
    await request.app[SERVICES].edits.edit_skill(owner, name, _field(form, "etag"), _field(form, "description"),
                                                 _field(form, "body"))
    return Done("skill-saved", f"skill-{name}", "Skill saved.")


async def _forget_skill(request: web.Request, owner: Owner, form: Form) -> Done:
    name = request.match_info["name"]
    await request.app[SERVICES].edits.forget_skill(owner, name, _field(form, "etag"))
    return Done("skill-forgotten", "skills", f"Forgot the skill {_quoted(name)}.")


async def _settings(request: web.Request, owner: Owner, form: Form) -> Done:
    saving, sensitive = "saving_enabled" in form, "remember_sensitive" in form  # an unticked box is not sent
    await request.app[SERVICES].edits.settings(owner, saving, sensitive)
    said = "Saved. " + ("Nod saves what you tell it to remember." if saving else
                        "Saving is off: Nod saves nothing new until you turn it back on.")
    return Done("settings", "settings", said)


async def _cancel_schedule(request: web.Request, owner: Owner, form: Form) -> Done:
    await cancel_schedule(request, owner)
    return Done("cancelled", "schedules", "Cancelled.")


async def _preview(request: web.Request, owner: Owner, form: Form) -> Done:
    notes = await request.app[SERVICES].edits.preview_import(owner, _field(form, "text"))
    for note in notes:
        note["title"] = AREA_TITLES[note["area"]]
    csrf = request.app[SERVICES].access.csrf_token(request.cookies.get(COOKIE, ""))
    html = aiohttp_jinja2.render_string("candidates.html", request, {"preview": notes, "csrf": csrf})
    found = len(notes)
    said = (f"{found} note{'s' if found != 1 else ''} found; untick what you do not want." if found
            else "No notes found in that text.")
    return Done("", "import", said, html=html)


async def _import(request: web.Request, owner: Owner, form: Form) -> Done:
    chosen = []
    for value in form.getall("note", []):
        area, sep, text = str(value).partition(":")
        if not sep:
            raise InvalidInput("A ticked note is not of the form area:text; preview again.")
        chosen.append((area, text))
    result = await request.app[SERVICES].edits.import_notes(owner, chosen)
    saved = len(result.saved)
    said = f"Imported {saved} note{'s' if saved != 1 else ''}."
    if result.skipped:
        said += " Skipped: " + "; ".join(f"{text} ({why})" for text, why in result.skipped) + "."
    return Done("imported", "import", said)


async def _restore_backup(request: web.Request, owner: Owner, form: Form) -> Done:
    upload = form.get("file")
    raw = getattr(upload, "file", None)
    if raw is None:
        raise InvalidInput("Choose a backup file (nod-memory.json) first.")
    try:
        text = raw.read().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("That file is not a Nod backup: it is not UTF-8 text.") from None
    page = request.app[SERVICES]
    if page.schedules is None:
        raise NotFound("The backup needs the reminders' store, which this server does not have.")
    done = await transfer.import_text(owner, text, "replace" in form, page.memory, page.owners, page.schedules,
                                      page.clock, "tick “Replace my current memory” to replace them")
    return Done("restored-backup", "backup", done.sentence(owner.name))


async def _gmail(request: web.Request, owner: Owner, form: Form) -> Done:
    page, what = request.app[SERVICES], request.match_info["what"]
    if page.gmail is None:
        raise NotFound(GMAIL_OFF)
    if what == "connect":
        url = await page.gmail.start(owner.id, page.access.session_hash(request.cookies.get(COOKIE)))
        return Done("", "gmail", "Opening Google…", go=url)
    if what == "refresh":
        await page.gmail.refresh(owner.id)
        return Done("gmail-refresh", "gmail", DONE["gmail-refresh"])
    if what == "disconnect":
        revoked = (await page.gmail.disconnect(owner.id)).revoked
        return Done("gmail-off", "gmail", "Gmail disconnected; Google revoked Nod's access." if revoked else
                    "Gmail disconnected here; Google did not confirm the revocation, so remove Nod under your "
                    "Google Account's third-party access.")
    raise NotFound("No such Gmail action.")


def _where_refused(request: web.Request, action: Action) -> str:
    """The element a refusal is shown beside: the form's own part of the page."""
    info = request.match_info
    if "slug" in info:
        return note_id(_path(request))
    if "index" in info:
        return "old-" + info["index"] if info["index"].isdecimal() else "archive"
    if "name" in info:
        return "skill-" + info["name"]
    return {_add: "add", _settings: "settings", _cancel_schedule: "schedules", _preview: "import", _import: "import",
            _restore_backup: "backup", _gmail: "gmail"}.get(action, "top")


def posted(action: Action) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """``action`` behind the session and the form's CSRF field; a redirect, a page or the script's JSON."""
    async def handler(request: web.Request) -> web.StreamResponse:
        inline = request.headers.get("X-Nod-Inline") == "1"
        page = request.app[SERVICES]
        owner = await signed_in(request)
        if owner is None:
            return web.json_response({"error": SIGNED_OUT, "at": "top"}, status=401) if inline else \
                message_page(401, "Memory", SIGNED_OUT)
        try:
            form = await request.post()
        except web.HTTPRequestEntityTooLarge:
            return await _refused(request, owner, inline, 413, "The file or text is too large (at most 1 MiB).", "top", None)
        token = form.get("csrf")
        if not page.access.csrf_ok(request.cookies.get(COOKIE), token if isinstance(token, str) else None):
            sentence = "This form is missing the page's CSRF token; reload the page."
            return web.json_response({"error": sentence, "at": "top"}, status=403) if inline else \
                message_page(403, "Memory", sentence)
        try:
            done = await action(request, owner, form)
        except NodError as exc:
            log.info("page_form_refused action=%s error=%s", action.__name__, type(exc).__name__)
            return await _refused(request, owner, inline, _status(exc), _sentence(exc), _where_refused(request, action),
                                  form)
        if inline:
            return web.json_response({"said": done.said or DONE.get(done.code, "Done."), "at": done.at,
                                      "go": done.go, "html": done.html})
        if done.go:
            raise web.HTTPSeeOther(done.go)
        if done.html is not None:  # the preview: the page again, with the candidates in the import card
            flash = {"at": done.at, "text": done.said, "error": False}
            return await render_page(request, owner, flash=flash, preview_html=done.html)
        raise web.HTTPSeeOther(f"{PAGE_PATH}?done={done.code}&at={done.at}#{done.at}")
    return handler


async def _refused(request: web.Request, owner: Owner, inline: bool, status: int, sentence: str, at: str,
                   form: Form | None) -> web.Response:
    if inline:
        return web.json_response({"error": sentence, "at": at}, status=status)
    values = {k: v for k, v in (form or {}).items() if isinstance(v, str) and k != "csrf"}
    editing = _path(request) if "slug" in request.match_info and "text" in values else None
    return await render_page(request, owner, status, flash={"at": at, "text": sentence, "error": True},
                             values=values, editing=editing)


def mount(app: web.Application) -> None:
    """The forms' routes beside the page (adapters.web.page.mount first)."""
    note = PAGE_PATH + "/note/{area}/{slug}"
    for path, action in (
        ("/add", _add), ("/settings", _settings), ("/import/preview", _preview), ("/import", _import),
        ("/backup", _restore_backup), ("/gmail/{what}", _gmail), ("/schedule/{id}/cancel", _cancel_schedule),
        ("/archive/{index}/restore", _restore), ("/skill/{name}/edit", _edit_skill),
        ("/skill/{name}/forget", _forget_skill),
    ):
        app.router.add_post(PAGE_PATH + path, posted(action))
    for verb, action in (("edit", _rewrite), ("confirm", _confirm), ("forget", _forget)):
        app.router.add_post(f"{note}/{verb}", posted(action))
