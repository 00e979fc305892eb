"""The memory page as a person uses it: Debian's Chromium driven by Playwright, on a phone and a desk.

The browser is the system's (``/usr/bin/chromium``, installed by ``.ci/run``): Playwright's
own browser download cannot work here. Where no browser can be installed the tests skip
and say so; with ``NOD_REQUIRE_BROWSER=1`` (CI) they fail instead. Screenshots go to the
test's temporary directory (``NOD_SCREENSHOTS`` names another), never into the repository.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from core.memory import document as ops
from core.memory.model import ArchiveReason, Evidence, Origin
from core.message import NewMessage, Role
from tests.fakes.google_server import mail
from tests.fakes.model_server import FakeModelServer, structured
from tests.integration.gmail_harness import make_gmail_site
from tests.integration.harness import MEMORY, START
from tests.integration.page_harness import PageSite, make_page_site

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser_or_skip() -> Any:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        async_playwright = None
    if async_playwright is None or not Path(CHROMIUM).exists():
        if os.environ.get("NOD_REQUIRE_BROWSER") == "1":
            pytest.fail("NOD_REQUIRE_BROWSER=1 but Playwright or /usr/bin/chromium is missing.")
        pytest.skip("No browser: install Debian's chromium and `pip install playwright` (.ci/run does).")
    return async_playwright


@pytest.fixture
async def site(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[PageSite]:
    async for running in make_page_site(tmp_path, server):
        yield running


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async_playwright = _browser_or_skip()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("NOD_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def _memory(site: PageSite) -> None:
    store, owner = site.nod.svc.messages, site.nod.owner
    said = (await store.append(NewMessage(owner.id, Role.OWNER, "my sister Ana lives in Porto", "local", START))).message
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


async def _open(site: PageSite, browser: Any, width: int) -> Any:
    page = await browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    parts = urlsplit(await site.link())
    await page.goto(f"{site.base}{parts.path}?{parts.query}")
    page.errors = errors
    return page


async def test_an_owner_reads_and_changes_memory_in_the_browser(site: PageSite, browser: Any, tmp_path: Path) -> None:
    await _memory(site)
    page = await _open(site, browser, 1280)
    assert page.url == f"{site.base}/settings/memory"  # the token is gone from the address
    sister = page.locator('article[data-path="people/sister"]')
    assert await sister.locator(".label").inner_text() == "Mentioned once"
    assert await page.locator('article[data-path="about/boat"] .label').inner_text() == "Confirmed"
    await sister.locator("summary").click()  # expand its source: the owner's own message
    assert await sister.locator("details q").inner_text() == "my sister Ana lives in Porto"
    await page.screenshot(path=str(_shots(tmp_path) / "page-desktop.png"), full_page=True)

    await sister.get_by_role("button", name="Edit").click()
    await sister.locator("form.edit textarea").fill("Sister: Ana, lives in Lisbon now")
    async with page.expect_navigation():
        await sister.get_by_role("button", name="Save").click()
    assert await page.locator('article[data-path="people/sister"] .text').inner_text() == "Sister: Ana, lives in Lisbon now"
    assert await page.locator("#status").inner_text() == "Saved."

    page.once("dialog", lambda dialog: dialog.accept())
    async with page.expect_navigation():
        await page.locator('article[data-path="preferences/coffee"]').get_by_role("button", name="Forget").click()
    assert await page.locator('article[data-path="preferences/coffee"]').count() == 0

    city = page.locator("article.archived", has_text="Lives in Lisbon")
    async with page.expect_navigation():
        await city.get_by_role("button", name="Restore").click()
    assert await page.locator('article[data-path="about/city"] .text').inner_text() == "Lives in Lisbon"

    async with page.expect_navigation():
        await page.get_by_role("switch", name="Remember sensitive topics").check()
    assert (await site.nod.svc.owners.by_id(site.nod.owner.id)).settings.remember_sensitive is True

    await page.locator("form.import textarea").fill("## Routines\n- Gym on Mondays\n- Swim on Fridays\n")
    await page.get_by_role("button", name="Preview").click()
    await page.locator("form.chosen").wait_for(state="visible")
    await page.get_by_label("routines: Swim on Fridays").uncheck()
    async with page.expect_navigation():
        await page.get_by_role("button", name="Import the ticked notes").click()
    assert "Imported 1 notes." in await page.locator("#status").inner_text()
    routines = await page.locator('section[aria-labelledby="area-routines"] .text').all_inner_texts()
    assert routines == ["Gym on Mondays"]

    async with page.expect_download() as download:
        await page.get_by_role("link", name="Export").click()
    saved = tmp_path / "export.md"
    await (await download.value).save_as(saved)
    assert "## Routines" in saved.read_text() and "Gym on Mondays" in saved.read_text()
    assert page.errors == []  # no script error, nothing the CSP had to block


async def test_the_page_reads_on_a_phone_and_works_by_keyboard(site: PageSite, browser: Any, tmp_path: Path) -> None:
    await _memory(site)
    page = await _open(site, browser, 375)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375  # nothing wider than the screen
    await page.screenshot(path=str(_shots(tmp_path) / "page-375.png"), full_page=True)
    boat = page.locator('article[data-path="about/boat"]')
    await boat.get_by_role("button", name="Edit").focus()
    await page.keyboard.press("Enter")
    assert await boat.locator("form.edit textarea").evaluate("e => e === document.activeElement")
    await page.keyboard.type(" and a dinghy")
    async with page.expect_navigation():
        await page.keyboard.press("Tab")
        await page.keyboard.press("Tab")
        await page.keyboard.press("Tab")
        await page.keyboard.press("Enter")  # Save, reached by keyboard alone
    assert await page.locator('article[data-path="about/boat"] .text').inner_text() == "Boat: Gaivota and a dinghy"
    assert page.errors == []


async def test_an_owner_connects_and_disconnects_gmail_in_the_browser(
        tmp_path: Path, server: FakeModelServer, browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    style = "Writes short, warm emails in English; greets with Hi and a first name, signs off with Best."
    server.enqueue(MEMORY, structured({"style": style}), purpose="writing_style")
    async for gmail in make_gmail_site(tmp_path, server, monkeypatch):
        gmail.google.send(mail("Hi Ana,\n\nSee you on the boat.\n\nBest,\nMaya"))
        site = gmail.site
        page = await _open(site, browser, 1280)

        async def to_this_server(route: Any) -> None:  # Google sends the browser to NOD_PUBLIC_URL, here a port
            parts = urlsplit(route.request.url)
            await route.fulfill(status=302, headers={"Location": f"{site.base}{parts.path}?{parts.query}"})

        await page.route("http://127.0.0.1/oauth/**", to_this_server)
        await page.get_by_role("button", name="Connect Gmail").click()
        await page.wait_for_url(f"{site.base}/settings/memory")
        await gmail.finished()
        card = page.locator("section.gmail")
        await card.get_by_text("Learned from 1 sent email.").wait_for(timeout=15_000)  # the poll reloads the page
        note = page.locator('article[data-path="preferences/writing-style"]')
        assert await note.locator(".label").inner_text() == "Learned from your sent email"
        assert await note.locator(".text").inner_text() == style
        await page.screenshot(path=str(_shots(tmp_path) / "page-gmail.png"), full_page=True)

        page.once("dialog", lambda dialog: dialog.accept())
        async with page.expect_navigation():
            await card.get_by_role("button", name="Disconnect").click()
        assert await page.locator("#status").inner_text() == "Gmail disconnected; Google revoked Nod's access."
        assert await page.get_by_role("button", name="Connect Gmail").count() == 1
        assert all(grant.revoked for grant in gmail.google.grants.values())
        assert page.errors == []


async def test_an_owner_cancels_a_reminder_on_the_page(site: PageSite, browser: Any, tmp_path: Path) -> None:
    from datetime import datetime

    from core.schedules.model import Kind

    svc, due = site.nod.svc, datetime(2026, 12, 4, 9, 0, tzinfo=START.tzinfo)
    for words in ("call the dentist", "water the plants"):
        await svc.schedules.create(site.nod.owner.id, Kind.REMINDER, words, due.replace(tzinfo=None), None, due, START, None)
    page = await _open(site, browser, 375)
    section = page.locator('section[aria-labelledby="schedules-title"]')
    assert await section.locator(".text").all_inner_texts() == ["call the dentist", "water the plants"]
    assert "Friday 4 December, 09:00 Lisbon time" in await section.inner_text()
    await section.screenshot(path=str(_shots(tmp_path) / "page-reminders-phone.png"))
    page.once("dialog", lambda dialog: dialog.accept())
    async with page.expect_navigation():
        await section.get_by_role("button", name="Cancel the reminder: call the dentist").click()
    assert await page.locator("#status").inner_text() == "Cancelled."
    assert await section.locator(".text").all_inner_texts() == ["water the plants"]
    assert [s.text for s in await svc.schedules.active(site.nod.owner.id)] == ["water the plants"]
    assert page.errors == []
