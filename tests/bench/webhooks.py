"""Inbound WhatsApp webhooks against a real ``nod run`` process, at rising rates.

Nod runs as its own process (SQLite, or PostgreSQL with NOD_TEST_POSTGRES_URL), with the
scripted model server answering at once and the fake Twilio REST API taking the replies,
both in a third process (``tests.fakes.serve``), so neither Nod nor the load generator
shares its event loop with them. The generator is open-loop: request ``i`` is due at ``i / rate`` seconds and its
acknowledgement latency is measured from when it was due, so a server that falls behind
is charged for the queue it built. Each message comes from one of ``OWNERS`` owners in
turn, signed as Twilio signs it. Reported: accepted (HTTP 200) messages per second,
acknowledgement p50/p99, failures, and the replies Twilio received for that rate once the
turns drained (a restarted turn answers its owner's newer messages at once, so there are
fewer replies than messages). Each rate starts after the previous one's turns drained.

Diagnostics: ``NOD_BENCH_RATES=50,100`` picks the rates, ``NOD_WORK_SLOTS`` is
passed to Nod, ``NOD_BENCH_SLOW=1`` prints every acknowledgement over 30 ms,
``NOD_BENCH_STDERR=FILE`` keeps Nod's log, ``NOD_BENCH_PROFILE=FILE`` runs Nod under cProfile.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bot.settings import Settings
from bot.wiring import services
from core.owner import Identity
from tests.bench.scale import percentiles
from tests.fakes import twilio_server as tw
from tests.fakes.loopback import clean_env, free_port, wait_healthy

OWNERS = 200
RATES = tuple(int(r) for r in os.environ.get("NOD_BENCH_RATES", "50,100,200,400").split(","))
SECONDS = 5.0
PUBLIC = "https://nod.example.org"


def _number(n: int) -> str:
    return f"+3519{n:08d}"


async def _owners(url: str) -> None:
    async with services(Settings(database_url=url)) as svc:
        for n in range(OWNERS):
            await svc.owners.add(f"owner{n}", "UTC", (Identity("whatsapp", _number(n)),), svc.clock.now())


async def _sent(http: aiohttp.ClientSession, twilio_url: str) -> int:
    async with http.get(twilio_url + "/_sent") as response:
        return int(await response.json())


async def _drained(http: aiohttp.ClientSession, twilio_url: str, quiet_s: float = 10.0, limit_s: float = 120.0) -> None:
    """Until no reply has gone out for ``quiet_s`` (an owner has at most one pending turn)."""
    last, quiet_since, began = -1, time.perf_counter(), time.perf_counter()
    while time.perf_counter() - began < limit_s:
        now_sent = await _sent(http, twilio_url)
        if now_sent != last:
            last, quiet_since = now_sent, time.perf_counter()
        elif time.perf_counter() - quiet_since >= quiet_s:
            return
        await asyncio.sleep(0.25)


async def _load(http: aiohttp.ClientSession, base: str, rate: int, first_sid: int) -> tuple[list[float], int]:
    total = int(rate * SECONDS)
    latencies: list[float] = []
    failures = 0
    start = time.perf_counter() + 0.05

    async def one(i: int) -> None:
        nonlocal failures
        due = start + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        form = tw.inbound_form(f"SM{first_sid + i:032d}", _number(i % OWNERS), f"message {i}: what is on today?")
        headers = {"X-Twilio-Signature": tw.sign(PUBLIC + "/webhooks/whatsapp", form)}
        try:
            async with http.post(base + "/webhooks/whatsapp", data=form, headers=headers) as response:
                await response.read()
                ok = response.status == 200
        except aiohttp.ClientError:
            ok = False
        if ok:
            latencies.append((time.perf_counter() - due) * 1000)
            if os.environ.get("NOD_BENCH_SLOW") and latencies[-1] > 30:
                print(f"slow i={i} ms={latencies[-1]:.1f} t={due - start:.2f}")
        else:
            failures += 1

    await asyncio.gather(*(one(i) for i in range(total)))
    return latencies, failures


async def _backend(name: str, url: str) -> list[str]:
    await _owners(url)
    fakes = subprocess.Popen([sys.executable, "-m", "tests.fakes.serve"], stdout=subprocess.PIPE, text=True)
    model_port, twilio_port = (int(p) for p in fakes.stdout.readline().split())  # type: ignore[union-attr]
    model_url, twilio_url = f"http://127.0.0.1:{model_port}/v1", f"http://127.0.0.1:{twilio_port}"
    port = free_port()
    env = clean_env(NOD_DATABASE_URL=url, NOD_PORT=str(port), NOD_AGENT_MODEL="bench-agent", OPENAI_BASE_URL=model_url,
               OPENAI_API_KEY="bench", TWILIO_ACCOUNT_SID=tw.ACCOUNT_SID, TWILIO_AUTH_TOKEN=tw.AUTH_TOKEN,
               TWILIO_WHATSAPP_FROM=tw.FROM, TWILIO_API_BASE_URL=twilio_url, NOD_PUBLIC_URL=PUBLIC,
               NOD_LOG_LEVEL="WARNING", NOD_WORK_SLOTS=os.environ.get("NOD_WORK_SLOTS", "2"))
    profile = ["-m", "cProfile", "-o", os.environ["NOD_BENCH_PROFILE"]] if os.environ.get("NOD_BENCH_PROFILE") else []
    stderr = open(os.environ["NOD_BENCH_STDERR"], "w") if os.environ.get("NOD_BENCH_STDERR") else None
    proc = subprocess.Popen([sys.executable, *profile, "-m", "bot", "run"], env=env, stdout=subprocess.PIPE, stderr=stderr)
    rows = []
    try:
        base = f"http://127.0.0.1:{port}"
        await wait_healthy(proc, base)
        connector = aiohttp.TCPConnector(limit=256)
        async with aiohttp.ClientSession(connector=connector) as http:
            await _load(http, base, OWNERS // 5, 10_000_000)  # warm-up: imports, caches, a first message from every owner
            await _drained(http, twilio_url)
            sid = 0
            for rate in RATES:
                sent_before = await _sent(http, twilio_url)
                began = time.perf_counter()
                latencies, failures = await _load(http, base, rate, sid)
                elapsed = time.perf_counter() - began
                sid += int(rate * SECONDS)
                await _drained(http, twilio_url)  # each rate starts from a quiet server
                p50, p99 = percentiles(latencies) if latencies else (float("nan"), float("nan"))
                rows.append(f"| {name} | {rate} | {len(latencies) / elapsed:.0f} | {p50:.1f} | {p99:.1f} | "
                            f"{failures} | {await _sent(http, twilio_url) - sent_before} |")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        fakes.terminate()
        fakes.wait(timeout=10)
    return rows


async def run_webhook_bench() -> None:
    print(f"Inbound WhatsApp webhooks, {OWNERS} owners, {SECONDS:g} s per rate, zero-latency model")
    print("| backend | offered msg/s | accepted msg/s | ack p50 ms | ack p99 ms | failed | replies sent |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for row in await _backend("SQLite", f"sqlite+aiosqlite:///{Path(tmp) / 'nod.db'}"):
            print(row, flush=True)
    postgres = os.environ.get("NOD_TEST_POSTGRES_URL")
    if postgres:
        from tests.conftest import drop_postgres_database, fresh_postgres_url
        url = await fresh_postgres_url()
        try:
            for row in await _backend("PostgreSQL", url):
                print(row, flush=True)
        finally:
            await drop_postgres_database(url)
