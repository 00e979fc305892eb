"""Storage benchmark: a full 256 KiB memory document through the real stores."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from adapters.storage.database import create_engine
from adapters.storage.memory_store import MEMORY_PATH, MemoryStore
from adapters.storage.migrations import migrate
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from core.clock import SystemClock
from core.memory import document as ops
from core.memory.codec import encode, encoded_size
from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.values import Evidence, MemoryDocument, Origin

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def full_document() -> MemoryDocument:
    """Entries of realistic length until the next one would pass 256 KiB."""
    doc, i = MemoryDocument(), 0
    while True:
        entry = ops.make_entry(
            f"about/fact-{i}", f"Fact {i}: " + "the owner said something worth keeping " * 12,
            origin=Origin.INFERRED, now=NOW, evidence=(Evidence(i, "something worth keeping"),),
        )
        bigger = ops.add_entry(doc, entry)
        if encoded_size(bigger) > MAX_DOCUMENT_BYTES - 10_000:
            return doc
        doc, i = bigger, i + 1


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _bench_backend(name: str, url: str, rounds: int) -> list[str]:
    engine = create_engine(url, pool_size=20)
    await migrate(engine)
    owner = (await OwnerStore(engine).add(f"bench-{time.time_ns()}", "UTC", (), NOW)).id
    objects = ObjectStore(engine)
    store = MemoryStore(objects, SystemClock())
    doc = full_document()
    version = await store.save(owner, doc, 0)
    loads, saves, cycles = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        loaded = await store.load(owner)
        t1 = time.perf_counter()
        version = await store.save(owner, loaded.document, loaded.version)
        t2 = time.perf_counter()
        loads.append(t1 - t0)
        saves.append(t2 - t1)
        cycles.append(t2 - t0)
    raw_body = encode(doc)
    raw = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        version = await objects.put(owner, MEMORY_PATH, raw_body, version, NOW)
        raw.append(time.perf_counter() - t0)
    size = len(raw_body.encode())
    rows = [
        f"| {name} | load (read + decode) | {size:,} B | {_pct(loads, .5):.2f} | {_pct(loads, .99):.2f} |",
        f"| {name} | CAS save (fit + encode + write) | {size:,} B | {_pct(saves, .5):.2f} | {_pct(saves, .99):.2f} |",
        f"| {name} | CAS write of the body alone | {size:,} B | {_pct(raw, .5):.2f} | {_pct(raw, .99):.2f} |",
        f"| {name} | update = load + apply + CAS save | {size:,} B | {_pct(cycles, .5):.2f} | {_pct(cycles, .99):.2f} |",
    ]
    rows.append(await _throughput(name, store, owner, doc))
    await engine.dispose()
    return rows


async def _throughput(name: str, store: MemoryStore, owner: int, doc: MemoryDocument) -> str:
    writers, each = 20, 5
    paths = [e.path for e in doc.entries[: writers]]

    async def writer(path: str) -> None:
        for k in range(each):
            await store.update(owner, lambda d, p=path, k=k: ops.add_evidence(d, p, Evidence(10**6 + k), NOW))

    t0 = time.perf_counter()
    await asyncio.gather(*(writer(p) for p in paths))
    elapsed = time.perf_counter() - t0
    return f"| {name} | {writers} concurrent writers × {each} updates | full doc | {writers * each / elapsed:.0f} updates/s | |"


async def run_storage(rounds: int) -> None:
    rows = ["| backend | operation | size | p50 ms | p99 ms |", "| --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as folder:
        rows += await _bench_backend("SQLite", f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}", rounds)
    pg = os.environ.get("NOD_TEST_POSTGRES_URL")
    if pg:
        rows += await _bench_backend("PostgreSQL", pg, rounds)
    else:
        rows.append("| PostgreSQL | skipped: set NOD_TEST_POSTGRES_URL | | | |")
    print("\n".join(rows))
