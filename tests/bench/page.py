"""The memory page and ``GET /api/memory`` for a full 256 KiB document, on SQLite.

Each sample is one request from an aiohttp client on loopback to Nod's own web application
(the page's real services over a real SQLite file): reading the document, the owner's
sources, building the view and rendering it. Printed: p50/p99 milliseconds and the bytes
sent, plain and gzip-compressed (aiohttp compresses when the browser asks).
"""

from __future__ import annotations

import gzip
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from adapters.web.app import build_app
from bot.run import page_services
from bot.settings import Settings
from bot.wiring import services
from core.memory.codec import encoded_size
from tests.bench.scale import percentiles
from tests.bench.storage import full_document
from tests.fakes.loopback import serve


async def run_page_bench(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite+aiosqlite:///{Path(tmp) / 'page.db'}", secret_key="bench",
                            public_url="http://127.0.0.1")
        async with services(settings) as svc:
            owner = await svc.owners.add("Bench", "UTC", (), svc.clock.now())
            doc = full_document()
            await svc.memory.save(owner.id, doc, 0)
            runner, port = await serve(build_app(svc.health.problem, {}, page_services(svc)))
            try:
                rows = await _measure(svc, owner.id, f"http://127.0.0.1:{port}", rounds)
            finally:
                await runner.cleanup()
    print(f"memory document: {encoded_size(doc):,} bytes, {len(doc.entries)} notes")
    print("| request | n | p50 ms | p99 ms | bytes | gzip bytes |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


async def _measure(svc: object, owner_id: int, base: str, rounds: int) -> list[str]:
    link = await svc.page.link(owner_id)  # type: ignore[attr-defined]
    parts = urlsplit(link)
    rows = []
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"{base}{parts.path}?{parts.query}") as response:
            assert response.status == 200
        for label, path in (("GET /api/memory", "/api/memory"), ("GET /settings/memory", "/settings/memory")):
            samples, body = [], b""
            for _ in range(rounds):
                began = time.perf_counter()
                async with http.get(base + path, headers={"Accept-Encoding": "identity"}) as response:
                    body = await response.read()
                samples.append(time.perf_counter() - began)
            p50, p99 = percentiles(samples)
            rows.append(f"| {label} | {rounds} | {p50 * 1000:.1f} | {p99 * 1000:.1f} | {len(body):,} | "
                        f"{len(gzip.compress(body)):,} |")
    return rows
