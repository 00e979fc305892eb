"""The browser tests' fixtures: Nod's page on a loopback port, and Debian's Chromium through Playwright.

The ``nod`` command's own tests run it in process (``tests/cli_runner.py``, ``tests/integration/cli/``);
what stays here starts real processes or a real browser.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser_kit import CHROMIUM, FLAGS, browser_or_skip
from tests.fakes.model_server import FakeModelServer
from tests.integration.page_harness import PageSite, make_page_site


@pytest.fixture
async def site(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[PageSite]:
    """Nod's web application with the memory page on a loopback port (the browser tests' server)."""
    async for running in make_page_site(tmp_path, server):
        yield running


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Debian's Chromium through Playwright (skips, or fails under NOD_REQUIRE_BROWSER=1, without it)."""
    async_playwright = browser_or_skip()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()
