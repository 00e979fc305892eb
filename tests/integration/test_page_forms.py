"""The memory page's forms (adapters/web/forms.py) over real HTTP: session, CSRF field, owner scoping,
the redirect and the page's answer without the script, the JSON answer with it, and the backup download."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.memory import document as ops
from core.memory import transfer
from core.memory.values import Origin
from tests.fakes.model_server import FakeModelServer
from tests.integration.harness import START
from tests.integration.page_harness import PageClient, PageSite, make_page_site

INLINE = {"X-Nod-Inline": "1"}


@pytest.fixture
async def site(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[PageSite]:
    async for running in make_page_site(tmp_path, server):
        yield running


@pytest.fixture
async def maya(site: PageSite) -> AsyncIterator[PageClient]:
    client = await site.client()
    try:
        yield client
    finally:
        await client.http.close()


async def _post(client: PageClient, path: str, fields: dict[str, Any], inline: bool = False,
                csrf: bool = True) -> tuple[int, str, Any]:
    data = {**fields, **({"csrf": client.csrf} if csrf else {})}
    async with client.http.post(client.base + "/settings/memory" + path, data=data, allow_redirects=False,
                                headers=INLINE if inline else {}) as response:
        body = await response.json() if response.content_type == "application/json" else await response.text()
        return response.status, response.headers.get("Location", ""), body


async def _boat(site: PageSite) -> str:
    entry = ops.make_entry("about/boat", "Boat: Gaivota", origin=Origin.INFERRED, now=START)
    saved = await site.nod.svc.memory.update(site.nod.owner.id, lambda d: ops.add_entry(d, entry))
    from core.page.view import etag

    boat = saved.document.get("about/boat")
    assert boat is not None
    return etag(boat)


async def test_a_form_without_the_session_or_its_csrf_field_changes_nothing(site: PageSite, maya: PageClient) -> None:
    tag = await _boat(site)
    status, _, body = await _post(maya, "/note/about/boat/forget", {"etag": tag}, csrf=False)
    assert status == 403 and "CSRF" in body
    status, _, body = await _post(maya, "/note/about/boat/forget", {"etag": tag, "csrf": "forged"}, inline=True, csrf=False)
    assert status == 403 and "CSRF" in body["error"]
    async with aiohttp.ClientSession() as stranger:
        async with stranger.post(site.base + "/settings/memory/note/about/boat/forget", data={"etag": tag},
                                 allow_redirects=False) as response:
            assert response.status == 401 and "/settings" in await response.text()
    bo = await site.nod.svc.owners.add("Bo", "UTC", (), START)
    other = await site.client(bo)
    try:  # another owner's session: Maya's note is simply not there
        status, _, body = await _post(other, "/note/about/boat/forget", {"etag": tag}, inline=True)
        assert status == 404
    finally:
        await other.http.close()
    assert (await site.nod.svc.memory.load(site.nod.owner.id)).document.get("about/boat") is not None


async def test_without_the_script_a_change_redirects_to_its_answer_and_a_refusal_is_the_page_with_it(
        site: PageSite, maya: PageClient) -> None:
    tag = await _boat(site)
    status, where, _ = await _post(maya, "/note/about/boat/confirm", {"etag": tag})
    assert status == 303 and where == "/settings/memory?done=confirmed&at=n-about-boat#n-about-boat"
    async with maya.http.get(site.base + where) as page:
        html = await page.text()
    assert '<p class="said" role="status" tabindex="-1" data-said>Confirmed.</p>\n      </article>' in html
    status, _, html = await _post(maya, "/add", {"area": "about", "slug": "Bad Name", "text": "x"})
    assert status == 400
    assert ('role="alert" tabindex="-1" data-said>The short name &#39;Bad Name&#39; (the part after the area, '
            "as in people/sister) must be") in html
    assert 'value="Bad Name"' in html  # what was typed stays in the form


async def test_the_address_bar_cannot_put_words_on_the_page(site: PageSite, maya: PageClient) -> None:
    for query in ("done=%3Cscript%3Ealert(1)%3C/script%3E&at=top", "done=saved&at=%22%3E%3Cscript%3E",
                  "q=%3Cscript%3Ealert(1)%3C/script%3E"):
        async with maya.http.get(f"{site.base}/settings/memory?{query}") as page:
            html = await page.text()
        assert "<script>alert" not in html and '"><script>' not in html
    async with maya.http.get(f"{site.base}/settings/memory?done=saved&at=%22%3E%3Cscript%3E") as page:
        assert 'data-said>Saved.</p>' in await page.text()  # a fixed sentence, at the top: the id was refused


async def test_with_the_script_a_form_answers_json_and_the_preview_is_escaped(site: PageSite, maya: PageClient) -> None:
    status, _, answer = await _post(maya, "/add", {"area": "people", "slug": "sister", "text": "Sister: Ana"}, inline=True)
    assert status == 200 and answer == {"said": "Added ‘sister’ to People.", "at": "add", "go": None, "html": None}
    status, _, answer = await _post(maya, "/add", {"area": "people", "slug": "sister", "text": "again"}, inline=True)
    assert status == 409 and answer["at"] == "add" and answer["error"].endswith(".")
    pasted = "## People\n- Friend: <img src=x onerror=alert(1)>\n"
    status, _, answer = await _post(maya, "/import/preview", {"text": pasted}, inline=True)
    assert status == 200 and answer["said"] == "1 note found; untick what you do not want."
    assert "&lt;img src=x onerror=alert(1)&gt;" in answer["html"] and "<img" not in answer["html"]
    assert "<strong>People:</strong>" in answer["html"]
    status, _, answer = await _post(maya, "/import", {"note": "people:Friend: Marta"}, inline=True)
    assert status == 200 and answer["said"] == "Imported 1 note."


async def test_the_backup_download_is_the_cli_export_and_needs_the_session(site: PageSite, maya: PageClient) -> None:
    await _boat(site)
    async with maya.http.get(site.base + "/api/memory/export.json") as response:
        assert response.status == 200 and response.headers["Content-Disposition"] == 'attachment; filename="nod-memory.json"'
        text = await response.text()
    assert text == await transfer.export_text(site.nod.owner, site.nod.svc.memory, site.nod.svc.schedules)
    assert json.loads(text)["memory"]["entries"][0]["slug"] == "boat"
    async with aiohttp.ClientSession() as stranger:
        async with stranger.get(site.base + "/api/memory/export.json") as response:
            assert response.status == 401
    form = aiohttp.FormData({"csrf": maya.csrf})
    form.add_field("file", b"not json", filename="nod-memory.json", content_type="application/json")
    async with maya.http.post(site.base + "/settings/memory/backup", data=form, headers=INLINE) as response:
        answer = await response.json()
    assert response.status == 400 and answer["at"] == "backup" and "not JSON" in answer["error"]
