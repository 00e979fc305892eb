"""The memory page with thirty notes, as issue 43 found it in use: each rule a test that breaks with it.

Answers beside the form (an error styled and announced as one), search and filters without
a reload, the capacity meter's numbers, names that say which note a button acts on, a restore
that asks first, an edit that keeps the note's place, sources counted once per message, the
sensitive mark, the saving-off banner, the empty state, the short name's pattern, and a phone
that shows memories first.
"""

from __future__ import annotations

import re
from typing import Any

from core.memory.codec import encoded_size
from core.memory.limits import MAX_DOCUMENT_BYTES
from tests.e2e.browser_kit import PHONE, open_page, stays, still_here, thirty_notes
from tests.integration.page_harness import PageSite


async def _memory(site: PageSite) -> Any:
    return (await site.nod.svc.memory.load(site.nod.owner.id)).document


async def test_a_refused_note_says_why_beside_its_form_as_an_error_and_keeps_what_was_typed(
        site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser)
    await stays(page)
    add = page.locator("#add")
    await add.locator("summary").click()
    await add.get_by_label("Short name").fill("card")
    await add.get_by_label("Note").fill("My card is 4111 1111 1111 1111")
    await add.get_by_role("button", name="Add").click()
    error = add.get_by_role("alert").filter(has_text="card number")  # its text arrives just after it
    await error.wait_for()
    assert await error.evaluate("e => e.closest('form') !== null")  # beside the form, not at the top of the page
    assert await add.get_by_label("Note").input_value() == "My card is 4111 1111 1111 1111"
    red = await error.evaluate("e => getComputedStyle(e).color")

    await add.get_by_label("Short name").fill("bike")
    await add.get_by_label("Note").fill("Bike: a blue Brompton")
    await add.get_by_role("button", name="Add").click()
    done = add.get_by_role("status")
    await done.get_by_text("Added ‘bike’ to About you.").wait_for()
    assert await add.get_by_role("alert").count() == 0  # the old error is gone
    green = await done.evaluate("e => getComputedStyle(e).color")
    r, g, b = (int(n) for n in re.findall(r"\d+", red)[:3])
    assert red != green and r > 2 * g and r > 2 * b  # red, not the success colour
    assert await add.get_by_label("Note").input_value() == ""  # ready for the next note
    assert [e.path for e in (await _memory(site)).in_area("about")][-1] == "about/bike"
    assert await page.locator("#n-about-bike .text").inner_text() == "Bike: a blue Brompton"
    assert await still_here(page)
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]


async def test_an_edit_happens_in_place_keeps_focus_and_the_notes_place(site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser)
    await stays(page)
    order = await page.locator("#sec-people article").evaluate_all("notes => notes.map(n => n.id)")
    scrolled = await page.locator("#n-people-boss").evaluate("e => { e.scrollIntoView(); return window.scrollY; }")
    boss = page.locator("#n-people-boss")
    await boss.get_by_role("button", name="Edit 'boss'").click()
    await boss.get_by_label("Note").fill("Boss: Helena Costa, head of design")
    await boss.get_by_role("button", name="Save").click()
    said = boss.get_by_role("status")
    await said.get_by_text("Saved").wait_for()
    assert await page.locator("#sec-people article").evaluate_all("notes => notes.map(n => n.id)") == order
    assert [e.slug for e in (await _memory(site)).in_area("people")][2] == "boss"
    assert await said.evaluate("e => e === document.activeElement")
    assert await said.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
    assert await page.evaluate("window.scrollY") > scrolled / 2  # where the owner was, not back at the top
    assert await still_here(page) and page.errors == []


