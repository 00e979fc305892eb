"""history_search on PostgreSQL with several worker processes writing and searching at once.

The deployment for owners who outgrow a laptop: stateless workers on one PostgreSQL, each
with its own derived index (``NOD_SEARCH_INDEX_DIR`` per worker process). The scale
bench's thread (tests/bench/scale.py) is imported once; the first index build is timed
(the start-up cost of a worker that finds no index: the database answers meanwhile) and
its size read; each worker then starts from a copy of it (a restarted worker) and, per
query, appends one message to the thread and runs a first-page search whose snapshot
includes it: the index answers up to what it holds and the newest messages come from the
database (adapters/storage/search_index/unindexed.py) while it catches up in the background. A worker's first
search (open, verify, catch up) is reported as start-up, apart from the steady state.
Needs NOD_TEST_POSTGRES_URL.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import random
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from adapters.storage.database import create_engine
from adapters.storage.message_store import MessageStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from bot.wiring import history_search
from core.clock import SystemClock
from core.message import NewMessage, Role
from tests.bench import scale
from tests.tool_calls import history_args


async def _worker(url: str, directory: str, texts: list[str], n: int) -> dict[str, list[float]]:
    engine = create_engine(url)
    store = MessageStore(engine, SystemClock())
    owner = await OwnerStore(engine).by_name("Scale")
    began = time.perf_counter()
    index = DerivedIndex.beside(url, engine, Path(directory))
    search = history_search(engine, store, index)
    samples: dict[str, list[float]] = {"all": [], "common": [], "rare": [], "start": []}
    rng = random.Random(n)
    for k, query in enumerate(scale.queries(random.Random(100 + n), scale.vocabulary(random.Random(20261203)), len(texts))):
        await store.append(NewMessage(owner.id, Role.OWNER, texts[k], "bench", scale.START + timedelta(days=3000, seconds=rng.randint(0, 10**6))))
        t = time.perf_counter()
        await search.search(owner, history_args({"query": query.text}))
        spent = time.perf_counter() - t
        if k == 0:  # open the copied index, verify it, catch up, answer: reported as start-up, not steady state
            samples["start"].append(time.perf_counter() - began)
            gc.freeze()  # as `nod run` does once started (bot/run.py): full collections skip start-up's objects
            continue
        samples["all"].append(spent)
        samples[query.kind].append(spent)
    assert index is not None
    await index.close()
    await engine.dispose()
    return samples


def _run_worker(args: tuple[str, str, list[str], int]) -> dict[str, list[float]]:
    return asyncio.run(_worker(*args))


async def run_workers(size: int, query_count: int, workers: int) -> None:
    url = os.environ.get("NOD_TEST_POSTGRES_URL")
    if not url:
        print("PostgreSQL skipped: set NOD_TEST_POSTGRES_URL")
        return
    from tests.conftest import drop_postgres_database, fresh_postgres_url

    rng = random.Random(20261203)
    words = scale.vocabulary(rng)
    print(f"Generating {size:,} messages…", flush=True)
    texts = list(scale.messages_text(rng, words, size))
    extra = list(scale.messages_text(random.Random(5), words, query_count))
    db_url = await fresh_postgres_url()
    rates: list[str] = []
    try:
        _, _, rate, engine = await scale.load(db_url, texts)
        rates.append(f"PostgreSQL import: {rate:,.0f} messages/s")
        with tempfile.TemporaryDirectory() as tmp:
            built = Path(tmp) / "built"
            await scale.with_derived_index(db_url, engine, rates, built)
            await engine.dispose()
            dirs = []
            for n in range(workers):
                dirs.append(str(Path(tmp) / f"worker{n}"))
                shutil.copytree(built, dirs[-1])
            with multiprocessing.get_context("spawn").Pool(workers) as pool:
                results = pool.map(_run_worker, [(db_url, d, extra, n) for n, d in enumerate(dirs)])
    finally:
        await drop_postgres_database(db_url)
    merged: dict[str, list[float]] = {k: [v for r in results for v in r[k]] for k in ("all", "common", "rare")}
    scale.header()
    print(scale.row(f"Nod PostgreSQL derived index, {workers} workers each appending then searching", merged))
    slowest = sorted(merged["all"])[-3:]
    rates.append("slowest steady-state searches: " + ", ".join(f"{s * 1000:,.1f} ms" for s in slowest))
    starts = [s for r in results for s in r["start"]]
    rates.append(f"restarted worker (copied index, catch-up, first answer): {max(starts) * 1000:,.0f} ms at most")
    for line in rates:
        print(line)
