"""The page's backup buttons (the lossless JSON of ``nod memory export --json``) and the page without its script."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.memory import transfer
from core.memory.codec import encode
from core.schedules.model import Kind
from tests.e2e.browser_kit import open_page, stays, still_here, thirty_notes
from tests.integration.harness import START
from tests.integration.page_harness import PageSite


async def _stored(site: PageSite) -> str:
    return encode((await site.nod.svc.memory.load(site.nod.owner.id)).document)


async def test_the_backup_buttons_bring_the_memory_back_to_the_byte(site: PageSite, browser: Any, tmp_path: Path) -> None:
    await thirty_notes(site)
    svc, owner = site.nod.svc, site.nod.owner
    due = START.replace(day=24, hour=9)
    await svc.schedules.create(owner.id, Kind.REMINDER, "call the dentist", due.replace(tzinfo=None), None, due, START, None)
    before = await _stored(site)
    page = await open_page(site, browser)
    await stays(page)
    async with page.expect_download() as download:
        await page.get_by_role("link", name="Download a backup").click()
    backup = tmp_path / "nod-memory.json"
    await (await download.value).save_as(backup)
    assert (await download.value).suggested_filename == "nod-memory.json"
    assert backup.read_text(encoding="utf-8") == await transfer.export_text(owner, svc.memory, svc.schedules)

    coffee = page.locator("#n-preferences-coffee")  # the memory moves on: a note forgotten
    await coffee.get_by_label("More actions for 'coffee'").click()
    await coffee.locator("summary", has_text="Forget…").click()
    await coffee.get_by_role("button", name="Forget 'coffee'", exact=True).click()
    await page.locator("#sec-preferences").get_by_role("status").filter(has_text="Forgot").wait_for()
    assert await _stored(site) != before

    card = page.locator("#backup")
    await card.get_by_label("Backup file").set_input_files(str(backup))
    await card.get_by_role("button", name="Import the backup").click()
    await card.get_by_role("alert").filter(has_text="tick “Replace my current memory” to replace them").wait_for()
    assert "coffee" not in await _stored(site)  # nothing changed

    await card.get_by_label("Backup file").set_input_files(str(backup))
    await card.get_by_label(re.compile("Replace my current memory")).check()
    await card.get_by_role("button", name="Import the backup").click()
    await card.get_by_role("status").get_by_text("Imported 30 notes, 3 archived and 3 skills").wait_for()
    assert await _stored(site) == before  # the document, byte for byte
    assert await page.locator("#n-preferences-coffee").count() == 1  # and the page shows it, in place
    assert [s.text for s in await svc.schedules.active(owner.id)] == ["call the dentist"]  # not made twice
    assert await still_here(page)
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]


async def test_without_the_script_every_change_is_a_form_and_its_answer_is_beside_it(
        site: PageSite, browser: Any, tmp_path: Path) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser, script=False)
    add = page.locator("#add")
    await add.locator("summary").click()
    await add.get_by_label("Short name").fill("bike")
    await add.get_by_label("Note").fill("Bike: a blue Brompton")
    await add.get_by_role("button", name="Add").click()
    await page.wait_for_url(re.compile(r"done=added&at=add#add$"))
    assert await add.get_by_role("status").inner_text() == "Added."

    boss = page.locator("#n-people-boss")
    await boss.get_by_role("button", name="Edit 'boss'").click()
    await page.wait_for_url(re.compile(r"edit=people%2Fboss#n-people-boss$"))
    await boss.get_by_label("Note").fill("Boss: card 4111 1111 1111 1111")
    await boss.get_by_role("button", name="Save").click()
    assert "card number" in await boss.get_by_role("alert").inner_text()  # beside the form, as an error
    assert await boss.get_by_label("Note").input_value() == "Boss: card 4111 1111 1111 1111"
    await boss.get_by_label("Note").fill("Boss: Helena Costa, head of design")
    await boss.get_by_role("button", name="Save").click()
    await page.wait_for_url(re.compile(r"at=n-people-boss#n-people-boss$"))
    assert await boss.get_by_role("status").inner_text() == "Saved."
    assert await page.locator("#sec-people article").nth(2).get_attribute("id") == "n-people-boss"

    old = page.locator("article.archived", has=page.get_by_label("Restore 'city'…"))
    await old.locator("summary").click()
    await old.get_by_role("button", name="Restore 'city' now").click()
    await page.wait_for_url(re.compile(r"at=archive#archive$"))
    assert await page.locator("#n-about-city .text").inner_text() == "Lives in Porto"

    await page.get_by_role("switch", name="Save what I tell Nod to remember").uncheck()
    await page.get_by_role("button", name="Save settings").click()
    await page.wait_for_url(re.compile(r"at=settings#settings$"))
    assert "Saving is off." in await page.locator(".banner").inner_text()
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
