"""The memory page's door and its JSON API: every route and rule, over real HTTP and a real database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from bot.cli_data import memory_show
from core.memory import document as ops
from core.memory.values import Evidence, Origin, Skill
from core.message import Inbound, Message, Role
from core.owner import Identity
from core.secrets import find_secret
from tests.fakes.model_server import FakeModelServer
from tests.integration.harness import START
from tests.integration.page_harness import PageClient, PageSite, make_page_site


@pytest.fixture
async def site(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[PageSite]:
    async for running in make_page_site(tmp_path, server):
        yield running


@pytest.fixture
async def maya(site: PageSite) -> AsyncIterator[PageClient]:
    client = await site.client()
    try:
        yield client
    finally:
        await client.http.close()


async def _sister(site: PageSite) -> int:
    """A note from Maya's own message (and Nod's reply beside it, which must never show)."""
    store = site.nod.svc.messages
    said = (await store.append(Message(site.nod.owner.id, Role.OWNER, "my sister Ana lives in Porto", "local", START))).message
    await store.append(Message(site.nod.owner.id, Role.ASSISTANT, "Noted, Porto is lovely.", "local", START))
    entry = ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.INFERRED, now=START,
                           evidence=(Evidence(said.id, "my sister Ana lives in Porto"),))
    await site.nod.svc.memory.update(site.nod.owner.id, lambda d: ops.add_entry(d, entry))
    return said.id


async def _entry(client: PageClient, path: str) -> dict:  # type: ignore[type-arg]
    _, view = await client.call("GET", "/api/memory")
    return next(e for a in view["areas"] for e in a["entries"] if e["path"] == path)


async def test_a_link_works_once_sets_a_safe_cookie_and_leaves_no_token_in_the_address(site: PageSite) -> None:
    link = await site.link()
    assert find_secret(link) == "link with a login"  # the secrets rules keep it out of memory
    parts = urlsplit(link)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"{site.base}{parts.path}?{parts.query}", allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"] == "/settings/memory"
            assert response.headers["Referrer-Policy"] == "no-referrer"  # the token never leaves in a Referer
            cookie = response.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Max-Age=2592000" in cookie
        assert "Secure" not in cookie  # the public URL is http here
        async with http.get(f"{site.base}/settings/memory") as page:
            assert page.status == 200 and "Content-Security-Policy" in page.headers
    async with aiohttp.ClientSession() as other:  # the same link again, from anywhere
        async with other.get(f"{site.base}{parts.path}?{parts.query}", allow_redirects=False) as again:
            assert again.status == 401 and "/settings" in await again.text()


async def test_a_link_expires_after_fifteen_minutes_and_a_forged_token_opens_nothing(site: PageSite) -> None:
    link = await site.link()
    site.nod.svc.clock.set(START + timedelta(minutes=16))  # type: ignore[attr-defined]
    client = PageClient(aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)), site.base)
    try:
        assert await client.open(link) == 401
        assert await client.open(link.replace(link[-6:], "AAAAAA")) == 401
        assert (await client.call("GET", "/api/memory"))[0] == 401
    finally:
        await client.http.close()


async def test_a_cookie_that_is_not_signed_by_nod_is_refused(site: PageSite, maya: PageClient) -> None:
    session = next(c for c in maya.http.cookie_jar if c.key == "nod_session")
    forged = session.value.split(".")[0] + ".forged"
    async with aiohttp.ClientSession(cookies={"nod_session": forged}) as http:
        async with http.get(f"{site.base}/api/memory") as response:
            assert response.status == 401 and "error" in await response.json()


async def test_the_view_shows_labels_and_only_the_owners_own_words_as_sources(site: PageSite, maya: PageClient) -> None:
    said = await _sister(site)
    status, view = await maya.call("GET", "/api/memory")
    entry = await _entry(maya, "people/sister")
    assert status == 200 and [a["area"] for a in view["areas"]] == ["about", "preferences", "people", "routines", "lessons"]
    assert (entry["label"], entry["status"]) == ("Mentioned once", "tentative")
    assert entry["evidence"] == [{"message_id": said, "quote": "my sister Ana lives in Porto",
                                  "text": "my sister Ana lives in Porto", "sent_at": "2026-12-03T09:00+00:00",
                                  "sent_label": "3 Dec, 09:00", "voice": False}]
    assert "Porto is lovely" not in str(view)  # Nod's reply is no source
    assert view["settings"] == {"saving_enabled": True, "remember_sensitive": False}


async def test_a_source_that_was_a_voice_note_says_so_on_the_page_and_in_nod_memory_show(
        site: PageSite, maya: PageClient) -> None:
    store = site.nod.svc.messages
    said = (await store.append(Message(site.nod.owner.id, Role.OWNER, "my brother Rui lives in Braga", "telegram",
                                          START, voice=True))).message
    entry = ops.make_entry("people/brother", "Brother: Rui, lives in Braga", origin=Origin.STATED, now=START,
                           evidence=(Evidence(said.id, "my brother Rui lives in Braga"),))
    await site.nod.svc.memory.update(site.nod.owner.id, lambda d: ops.add_entry(d, entry))
    assert (await _entry(maya, "people/brother"))["evidence"][0]["voice"] is True
    async with maya.http.get(f"{site.base}/settings/memory") as page:
        html = await page.text()
    assert '<time datetime="2026-12-03T09:00+00:00">3 Dec, 09:00</time> <span class="voice">(voice note)</span>' in html
    shown = await memory_show(site.nod.svc, "Maya", as_json=False)
    assert shown.splitlines()[1] == "  sources: 2026-12-03 09:00 (voice note)"


async def test_every_change_needs_the_csrf_token(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    for method, path, body in (("POST", "/api/memory/notes", {"path": "about/x", "text": "x"}),
                               ("PUT", "/api/memory/settings", {"remember_sensitive": True}),
                               ("DELETE", "/api/memory/notes/people/sister", {})):
        for token in ("", "not-the-token"):
            status, answer = await maya.call(method, path, body, csrf=token)
            assert status == 403 and "CSRF" in answer["error"]
    assert (await _entry(maya, "people/sister"))["text"] == "Sister: Ana, lives in Porto"


async def test_another_owners_session_never_reaches_mayas_notes(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    bo = await site.nod.svc.owners.add("Bo", "UTC", (), START)
    client = await site.client(bo)
    try:
        status, view = await client.call("GET", "/api/memory")
        assert status == 200 and all(not a["entries"] for a in view["areas"]) and "Ana" not in str(view)
        assert (await client.call("DELETE", "/api/memory/notes/people/sister", {}))[0] == 404
        assert (await client.call("POST", "/api/memory/notes/people/sister/confirm", {}))[0] == 404
    finally:
        await client.http.close()
    assert (await _entry(maya, "people/sister"))["status"] == "tentative"


async def test_add_rewrite_confirm_with_versions_and_a_stale_edit_gets_409(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    old = await _entry(maya, "people/sister")
    status, _ = await maya.call("POST", "/api/memory/notes/people/sister/confirm", {"etag": old["etag"]})
    assert status == 200 and (await _entry(maya, "people/sister"))["label"] == "Confirmed"
    status, answer = await maya.call("PUT", "/api/memory/notes/people/sister", {"etag": old["etag"], "text": "Sister: Ana"})
    assert status == 409 and answer["current"]["label"] == "Confirmed"  # edited a version that changed since
    current = await _entry(maya, "people/sister")
    status, _ = await maya.call("PUT", "/api/memory/notes/people/sister", {"etag": current["etag"], "text": "Sister: Ana, Lisbon"})
    assert status == 200
    _, view = await maya.call("GET", "/api/memory")
    assert (await _entry(maya, "people/sister"))["text"] == "Sister: Ana, Lisbon"
    assert view["archive"][0]["text"] == "Sister: Ana, lives in Porto" and view["archive"][0]["replaced_by"] == "people/sister"
    assert (await maya.call("POST", "/api/memory/notes", {"path": "about/boat", "text": "Boat: Gaivota"}))[0] == 201
    assert (await maya.call("POST", "/api/memory/notes", {"path": "about/boat", "text": "again"}))[0] == 409
    assert (await _entry(maya, "about/boat"))["label"] == "Confirmed"


async def test_a_card_number_typed_into_a_note_is_refused_with_a_sentence(site: PageSite, maya: PageClient) -> None:
    for body in ({"path": "about/card", "text": "card 4111.1111.1111.1111"},
                 {"path": "about/4111-1111-1111-1111", "text": "harmless"},
                 {"path": "about/bad slug", "text": "x"}, {"path": "about/x"}):
        status, answer = await maya.call("POST", "/api/memory/notes", body)
        assert status == 400 and answer["error"].endswith(".")
    _, view = await maya.call("GET", "/api/memory")
    assert "4111" not in str(view)


async def test_forget_removes_every_version_and_restore_brings_one_back(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    for text in ("Sister: Ana, Lisbon", "Sister: Ana, Faro"):
        current = await _entry(maya, "people/sister")
        assert (await maya.call("PUT", "/api/memory/notes/people/sister", {"etag": current["etag"], "text": text}))[0] == 200
    _, view = await maya.call("GET", "/api/memory")
    porto = next(r for r in view["archive"] if "Porto" in r["text"])
    status, _ = await maya.call("POST", f"/api/memory/archive/{porto['index']}/restore", {"etag": porto["etag"]})
    assert status == 200 and (await _entry(maya, "people/sister"))["text"] == "Sister: Ana, lives in Porto"
    _, view = await maya.call("GET", "/api/memory")
    assert any("Faro" in r["text"] for r in view["archive"])  # what stood there is let go, not lost
    current = await _entry(maya, "people/sister")
    assert (await maya.call("DELETE", "/api/memory/notes/people/sister", {"etag": current["etag"]}))[0] == 200
    _, view = await maya.call("GET", "/api/memory")
    assert "Sister" not in str(view["areas"]) and view["archive"] == []
    assert (await maya.call("POST", "/api/memory/archive/7/restore", {}))[0] == 404


async def test_page_changes_work_while_saving_is_off_and_post_nothing_to_chat(site: PageSite, maya: PageClient) -> None:
    status, answer = await maya.call("PUT", "/api/memory/settings", {"saving_enabled": False, "remember_sensitive": True})
    assert status == 200 and answer == {"saving_enabled": False, "remember_sensitive": True}
    assert (await maya.call("POST", "/api/memory/notes", {"path": "about/boat", "text": "Boat: Gaivota"}))[0] == 201
    assert (await maya.call("PUT", "/api/memory/settings", {"saving_enabled": "no"}))[0] == 400
    assert site.nod.sink.sent == [] and await site.nod.svc.messages.recent(site.nod.owner.id, 5) == []


async def test_the_import_preview_never_ticks_a_secret_as_people_write_it(site: PageSite, maya: PageClient) -> None:
    """The page ticks a line only when its `skip` is null (adapters/web/static/page.js); issue 39: 8."""
    pasted = ("## About you\n- Password for the wifi: hunter2hunter2\n- the door code is 4821\n"
              "- Reset link https://example.com/reset-password/9f8e7d6c5b4a39281706\n- Card 4111 1111 then 1111 1111\n"
              "- The code review is on Monday\n")
    status, answer = await maya.call("POST", "/api/memory/import/preview", {"text": pasted})
    assert status == 200 and [n["skip"] for n in answer["notes"]] == [
        "looks like a secret (password)", "looks like a secret (password)", "looks like a secret (link with a login)",
        "looks like a secret (card number)", None]
    chosen = [{"area": n["area"], "text": n["text"]} for n in answer["notes"]]  # ticked by hand all the same
    status, answer = await maya.call("POST", "/api/memory/import", {"notes": chosen})
    assert status == 200 and len(answer["saved"]) == 1
    assert [s["text"] for s in answer["skipped"]] == ["note 1", "note 2", "note 3", "note 4"]  # never the secret back


async def test_import_previews_without_a_model_then_saves_what_is_ticked(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    pasted = ("## People\n- Sister: Ana, lives in Porto\n- Brother: Rui\n## Lessons\n- Never book red-eye flights\n"
              "- card 4111 1111 1111 1111\n- " + "long " * 900 + "\n")
    status, answer = await maya.call("POST", "/api/memory/import/preview", {"text": pasted})
    skips = [(n["area"], n["skip"]) for n in answer["notes"]]
    assert status == 200 and skips == [("people", "already saved"), ("people", None), ("lessons", None),
                                       ("lessons", "looks like a secret (card number)"), ("lessons", "over 4,000 characters")]
    ticked = [{"area": "people", "text": "Brother: Rui"}, {"area": "lessons", "text": "card 4111 1111 1111 1111"}]
    status, answer = await maya.call("POST", "/api/memory/import", {"notes": ticked})
    assert status == 200 and len(answer["saved"]) == 1 and answer["skipped"][0] == {"text": "note 2", "reason": "looks like a secret (card number)"}
    assert (await _entry(maya, answer["saved"][0]))["label"] == "Confirmed" and site.nod.server.requests == []


async def test_skills_are_shown_edited_by_the_owner_and_forgotten(site: PageSite, maya: PageClient) -> None:
    skill = Skill("book-train", "Book a train on CP", "1. Open cp.pt", START, START)
    await site.nod.svc.memory.update(site.nod.owner.id, lambda d: replace(d, skills=(skill,)))
    _, view = await maya.call("GET", "/api/memory")
    shown = view["skills"][0]
    body = {"etag": shown["etag"], "description": "Book a CP train", "body": "1. Open cp.pt\n2. Pick the seat"}
    assert (await maya.call("PUT", "/api/memory/skills/book-train", body))[0] == 200
    assert (await maya.call("PUT", "/api/memory/skills/book-train", body))[0] == 409  # that version is gone
    _, view = await maya.call("GET", "/api/memory")
    assert view["skills"][0]["edited_by_owner"] is True and "Pick the seat" in view["skills"][0]["body"]
    secret = {**body, "etag": view["skills"][0]["etag"], "body": "pay with 4111 1111 1111 1111"}
    assert (await maya.call("PUT", "/api/memory/skills/book-train", secret))[0] == 400
    assert (await maya.call("DELETE", "/api/memory/skills/book-train", {"etag": view["skills"][0]["etag"]}))[0] == 200
    assert (await maya.call("GET", "/api/memory"))[1]["skills"] == []


async def test_export_downloads_the_markdown(site: PageSite, maya: PageClient) -> None:
    await _sister(site)
    async with maya.http.get(site.base + "/api/memory/export") as response:
        assert response.status == 200 and "attachment" in response.headers["Content-Disposition"]
        assert "## People" in await response.text()


async def test_a_body_over_one_mebibyte_is_413_and_garbage_is_400(site: PageSite, maya: PageClient) -> None:
    status, answer = await maya.call("POST", "/api/memory/import/preview", {"text": "x" * 1_100_000})
    assert status == 413 and "1 MiB" in answer["error"]
    async with maya.http.post(site.base + "/api/memory/notes", data=b"[1, 2", headers={"X-CSRF-Token": maya.csrf,
                                                                                         "Content-Type": "application/json"}) as response:
        assert response.status == 400 and (await response.json())["error"] == "The request body is not JSON."


async def test_settings_logout_ends_the_session_and_nod_page_revoke_too(site: PageSite, maya: PageClient) -> None:
    await site.nod.svc.owners.link(site.nod.owner.id, Identity("telegram", "4242"))
    front = site.nod.svc.front_door(site.nod.sink)
    handled = await front.handle(Inbound(Identity("telegram", "4242"), "/settings", "u1"))
    assert handled.answer is not None and "/settings/memory?t=" in handled.answer and site.nod.server.requests == []
    assert (await front.handle(Inbound(Identity("telegram", "4242"), "/settings logout", "u2"))).answer == (
        "Signed out of the memory page (1 session ended).")
    assert (await maya.call("GET", "/api/memory"))[0] == 401
    await front.close()


async def test_without_a_secret_key_the_page_is_off_and_settings_says_why(tmp_path: Path, server: FakeModelServer) -> None:
    from tests.integration.harness import make_harness

    async for nod in make_harness(tmp_path, server, public_url="https://nod.example.org"):
        await nod.svc.owners.link(nod.owner.id, Identity("telegram", "4242"))
        front = nod.svc.front_door(nod.sink)
        handled = await front.handle(Inbound(Identity("telegram", "4242"), "/settings", "u1"))
        assert handled.answer == "The memory page is off: the operator sets NOD_SECRET_KEY to turn it on."
        await front.close()


async def test_the_cookie_is_secure_behind_https(tmp_path: Path, server: FakeModelServer) -> None:
    async for site in make_page_site(tmp_path, server, public_url="https://nod.example.org"):
        parts = urlsplit(await site.link())
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{site.base}{parts.path}?{parts.query}", allow_redirects=False) as response:
                assert "Secure" in response.headers["Set-Cookie"]


async def test_reminders_and_tasks_are_listed_and_cancelled_only_by_their_owner(site: PageSite, maya: PageClient) -> None:
    from datetime import datetime

    from core.schedules.model import Kind

    svc, due = site.nod.svc, datetime(2026, 12, 4, 9, 0, tzinfo=START.tzinfo)
    mine = await svc.schedules.create(site.nod.owner.id, Kind.REMINDER, "call the dentist", due.replace(tzinfo=None),
                                      None, due, START, None)
    rui = await svc.owners.add("Rui", "Europe/Lisbon", (), START)
    theirs = await svc.schedules.create(rui.id, Kind.TASK, "rui's task", due.replace(tzinfo=None), None, due, START, None)
    _, view = await maya.call("GET", "/api/memory")
    assert [(s["id"], s["text"], s["next_run"]) for s in view["schedules"]] == [
        (mine.id, "call the dentist", "Friday 4 December, 09:00 Lisbon time")]
    page = await (await maya.http.get(site.base + "/settings/memory")).text()
    assert "Reminders and tasks" in page and "call the dentist" in page and "rui&#39;s task" not in page
    assert (await maya.call("DELETE", f"/api/memory/schedules/{mine.id}", csrf="forged"))[0] == 403
    assert (await maya.call("DELETE", f"/api/memory/schedules/{theirs.id}"))[0] == 404  # another owner's: unknown
    assert (await maya.call("DELETE", "/api/memory/schedules/99999999999"))[0] == 404
    assert await maya.call("DELETE", f"/api/memory/schedules/{mine.id}") == (200, {"cancelled": mine.id})
    assert await svc.schedules.active(site.nod.owner.id) == [] and len(await svc.schedules.active(rui.id)) == 1
