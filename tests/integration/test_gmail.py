"""Gmail writing style end to end: Google's libraries against a fake Google, the page, the database file.

The OAuth flow runs through google-auth-oauthlib and google-auth against
``tests/fakes/google_server.py``; the mail is read over HTTP from its Gmail API; the style
comes from the scripted memory model. Each rule of the issue has a test that fails when the
rule is broken, most of all: nothing from an email is kept anywhere.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select, text

from adapters.storage.schema import gmail_connections
from bot import cli_gmail
from core.gmail.style import STYLE_PATH
from core.gmail.values import SCOPE
from core.memory import document as ops
from core.memory.render import render_index
from core.memory.values import EMAIL_STYLE_LABEL, ArchiveReason, Origin, Status
from tests.fakes.google_server import CLIENT_ID, FakeGoogleServer, mail
from tests.fakes.model_server import FakeModelServer, structured
from tests.integration.gmail_harness import GmailSite, make_gmail_site, query_of
from tests.integration.harness import MEMORY, START
from tests.integration.page_harness import PageClient

OWN = ("Hi Ana,\n\nThanks for the notes from the workshop. I'll send the revised draft by Friday afternoon.\n\n"
       "Best,\nMaya")
QUOTED = ("On Mon, 30 Nov 2026 at 09:12, Ana Silva <ana.silva@example.org> wrote:\n"
          "> Could you look at the lighthouse budget before the board meets?\n> Ana\n")
SHORT = "Hey Rui - quick one: can we move our call to the morning? Cheers, Maya"
STYLE = ("Writes short, warm emails in English. Greets with Hi or Hey and a first name; signs off with Best or Cheers. "
         "Informal and direct, brief paragraphs, contractions, dashes, few exclamation marks.")
NEVER_KEPT = ("revised draft", "lighthouse budget", "orchard invoice", "harvest festival", "rowing club", "move our call",
              "ana.silva@example.org")


def _mailbox(google: FakeGoogleServer) -> None:
    google.send(
        mail(OWN + "\n\n" + QUOTED, subject="Re: Workshop"),
        mail(SHORT, subject="Call", to="Rui Sousa <rui@example.net>"),
        mail("FYI\n\n---------- Forwarded message ---------\nFrom: Billing <billing@farm.example>\n"
             "The orchard invoice is attached.", subject="Fwd: orchard invoice"),
        mail("Out of office until the harvest festival.", subject="Automatic reply: Hello",
             headers={"Auto-Submitted": "auto-replied"}),
        mail("Maya Costa has accepted this invitation.", subject="Accepted: Planning", calendar=True),
        mail("Weekly notes of the rowing club", subject="Club news",
             headers={"List-Unsubscribe": "<mailto:leave@club.example>", "Precedence": "bulk"}),
    )


@pytest.fixture
async def gmail(tmp_path: Path, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[GmailSite]:
    async for running in make_gmail_site(tmp_path, server, monkeypatch):
        _mailbox(running.google)
        yield running


@pytest.fixture
async def maya(gmail: GmailSite) -> AsyncIterator[PageClient]:
    client = await gmail.site.client()
    try:
        yield client
    finally:
        await client.http.close()


def _style(server: FakeModelServer, *styles: str) -> None:
    server.enqueue(MEMORY, *(structured({"style": s}) for s in styles), purpose="writing_style")


async def _view(client: PageClient) -> dict[str, Any]:
    status, view = await client.call("GET", "/api/memory")
    assert status == 200
    return view  # type: ignore[no-any-return]


def _entry(view: dict[str, Any], path: str = STYLE_PATH) -> dict[str, Any] | None:
    return next((e for a in view["areas"] for e in a["entries"] if e["path"] == path), None)


async def test_connect_sends_the_owner_to_googles_consent_with_state_and_learns_the_style(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer) -> None:
    _style(server, STYLE)
    url = await gmail.consent_url(maya)
    asked = query_of(url)
    assert url.startswith(gmail.google.base_url + "/o/oauth2/auth?")
    assert asked["client_id"] == CLIENT_ID and asked["scope"] == SCOPE  # gmail.readonly and nothing else
    assert asked["redirect_uri"] == "http://127.0.0.1/oauth/google/callback"
    assert (asked["access_type"], asked["prompt"], asked["code_challenge_method"]) == ("offline", "consent", "S256")
    assert len(asked["state"]) >= 32
    back = await gmail.follow(maya, url)
    assert (back.status, back.location) == (303, "/settings/memory")
    report = await gmail.finished()
    assert report is not None and report.saved and (report.sampled, report.skipped) == (2, 4)

    view = await _view(maya)
    entry = _entry(view)
    assert entry is not None and entry["text"] == STYLE
    assert (entry["origin"], entry["status"], entry["label"]) == ("email", "observed", EMAIL_STYLE_LABEL)
    assert view["gmail"]["connected"] and not view["gmail"]["reconnect"]
    assert (view["gmail"]["sampled"], view["gmail"]["skipped"]) == (2, 4)
    status, exported = await maya.call("GET", "/api/memory/export")
    assert f"**{STYLE_PATH}** ({EMAIL_STYLE_LABEL})" in exported
    async with maya.http.get(maya.base + "/settings/memory") as page:
        html = await page.text()
    assert EMAIL_STYLE_LABEL in html and "Disconnect" in html and "Refresh" in html
    context = (await gmail.site.nod.svc.memory.load(gmail.site.nod.owner.id)).document
    assert f"{STYLE_PATH}: {STYLE}" in render_index(context)  # the agent sees it like any other note


async def test_the_run_refreshes_the_token_and_reads_sent_mail_without_quoted_forwarded_or_automated_mail(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer) -> None:
    _style(server, STYLE)
    await gmail.connect(maya)
    tokens = [form for method, path, form in gmail.google.requests if path == "/token"]
    assert [t["grant_type"] for t in tokens] == ["authorization_code", "refresh_token"]
    assert tokens[0]["code_verifier"] and tokens[1]["refresh_token"] in gmail.google.grants
    listed = gmail.google.calls("/gmail/v1/users/me/messages")
    assert listed[0][2] == {"q": "in:sent", "maxResults": "50"}
    fetched = gmail.google.calls("/gmail/v1/users/me/messages/")
    assert len(fetched) == 6 and all(q == {"format": "full"} for _, _, q in fetched)

    (call,) = server.calls("writing_style")
    assert call["response_format"]["json_schema"]["name"] == "writing_style"
    sent = json.loads(call["messages"][-1]["content"])["sent_emails"]
    assert sent == [SHORT, OWN]  # newest first, each only as the owner typed it
    prompt = json.dumps(call["messages"])
    for gone in ("lighthouse budget", "wrote:", "orchard invoice", "harvest festival", "accepted this invitation",
                 "rowing club"):
        assert gone not in prompt


async def test_a_forged_replayed_or_foreign_state_connects_nothing(gmail: GmailSite, maya: PageClient) -> None:
    forged = await gmail.callback(maya, "http://127.0.0.1/oauth/google/callback?state=forged-state&code=4/abc")
    assert forged.status == 400 and "not started here" in forged.text

    url = await gmail.consent_url(maya)
    async with maya.http.get(url, allow_redirects=False) as google:
        back = google.headers["Location"]
    bo = await gmail.site.nod.svc.owners.add("Bo", "UTC", (), START)
    other = await gmail.site.client(bo)
    try:
        stolen = await gmail.callback(other, back)  # Maya's state in another session's browser
        assert stolen.status == 400
    finally:
        await other.http.close()
    async with gmail.site.nod.svc.engine.connect() as conn:
        assert (await conn.execute(select(gmail_connections))).all() == []
    assert [f["grant_type"] for _, p, f in gmail.google.requests if p == "/token"] == []  # no code was exchanged
    again = await gmail.callback(maya, back)  # the other browser did not use up Maya's consent
    assert (again.status, again.location) == (303, "/settings/memory")
    await gmail.finished()
    replayed = await gmail.callback(maya, back)  # but it works once
    assert replayed.status == 400


async def test_declining_on_googles_screen_says_so(gmail: GmailSite, maya: PageClient) -> None:
    gmail.google.decline = True
    back = await gmail.follow(maya, await gmail.consent_url(maya))
    assert back.status == 400 and "you declined" in back.text
    assert not (await _view(maya))["gmail"]["connected"]


async def test_a_revoked_grant_makes_the_page_say_reconnect(gmail: GmailSite, maya: PageClient, server: FakeModelServer) -> None:
    _style(server, STYLE)
    await gmail.connect(maya)
    gmail.google.revoke_all()  # the owner removed Nod in their Google Account
    status, _ = await maya.call("POST", "/api/memory/gmail/refresh", {})
    assert status == 202
    report = await gmail.finished()
    assert report is not None and report.reconnect and not report.ok
    view = await _view(maya)
    assert view["gmail"]["reconnect"] and "reconnect Gmail" in view["gmail"]["outcome"]
    async with maya.http.get(maya.base + "/settings/memory") as page:
        assert "Reconnect Gmail" in await page.text()
    assert _entry(view) is not None  # the style learned before stays
    gmail.site.nod.svc.clock.set(START + timedelta(days=8))  # type: ignore[attr-defined]
    reads = len(gmail.google.requests)
    (tick,) = await gmail.site.nod.svc.maintenance.run()
    assert tick.writing_style is None and len(gmail.google.requests) == reads  # no weekly retries until reconnected


async def test_a_description_over_500_characters_or_with_facts_is_asked_again_then_skipped(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _style(server, "Writes warmly. " * 40, "Writes short notes to Ana and signs off as Maya.")
    report = await gmail.connect(maya)
    assert report is not None and not report.saved and "nothing was saved" in report.outcome
    first, second = server.calls("writing_style")
    assert "previous_answer_refused_because" not in first["messages"][-1]["content"]
    assert "longer than 500 characters" in json.loads(second["messages"][-1]["content"])["previous_answer_refused_because"]
    assert _entry(await _view(maya)) is None
    assert [r.purpose for r in await gmail.site.nod.usage_rows("writing_style")] == ["writing_style"] * 2
    reasons = [r.getMessage() for r in caplog.records if "writing_style_refused" in r.getMessage()]
    assert [m.rsplit("reason=", 1)[1] for m in reasons] == ["too_long", "name"]
    assert not any("Ana" in r.getMessage() for r in caplog.records)  # the refused words are not logged


@pytest.mark.parametrize("leak", [
    "Often mentions the revised draft by Friday.",  # four words in a row from a mail
    "Writes to ana.silva@example.org in English.",  # an address
    "Signs off as Maya.",  # a name from the mails
    "Usually replies within 2 days; phone +351 912 345 678.",  # a phone number
])
async def test_each_fact_is_refused_and_a_clean_second_answer_is_saved(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer, leak: str) -> None:
    _style(server, leak, STYLE)
    report = await gmail.connect(maya)
    assert report is not None and report.saved
    entry = _entry(await _view(maya))
    assert entry is not None and entry["text"] == STYLE


async def test_a_new_version_archives_the_old_one(gmail: GmailSite, maya: PageClient, server: FakeModelServer) -> None:
    newer = "Writes brief, friendly emails in English with a greeting and a first name; signs off with Best."
    _style(server, STYLE, newer)
    await gmail.connect(maya)
    assert (await maya.call("POST", "/api/memory/gmail/refresh", {}))[0] == 202
    await gmail.finished()
    doc = (await gmail.site.nod.svc.memory.load(gmail.site.nod.owner.id)).document
    entry = doc.get(STYLE_PATH)
    assert entry is not None and entry.text == newer and entry.origin is Origin.EMAIL and entry.status is Status.OBSERVED
    (record,) = doc.archive
    assert (record.entry.text, record.reason, record.replaced_by) == (STYLE, ArchiveReason.REPLACED, STYLE_PATH)


@pytest.mark.parametrize("origin", [Origin.STATED, Origin.INFERRED])
async def test_a_note_from_chat_or_the_page_at_that_path_is_never_replaced(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer, origin: Origin) -> None:
    mine = ops.make_entry(STYLE_PATH, "I write formally, always with Dear.", origin=origin, now=START)
    await gmail.site.nod.svc.memory.update(gmail.site.nod.owner.id, lambda d: ops.add_entry(d, mine))
    _style(server, STYLE)
    report = await gmail.connect(maya)
    assert report is not None and not report.saved
    view = await _view(maya)
    entry = _entry(view)
    assert entry is not None and entry["text"] == "I write formally, always with Dear." and entry["origin"] == origin.value
    assert "never replaces" in view["gmail"]["outcome"]  # the page says why
    assert (await gmail.site.nod.svc.memory.load(gmail.site.nod.owner.id)).document.archive == ()


async def test_nothing_is_read_or_saved_while_saving_is_off(gmail: GmailSite, maya: PageClient, server: FakeModelServer) -> None:
    assert (await maya.call("PUT", "/api/memory/settings", {"saving_enabled": False}))[0] == 200
    _style(server, STYLE)
    report = await gmail.connect(maya)
    assert report is not None and not report.saved and "Saving is off" in report.outcome
    assert gmail.google.calls("/gmail/v1/users/me/messages") == [] and server.calls("writing_style") == []
    assert _entry(await _view(maya)) is None


async def test_disconnect_revokes_the_token_at_google_and_deletes_it(gmail: GmailSite, maya: PageClient,
                                                                     server: FakeModelServer) -> None:
    _style(server, STYLE)
    await gmail.connect(maya)
    (grant,) = gmail.google.grants.values()
    status, answer = await maya.call("POST", "/api/memory/gmail/disconnect", {})
    assert (status, answer) == (200, {"disconnected": True, "revoked": True})
    assert grant.revoked and gmail.google.calls("/revoke")[0][2]["token"] == grant.refresh_token
    async with gmail.site.nod.svc.engine.connect() as conn:
        assert (await conn.execute(select(gmail_connections))).all() == []
        assert (await conn.execute(text("SELECT count(*) FROM gmail_consents"))).scalar() == 0
    view = await _view(maya)
    assert not view["gmail"]["connected"]
    assert (await maya.call("POST", "/api/memory/gmail/refresh", {}))[0] == 404
    assert (await maya.call("POST", "/api/memory/gmail/disconnect", {}))[0] == 404


async def test_the_gmail_routes_need_the_session_and_the_csrf_token(gmail: GmailSite, maya: PageClient) -> None:
    for path in ("/api/memory/gmail/connect", "/api/memory/gmail/refresh", "/api/memory/gmail/disconnect"):
        assert (await maya.call("POST", path, {}, csrf="forged"))[0] == 403
    assert gmail.google.requests == []


async def test_after_a_run_no_email_text_is_anywhere_in_the_database_file(
        gmail: GmailSite, maya: PageClient, server: FakeModelServer, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _style(server, "Signs off as Maya.", STYLE)  # a refused answer on the way, too
    await gmail.connect(maya)
    await gmail.site.nod.svc.maintenance.run()
    (grant,) = gmail.google.grants.values()
    files = [p for p in (tmp_path / "nod.db", tmp_path / "nod.db-wal") if p.exists()]
    assert tmp_path / "nod.db-wal" in files
    stored = b"".join(p.read_bytes() for p in files)
    assert STYLE.encode() in stored  # the style itself is what is kept
    logged = _as_logged(caplog.records)
    for phrase in (*NEVER_KEPT, grant.refresh_token, "Signs off as Maya"):
        assert phrase.encode() not in stored, phrase
        assert phrase not in logged, phrase
    for token in gmail.google.access:
        assert token.encode() not in stored and token not in logged


def _as_logged(records: list[logging.LogRecord]) -> str:
    """The lines as ``nod`` writes them: its own whole, a library's without the arguments (bot.logs withholds them)."""
    return "\n".join(r.getMessage() if r.name.startswith("nod") else str(r.msg) for r in records)


