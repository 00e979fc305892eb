"""The memory page with Gmail on: a fake Google (OAuth and Gmail API) and a browser that walks the consent.

``connect`` does what the owner's browser does: the page's Connect button, Google's consent
(the fake consents at once and redirects), and the redirect back to Nod's callback, which
here is reached on the loopback port instead of the public URL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from core.gmail.link import GmailLink
from core.gmail.values import CALLBACK_PATH, RunReport
from tests.fakes.google_server import CLIENT_ID, CLIENT_SECRET, FakeGoogleServer
from tests.fakes.model_server import FakeModelServer
from tests.integration.page_harness import PageClient, PageSite, make_page_site

RUN_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Callback:
    status: int
    location: str | None
    text: str


@dataclass
class GmailSite:
    site: PageSite
    google: FakeGoogleServer

    @property
    def link(self) -> GmailLink:
        assert self.site.nod.svc.gmail is not None
        return self.site.nod.svc.gmail

    async def consent_url(self, client: PageClient) -> str:
        status, answer = await client.call("POST", "/api/memory/gmail/connect", {})
        assert status == 200, answer
        return str(answer["url"])

    async def follow(self, client: PageClient, consent_url: str) -> Callback:
        """Google's consent screen, then its redirect back to Nod (at the loopback port)."""
        async with client.http.get(consent_url, allow_redirects=False) as google:
            assert google.status == 302, await google.text()
            back = google.headers["Location"]
        return await self.callback(client, back)

    async def callback(self, client: PageClient, back: str) -> Callback:
        parts = urlsplit(back)
        assert parts.path == CALLBACK_PATH
        async with client.http.get(f"{client.base}{parts.path}?{parts.query}", allow_redirects=False) as response:
            return Callback(response.status, response.headers.get("Location"), await response.text())

    async def connect(self, client: PageClient) -> RunReport | None:
        """Connect Gmail from the page and wait for the first run to end."""
        answer = await self.follow(client, await self.consent_url(client))
        assert (answer.status, answer.location) == (303, "/settings/memory"), answer
        return await self.finished()

    async def finished(self) -> RunReport | None:
        """The run going on for Maya, once it ends (bounded)."""
        return await asyncio.wait_for(self.link.runs.wait(self.site.nod.owner.id), RUN_TIMEOUT_S)


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def make_gmail_site(tmp_path: Path, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[GmailSite]:
    # oauthlib refuses a plain-http token endpoint unless told this is a local test server
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    google = await FakeGoogleServer().start()
    try:
        async for site in make_page_site(tmp_path, server, google_client_id=CLIENT_ID, google_client_secret=CLIENT_SECRET,
                                         google_oauth_base_url=google.base_url, gmail_api_base_url=google.base_url):
            yield GmailSite(site, google)
    finally:
        await google.stop()
