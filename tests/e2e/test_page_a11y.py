"""axe-core on the memory page with thirty notes: no serious or critical violation on a phone or a desk,
in the light or the dark scheme, with every menu and source open and a note's edit form out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser_kit import DESK, PHONE, axe, open_page, shots, thirty_notes
from tests.integration.page_harness import PageSite

BLOCKING = ("serious", "critical")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["1280", "375"])
async def test_axe_finds_nothing_serious(site: PageSite, browser: Any, tmp_path: Path, viewport: dict[str, int],
                                         scheme: str) -> None:
    await thirty_notes(site)
    page = await open_page(site, browser, viewport, scheme)
    await page.screenshot(path=str(shots(tmp_path) / f"page-{viewport['width']}-{scheme}.png"))
    await page.get_by_role("button", name="Edit 'sister'").click()  # a note's edit form, made by the script
    await page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    found = await axe(page)  # with every menu, question, source and form open: what the closed page shows, and more
    assert not any(found.get(impact) for impact in BLOCKING), found
    assert page.errors == []


async def test_axe_does_see_a_button_below_four_and_a_half_to_one(site: PageSite, browser: Any) -> None:
    """The check above is worth something: the dark scheme's old main button (#fff on #58a6ff, 2.5:1)
    is a serious violation here."""
    page = await open_page(site, browser, DESK, "dark")
    await page.evaluate("""() => {
        const button = document.querySelector('#backup a.button');
        button.style.background = '#58a6ff';
        button.style.color = '#ffffff';
    }""")
    assert any("color-contrast" in rule for rule in (await axe(page)).get("serious", []))