async def test_the_weekly_run_hangs_off_the_hourly_maintenance(gmail: GmailSite, maya: PageClient,
                                                               server: FakeModelServer) -> None:
    later = "Writes brief, friendly emails in English with a greeting and a first name; signs off with Best."
    _style(server, STYLE, later)
    await gmail.connect(maya)
    clock = gmail.site.nod.svc.clock
    (tick,) = await gmail.site.nod.svc.maintenance.run()
    assert tick.writing_style is None and len(server.calls("writing_style")) == 1  # the same day: not due
    clock.set(START + timedelta(days=7))  # type: ignore[attr-defined]
    (tick,) = await gmail.site.nod.svc.maintenance.run()
    assert tick.writing_style is not None and "Learned from 2 sent emails" in tick.line()
    doc = (await gmail.site.nod.svc.memory.load(gmail.site.nod.owner.id)).document
    assert doc.get(STYLE_PATH) is not None and doc.get(STYLE_PATH).text == later  # type: ignore[union-attr]


async def test_a_terminal_consent_needs_no_page_session_and_works_once(gmail: GmailSite, server: FakeModelServer) -> None:
    _style(server, STYLE)
    url = await cli_gmail.connect(gmail.site.nod.svc, "Maya")
    browser = PageClient(aiohttp.ClientSession(), gmail.site.base)
    try:
        async with browser.http.get(url, allow_redirects=False) as google:
            back = google.headers["Location"]
        done = await gmail.callback(browser, back)
        assert done.status == 200 and "Gmail is connected" in done.text
        assert (await gmail.callback(browser, back)).status == 400  # one time only
    finally:
        await browser.http.close()
    report = await gmail.finished()
    assert report is not None and report.saved
    said = await cli_gmail.disconnect(gmail.site.nod.svc, "Maya")
    assert "Google revoked Nod's access" in said
