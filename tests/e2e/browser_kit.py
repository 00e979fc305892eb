"""What the memory page's browser tests share: Debian's Chromium, a signed-in page, a full memory, axe-core.

The browser is the system's (``/usr/bin/chromium``, installed by ``.ci/run``): Playwright's
own browser download cannot work here. Where no browser can be installed the tests skip
and say so; with ``NOD_REQUIRE_BROWSER=1`` (CI) they fail instead. Screenshots go to the
test's temporary directory (``NOD_SCREENSHOTS`` names another), never into the repository.
axe-core is the copy ``axe-playwright-python`` ships (``axe.min.js``), injected by
Playwright's evaluate, which the page's Content-Security-Policy does not govern.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from core.memory import document as ops
from core.memory.values import ArchiveReason, Evidence, MemoryDocument, Origin, Skill
from core.message import Message, Role
from tests.integration.harness import START
from tests.integration.page_harness import PageSite

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE = {"width": 375, "height": 812}
DESK = {"width": 1280, "height": 900}
WAIT = 10_000  # ms: the longest any expectation waits for the page


def browser_or_skip() -> Any:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        async_playwright = None
    if async_playwright is None or not Path(CHROMIUM).exists():
        if os.environ.get("NOD_REQUIRE_BROWSER") == "1":
            pytest.fail("NOD_REQUIRE_BROWSER=1 but Playwright or /usr/bin/chromium is missing.")
        pytest.skip("No browser: install Debian's chromium and `pip install playwright` (.ci/run does).")
    return async_playwright


class Contexts:
    """One test's share of the session's browser: ``new_context`` as Playwright's, each context
    closed by ``close`` (the next test finds no page, cookie or storage of this one's)."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser
        self._opened: list[Any] = []

    async def new_context(self, **options: Any) -> Any:
        context = await self._browser.new_context(**options)
        self._opened.append(context)
        return context

    async def close(self) -> None:
        for context in self._opened:
            await context.close()


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("NOD_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def open_page(site: PageSite, browser: Any, viewport: dict[str, int] | None = None, scheme: str = "light",
                    script: bool = True) -> Any:
    """A new signed-in tab; ``page.errors`` collects console errors and uncaught exceptions."""
    context = await browser.new_context(viewport=viewport or DESK, color_scheme=scheme, java_script_enabled=script,
                                        accept_downloads=True)
    page = await context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    parts = urlsplit(await site.link())
    await page.goto(f"{site.base}{parts.path}?{parts.query}")
    page.errors = errors
    return page


async def stays(page: Any) -> None:
    """Mark the loaded document: ``still_here`` is true only while no navigation or reload happened."""
    await page.evaluate("window.__nodStay = true")


async def still_here(page: Any) -> bool:
    return bool(await page.evaluate("window.__nodStay === true"))


async def axe(page: Any) -> dict[str, list[str]]:
    """axe-core's violations on the page as it is now, by impact: {impact: [rule id (nodes)]}."""
    from axe_playwright_python.async_playwright import Axe

    results = await Axe().run(page)
    found: dict[str, list[str]] = {}
    for violation in results.response["violations"]:
        found.setdefault(violation["impact"] or "none", []).append(
            f"{violation['id']} ({len(violation['nodes'])}: {violation['nodes'][0]['target']})")
    return found


AREA_NOTES = {
    "about": [("job", "Job: product designer at Lumen"), ("home", "Lives in Lisbon, Alfama"),
              ("boat", "Boat: Gaivota, a 7 m sloop"), ("birthday", "Birthday: 14 March"),
              ("languages", "Speaks Portuguese and English"), ("dog", "Has a dog called Bolo")],
    "preferences": [("coffee", "Coffee: black, no sugar"), ("seat", "Window seat on flights"),
                    ("diet", "Vegetarian, eats fish"), ("email-length", "Prefers short emails"),
                    ("meetings", "Meetings after 10:00"), ("spelling", "Writes in British English")],
    "people": [("sister", "Sister: Ana, lives in Porto"), ("partner", "Partner: Rui, a nurse"),
               ("boss", "Boss: Helena Costa"), ("dentist", "Dentist: Dr. Sousa, Rua Augusta"),
               ("best-friend", "Best friend: Marta, in Berlin"), ("mother", "Mother: Lúcia, 68")],
    "routines": [("gym", "Gym on Mondays and Thursdays"), ("swim", "Swims on Friday mornings"),
                 ("call-mother", "Calls mother on Sundays"), ("rent", "Pays rent on the 1st"),
                 ("budget", "Reviews budget every last Friday"), ("dog-walk", "Walks Bolo at 07:00")],
    "lessons": [("airline", "Do not book Ryanair"), ("tide", "Check the tide before sailing"),
                ("dentist-reminder", "Confirm the dentist a day before"),
                ("friday-calls", "Never schedule calls on Friday afternoon"),
                ("ana-address", "Ask before sharing Ana's address"),
                ("work-calendar", "Use the work calendar for Lumen meetings")],
}
RIVER = "the dentist is Dr. Sousa, near the river"


async def thirty_notes(site: PageSite) -> None:
    """Thirty notes across the five areas — stated, mentioned once (one message cited twice), learned
    (two messages), one sensitive, one with a summary and one with an expiry — three let-go versions
    (one replaced by a rewrite), and three skills: what a page in use holds. Each inferred note's
    sources are the owner's messages that said it; the dentist's also says "near the river"."""
    svc, owner = site.nod.svc, site.nod.owner
    sent = START - timedelta(days=30)

    async def said(text: str) -> Evidence:
        nonlocal sent
        sent += timedelta(hours=7)
        message = (await svc.messages.append(Message(owner.id, Role.OWNER, text, "local", sent))).message
        return Evidence(message.id, text)

    evidence: dict[str, tuple[Evidence, ...]] = {"people/dentist": (await said(RIVER),)}
    for area, notes in AREA_NOTES.items():
        for i, (slug, text) in enumerate(notes):
            if i % 3 == 1:  # mentioned once: one message, cited twice
                one = await said(f"fyi: {text.lower()}")
                evidence[f"{area}/{slug}"] = (one, Evidence(one.message_id, None))
            elif i % 3 == 2:  # learned: two messages
                evidence[f"{area}/{slug}"] = (await said(text.lower()), await said(f"as I said, {text.lower()}"))

    def seeded(doc: MemoryDocument) -> MemoryDocument:
        for area, notes in AREA_NOTES.items():
            for i, (slug, text) in enumerate(notes):
                path = f"{area}/{slug}"
                doc = ops.add_entry(doc, ops.make_entry(
                    path, text, origin=Origin.INFERRED if i % 3 else Origin.STATED, now=START,
                    evidence=evidence.get(path, ()),
                    abstract="Where Maya lives" if path == "about/home" else None,
                    expires=date(2027, 6, 30) if path == "routines/swim" else None,
                    sensitive=path == "preferences/diet"))
        for path, text, reason in (("about/city", "Lives in Porto", ArchiveReason.STALE),
                                   ("people/coach", "Coach: Pedro", ArchiveReason.WRONG)):
            doc = ops.archive(ops.add_entry(doc, ops.make_entry(path, text, origin=Origin.STATED, now=START)),
                              path, reason, START)
        later = START + timedelta(hours=2)
        doc = ops.replace(doc, ops.make_entry("about/job", "Job: senior product designer at Lumen",
                                              origin=Origin.STATED, now=later), ("about/job",), later)
        skills = tuple(Skill(name, description, body, START, START) for name, description, body in (
            ("book-ferry", "Book the Lisbon–Barreiro ferry on the Transtejo site",
             "1. Open the site\n2. Pick <date>\n3. Pay with the saved card\nGotcha: the date picker skips weekends."),
            ("renew-parking", "Renew the EMEL parking permit", "1. Log in\n2. Renew <plate>\nVerify the email."),
            ("order-groceries", "Order groceries from Continente online",
             "1. Open the basket\n2. Reuse <list>\n3. Pick a slot before 18:00"),
        ))
        return replace(doc, skills=skills)

    await svc.memory.update(owner.id, seeded)
