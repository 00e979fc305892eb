"""The memory page as a person uses it: Debian's Chromium driven by Playwright, on a phone and a desk.

Fixtures (``site``, ``browser``) are in ``tests/e2e/conftest.py``; the browser, seeding and
axe-core helpers in ``tests/e2e/browser_kit.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from core.memory import document as ops
from core.memory.values import ArchiveReason, Evidence, Origin
from core.message import Message, Role
from tests.e2e.browser_kit import PHONE, open_page, shots, stays, still_here
from tests.fakes.google_server import mail
from tests.fakes.model_server import FakeModelServer, structured
from tests.integration.gmail_harness import make_gmail_site
from tests.integration.harness import MEMORY, START
from tests.integration.page_harness import PageSite


async def _memory(site: PageSite) -> None:
    store, owner = site.nod.svc.messages, site.nod.owner
    said = (await store.append(Message(owner.id, Role.OWNER, "my sister Ana lives in Porto", "local", START))).message
    notes = (
        ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.INFERRED, now=START,
                       evidence=(Evidence(said.id, "my sister Ana lives in Porto"),)),
        ops.make_entry("about/boat", "Boat: Gaivota", origin=Origin.STATED, now=START),
        ops.make_entry("preferences/coffee", "Coffee: black", origin=Origin.STATED, now=START),
    )

    def seeded(doc: Any) -> Any:
        for entry in notes:
            doc = ops.add_entry(doc, entry)
        old = ops.make_entry("about/city", "Lives in Lisbon", origin=Origin.STATED, now=START)
        return ops.archive(ops.add_entry(doc, old), "about/city", ArchiveReason.STALE, START)

    await site.nod.svc.memory.update(owner.id, seeded)


async def test_an_owner_reads_and_changes_memory_in_the_browser(site: PageSite, browser: Any, tmp_path: Path) -> None:
    await _memory(site)
    page = await open_page(site, browser)
    assert page.url == f"{site.base}/settings/memory"  # the token is gone from the address
    await stays(page)
    sister = page.locator("#n-people-sister")
    assert await sister.locator(".label").inner_text() == "Mentioned once"
    assert await page.locator("#n-about-boat .label").inner_text() == "Confirmed"
    await sister.locator("summary", has_text="1 source").click()  # expand its source: the owner's own message
    assert await sister.locator("details q").inner_text() == "my sister Ana lives in Porto"
    assert await sister.locator("details time").inner_text() == "3 Dec, 09:00"  # Lisbon time, in words
    await page.screenshot(path=str(shots(tmp_path) / "page-desktop.png"), full_page=True)

    await sister.get_by_role("button", name="Edit 'sister'").click()
    await sister.locator("form.edit textarea").fill("Sister: Ana, lives in Lisbon now")
    await sister.get_by_role("button", name="Save").click()
    said = page.locator("#n-people-sister [role=status]")
    await said.get_by_text("Saved; the earlier version is in Let go.").wait_for()
    assert await page.locator("#n-people-sister .text").inner_text() == "Sister: Ana, lives in Lisbon now"
    assert await said.evaluate("e => e === document.activeElement")  # focus stays on the note, not the page top

    coffee = page.locator("#n-preferences-coffee")
    await coffee.locator("summary.more").click()
    await coffee.locator("summary", has_text="Forget…").click()
    await coffee.get_by_role("button", name="Forget 'coffee'", exact=True).click()
    await page.locator("#sec-preferences [role=status]").get_by_text("Forgot ‘coffee’").wait_for()
    assert await page.locator("#n-preferences-coffee").count() == 0

    city = page.locator("article.archived", has=page.get_by_label("Restore 'city'…"))
    assert "Lives in Lisbon" in await city.inner_text()
    await city.locator("summary", has_text="Restore…").click()
    await city.get_by_role("button", name="Restore 'city' now").click()
    await page.locator("#archive [role=status]").get_by_text("Restored ‘city’ to About you").wait_for()
    assert await page.locator("#n-about-city .text").inner_text() == "Lives in Lisbon"

    await page.get_by_role("switch", name="Remember sensitive topics").check()
    await page.locator("#settings [role=status]").get_by_text("Saved.").wait_for()
    assert (await site.nod.svc.owners.by_id(site.nod.owner.id)).settings.remember_sensitive is True

    await page.locator("form.import textarea").fill("## Routines\n- Gym on Mondays\n- Swim on Fridays\n")
    await page.get_by_role("button", name="Preview").click()
    await page.locator("form.chosen").wait_for(state="visible")
    await page.get_by_label("Routines: Swim on Fridays").uncheck()  # the area's name, not `routines:`
    await page.get_by_role("button", name="Import the ticked notes").click()
    await page.locator("#import [role=status]").get_by_text("Imported 1 note.").wait_for()
    routines = await page.locator("#sec-routines .text").all_inner_texts()
    assert routines == ["Gym on Mondays"]

    async with page.expect_download() as download:
        await page.get_by_role("link", name="Download as text").click()
    saved = tmp_path / "export.md"
    await (await download.value).save_as(saved)
    assert "## Routines" in saved.read_text() and "Gym on Mondays" in saved.read_text()
    assert await still_here(page)  # every change above happened in place, without a reload
    assert page.errors == []  # no script error, nothing the CSP had to block


async def test_the_page_reads_on_a_phone_and_works_by_keyboard(site: PageSite, browser: Any, tmp_path: Path) -> None:
    await _memory(site)
    page = await open_page(site, browser, PHONE)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375  # nothing wider than the screen
    await page.screenshot(path=str(shots(tmp_path) / "page-375.png"), full_page=True)
    boat = page.locator("#n-about-boat")
    await boat.get_by_role("button", name="Edit 'boat'").focus()
    await page.keyboard.press("Enter")
    assert await boat.locator("form.edit textarea").evaluate("e => e === document.activeElement")
    await page.keyboard.type(" and a dinghy")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")  # Save, reached by keyboard alone
    await page.locator("#n-about-boat [role=status]").filter(has_text="Saved").wait_for()
    assert await page.locator("#n-about-boat .text").inner_text() == "Boat: Gaivota and a dinghy"
    assert page.errors == []


async def test_an_owner_connects_and_disconnects_gmail_in_the_browser(
        tmp_path: Path, server: FakeModelServer, browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    style = "Writes short, warm emails in English; greets with Hi and a first name, signs off with Best."
    server.enqueue(MEMORY, structured({"style": style}), purpose="writing_style")
    async for gmail in make_gmail_site(tmp_path, server, monkeypatch):
        gmail.google.send(mail("Hi Ana,\n\nSee you on the boat.\n\nBest,\nMaya"))
        site = gmail.site
        page = await open_page(site, browser)

        async def to_this_server(route: Any) -> None:  # Google sends the browser to NOD_PUBLIC_URL, here a port
            parts = urlsplit(route.request.url)
            await route.fulfill(status=302, headers={"Location": f"{site.base}{parts.path}?{parts.query}"})

        await page.route("http://127.0.0.1/oauth/**", to_this_server)
        await page.get_by_role("button", name="Connect Gmail").click()
        await page.wait_for_url(f"{site.base}/settings/memory")
        await gmail.finished()
        card = page.locator("section.gmail")
        await card.get_by_text("Learned from 1 sent email.").wait_for(timeout=15_000)  # the poll refreshes the card
        note = page.locator('article[data-path="preferences/writing-style"]')
        assert await note.locator(".label").inner_text() == "Learned from your sent email"
        assert await note.locator(".text").inner_text() == style
        await page.screenshot(path=str(shots(tmp_path) / "page-gmail.png"), full_page=True)

        await stays(page)
        await card.locator("summary", has_text="Disconnect…").click()
        await card.get_by_role("button", name="Disconnect").click()
        await page.locator("#gmail [role=status]").get_by_text("Gmail disconnected; Google revoked Nod's access.").wait_for()
        assert await page.get_by_role("button", name="Connect Gmail").count() == 1
        assert all(grant.revoked for grant in gmail.google.grants.values())
        assert await still_here(page)
        assert page.errors == []


async def test_an_owner_cancels_a_reminder_on_the_page(site: PageSite, browser: Any, tmp_path: Path) -> None:
    from datetime import datetime

    from core.schedules.model import Kind

    svc, due = site.nod.svc, datetime(2026, 12, 4, 9, 0, tzinfo=START.tzinfo)
    for words in ("call the dentist", "water the plants"):
        await svc.schedules.create(site.nod.owner.id, Kind.REMINDER, words, due.replace(tzinfo=None), None, due, START, None)
    page = await open_page(site, browser, PHONE)
    section = page.locator("#schedules")
    assert await section.locator(".text").all_inner_texts() == ["call the dentist", "water the plants"]
    assert "Friday 4 December, 09:00 Lisbon time" in await section.inner_text()
    await section.screenshot(path=str(shots(tmp_path) / "page-reminders-phone.png"))
    await section.get_by_role("button", name="Cancel the reminder: call the dentist").click()
    await page.locator("#schedules [role=status]").get_by_text("Cancelled.").wait_for()
    assert await page.locator("#schedules .text").all_inner_texts() == ["water the plants"]
    assert [s.text for s in await svc.schedules.active(site.nod.owner.id)] == ["water the plants"]
    assert page.errors == []
