"""Nod's web application with the memory page on a loopback port, over a real SQLite file.

``PageClient`` is a browser in miniature: an aiohttp session with its own cookie jar that
opens a sign-in link, keeps the session cookie, reads the CSRF token from the page's meta
tag and sends it with every change, as the page's JavaScript does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from adapters.web.app import build_app
from bot.run import page_services
from core.owner import Owner
from tests.fakes.loopback import serve
from tests.fakes.model_server import FakeModelServer
from tests.integration.harness import Harness, make_harness

SECRET_KEY = "page-test-secret"


@dataclass
class PageClient:
    http: aiohttp.ClientSession
    base: str
    csrf: str = ""

    async def open(self, link: str) -> int:
        """Follow a sign-in link the way a browser does (here, not at the public URL); the page's status."""
        parts = urlsplit(link)
        async with self.http.get(f"{self.base}{parts.path}?{parts.query}") as response:
            html = await response.text()
        found = re.search(r'name="csrf-token" content="([^"]+)"', html)
        self.csrf = found.group(1) if found else ""
        return response.status

    async def call(self, method: str, path: str, body: Any = None, csrf: str | None = None) -> tuple[int, Any]:
        headers = {"X-CSRF-Token": self.csrf if csrf is None else csrf}
        async with self.http.request(method, self.base + path, json=body, headers=headers) as response:
            data = await response.json() if response.content_type == "application/json" else await response.text()
            return response.status, data


@dataclass
class PageSite:
    nod: Harness
    base: str

    async def link(self, owner: Owner | None = None) -> str:
        assert self.nod.svc.page is not None
        return await self.nod.svc.page.link((owner or self.nod.owner).id)

    async def client(self, owner: Owner | None = None) -> PageClient:
        """A browser signed in as ``owner`` (Maya by default)."""
        client = PageClient(aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)), self.base)
        assert await client.open(await self.link(owner)) == 200
        return client


async def make_page_site(tmp_path: Path, server: FakeModelServer, public_url: str = "http://127.0.0.1",
                         **settings: Any) -> AsyncIterator[PageSite]:
    async for nod in make_harness(tmp_path, server, secret_key=SECRET_KEY, public_url=public_url, **settings):
        runner, port = await serve(build_app(nod.svc.health.problem, {}, page_services(nod.svc)))
        try:
            yield PageSite(nod, f"http://127.0.0.1:{port}")
        finally:
            await runner.cleanup()