async def test_search_and_filters_narrow_the_notes_without_a_reload(site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser)
    await stays(page)
    search = page.get_by_role("searchbox", name="Search notes")

    async def shown() -> list[str]:
        return await page.locator("section[data-area] article:visible").evaluate_all("ns => ns.map(n => n.dataset.path)")

    await search.fill("porto")
    assert await shown() == ["people/sister"]
    assert await page.locator("#found").inner_text() == "1 of 30 notes match. Show all"
    assert not await page.locator("#settings").is_visible()  # only notes while searching
    await search.fill("river")  # a word only the source message has ("the dentist is Dr. Sousa, near the river")
    assert "people/dentist" in await shown()
    await search.fill("best friend")  # the short name's words
    assert await shown() == ["people/best-friend"]
    await search.fill("lucia")  # accents ignored: "Lúcia"
    assert await shown() == ["people/mother"]
    assert await page.evaluate("location.search") == "?q=lucia"  # a reload or a shared link keeps it
    await page.get_by_role("link", name="Show all").click()  # straight from the search box (its change event)
    assert len(await shown()) == 30 and await search.input_value() == ""
    await page.locator("summary", has_text="Filters").click()
    filters = page.get_by_role("search")
    await filters.get_by_label("Area").select_option("routines")
    assert len(await shown()) == 6 and all(p.startswith("routines/") for p in await shown())
    await filters.get_by_label("Status").select_option("tentative")
    assert await shown() == ["routines/swim", "routines/budget"]
    await filters.get_by_label("Area").select_option("")
    await filters.get_by_label("Status").select_option("")
    await filters.get_by_label("Sensitive only").check()
    assert await shown() == ["preferences/diet"]
    await page.get_by_role("link", name="Show all").click()
    assert len(await shown()) == 30 and await page.locator("#settings").is_visible()
    await search.fill("zeppelin")
    await page.get_by_text("No notes match.").wait_for()
    assert await still_here(page) and page.errors == []


async def test_the_same_search_works_without_the_script(site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser, script=False)
    await page.get_by_role("searchbox", name="Search notes").fill("porto")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url(re.compile(r"\?q=porto"))
    assert await page.locator("section[data-area] article:visible").evaluate_all(
        "ns => ns.map(n => n.dataset.path)") == ["people/sister"]


