"""The browser tests' fixtures: Nod's page on a loopback port, and Debian's Chromium through Playwright.

The ``nod`` command's own tests run it in process (``tests/cli_runner.py``, ``tests/integration/cli/``);
what stays here starts real processes or a real browser.

One Chromium serves the whole session (Playwright's recommended pattern): each test gets
fresh browser contexts — their own cookies, storage and cache — closed after it. Launching
Chromium and Playwright's driver for each test cost about 0.4 s of CPU a test. A Playwright
connection belongs to the event loop that opened it, so the tests that take ``browser`` and
the fixtures they share it with run on pytest-asyncio's session loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.browser_kit import CHROMIUM, FLAGS, Contexts, browser_or_skip
from tests.fakes.model_server import FakeModelServer
from tests.integration.page_harness import PageSite, make_page_site

SESSION_LOOP = pytest.mark.asyncio(loop_scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests here that take a fixture of the session's event loop run on it too."""
    for item in items:
        if {"browser", "site", "server"} & set(getattr(item, "fixturenames", ())) and \
                Path(__file__).parent in Path(str(item.path)).parents:
            item.add_marker(SESSION_LOOP, append=False)


@pytest_asyncio.fixture(loop_scope="session")
async def server() -> AsyncIterator[FakeModelServer]:
    """The scripted model server (as tests/conftest.py's), on the browser tests' loop."""
    fake = await FakeModelServer().start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def site(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[PageSite]:
    """Nod's web application with the memory page on a loopback port (the browser tests' server)."""
    async for running in make_page_site(tmp_path, server):
        yield running


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[Any]:
    """Debian's Chromium through Playwright, launched once (skips, or fails under NOD_REQUIRE_BROWSER=1, without it)."""
    playwright = await browser_or_skip()().start()
    try:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()
    finally:
        await playwright.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def browser(chromium: Any) -> AsyncIterator[Contexts]:
    """The session's Chromium as one test sees it: the contexts it opens are its own, closed after it."""
    assert chromium.is_connected(), "Chromium went away during the session"
    contexts = Contexts(chromium)
    try:
        yield contexts
    finally:
        await contexts.close()