async def test_the_capacity_meter_counts_bytes_notes_and_skills_and_warns_before_full(
        site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    size = encoded_size(await _memory(site))
    page = await open_page(site, browser)
    meter = page.get_by_role("meter")
    assert int(await meter.get_attribute("value") or 0) == size
    assert int(await meter.get_attribute("max") or 0) == MAX_DOCUMENT_BYTES == 256 * 1024
    assert await page.locator("#capacity-label").inner_text() == f"{size / 1024:.0f} KB of 256 KB · 30 notes · 3 of 40 skills"
    assert await page.locator("#capacity .warn").count() == 0

    from core.memory import document as ops
    from core.memory.values import Origin
    from tests.integration.harness import START

    def filling(doc: Any) -> Any:  # notes of 3,900 characters up to 85 % of the document
        n = 0
        while encoded_size(doc) < 0.85 * MAX_DOCUMENT_BYTES:
            doc = ops.add_entry(doc, ops.make_entry(f"lessons/long-{n}", f"Lesson {n}: " + "x" * 3_900,
                                                    origin=Origin.STATED, now=START))
            n += 1
        return doc

    await site.nod.svc.memory.update(site.nod.owner.id, filling)
    await page.reload()
    warning = await page.locator("#capacity .warn").inner_text()
    assert warning.startswith("Memory is 8") and "% full" in warning and "forget what you no longer need" in warning


async def test_buttons_name_their_note_and_restore_asks_saying_what_it_replaces(site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser)
    assert await page.get_by_role("button", name="Edit", exact=True).count() == 0
    assert await page.get_by_role("button", name="Edit 'job'", exact=True).count() == 1
    names = await page.locator("section[data-area] form[data-edit] button").evaluate_all(
        "bs => bs.map(b => b.getAttribute('aria-label'))")
    assert len(names) == 30 == len(set(names))
    job = page.locator("#n-about-job")
    await job.get_by_label("More actions for 'job'").click()
    await job.locator("summary", has_text="Forget…").click()
    assert await job.get_by_role("button", name="Forget 'job'", exact=True).is_visible()

    old = page.locator("article.archived", has_text="Job: product designer at Lumen")
    assert "Replaced by “Job: senior product designer at Lumen” (a newer version)" in await old.inner_text()
    await old.get_by_label("Restore 'job'…").click()
    ask = await old.locator("form").inner_text()
    assert "It replaces the current note “Job: senior product designer at Lumen”, which moves to Let go." in ask
    assert (await _memory(site)).get("about/job").text == "Job: senior product designer at Lumen"  # nothing yet
    await old.get_by_role("button", name="Restore 'job' now").click()
    await page.locator("#archive").get_by_role("status").filter(has_text="Restored").wait_for()
    assert (await _memory(site)).get("about/job").text == "Job: product designer at Lumen"
    assert await page.locator("#sec-about article").first.get_attribute("id") == "n-about-job"  # in its place
    assert page.errors == []


async def test_sources_are_counted_once_sensitive_notes_are_marked_and_labels_are_words(
        site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser)
    home = page.locator("#n-about-home")  # one message, cited twice
    assert await home.locator(".sources summary").inner_text() == "1 source"
    assert await home.locator(".label").first.inner_text() == "Mentioned once"
    assert await page.locator("#n-about-boat .sources summary").inner_text() == "2 sources"
    assert await page.locator("#n-preferences-diet .label-sensitive").inner_text() == "Sensitive topic"
    assert await page.locator(".label-sensitive").count() == 1
    body = await page.locator("main").inner_text()
    for raw in ("about/", "stale", "2026-", "GOOGLE_CLIENT_ID", "README", "slug"):
        assert raw not in body, raw
    assert "Mentioned once, and not again for 60 days, 3 Dec, 09:00" in body
    assert "Gmail is not set up on this Nod" in body


async def test_saving_off_shows_a_banner_and_a_new_owner_reads_how_memory_fills(site: PageSite, browser: Any) -> None:
    page = await open_page(site, browser)
    empty = page.locator("#empty")
    assert "Nothing saved yet" in await empty.inner_text()
    assert "remember that my sister Ana lives in Porto" in await empty.inner_text()
    assert await page.locator("#sec-people .empty").inner_text() == \
        "Nothing here yet. The people you mention: family, friends, colleagues."
    assert await page.locator(".banner").count() == 0
    await page.get_by_role("switch", name="Save what I tell Nod to remember").uncheck()
    await page.locator(".banner").get_by_text("Saving is off.").wait_for()
    assert (await site.nod.svc.owners.by_id(site.nod.owner.id)).settings.saving_enabled is False
    await page.reload()
    assert "Nod saves nothing new" in await page.locator(".banner").inner_text()
    await page.get_by_role("link", name="Turn saving on").click()
    await page.get_by_role("switch", name="Save what I tell Nod to remember").check()
    await page.locator(".banner").wait_for(state="detached")
    assert page.errors == []


async def test_the_short_name_pattern_compiles_and_checks_in_chromium(site: PageSite, browser: Any) -> None:
    page = await open_page(site, browser)
    await page.locator("#add summary").click()
    field = page.get_by_label("Short name")
    await field.fill("Bad Name")
    assert await field.evaluate("e => e.validity.patternMismatch") is True
    await field.fill("best-friend-2")
    assert await field.evaluate("e => e.validity.valid") is True
    pattern = await field.get_attribute("pattern")
    assert await page.evaluate("p => { new RegExp(p, 'v'); return true; }", pattern)  # Chromium compiles with v
    assert page.errors == []  # no "Pattern attribute value … is not a valid regular expression"


async def test_a_phone_shows_memories_first_in_compact_rows(site: PageSite, browser: Any) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser, PHONE)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    first = page.locator("#n-about-job")
    box = await first.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 812  # a note on the first screen
    settings = await page.locator("#settings").bounding_box()
    archive = await page.locator("#archive").bounding_box()
    assert settings is not None and archive is not None and settings["y"] > archive["y"]  # settings come last
    heights = sorted(await page.locator("section[data-area] article").evaluate_all(
        "ns => ns.map(n => n.getBoundingClientRect().height)"))
    assert heights[len(heights) // 2] < 90 and heights[-1] < 140  # a line of text, a line of labels and buttons
    index = page.get_by_role("navigation", name="Memory areas")
    assert await page.evaluate("() => { window.scrollTo(0, 3000); return window.scrollY; }") == 3000
    assert (await index.bounding_box() or {"y": -1})["y"] >= 0  # the area index stays at hand
    await index.get_by_role("link", name="Lessons 6").click()
    await page.wait_for_url(re.compile("#sec-lessons$"))
    assert page.errors == []
