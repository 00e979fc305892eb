"""history_search at scale: a deterministic 1,000,000-message thread, timed per query.

The thread is generated here (never committed): pseudo-words with Zipf-distributed
frequencies (rank ** -1.07, English stop words as the most frequent ranks), messages of
3–40 words, alternating owner and Nod, one every three minutes. Queries are 1–3 words
drawn Zipf-weighted from the non-stop vocabulary, labelled common (every word in the top
1,000) or rare (some word beyond it). Each query runs through the real HistorySearch on
SQLite (and PostgreSQL with NOD_TEST_POSTGRES_URL): first page, first page with a
one-year date range, and fifth page (after walking four cursors); every answer carries an
exact totalMatches. The same queries then run on naive FTS5 (``ORDER BY bm25() LIMIT 10``
with a ``count(*)``), on tantivy (en_stem, top 10 with the count) and on bm25s, reported
as ratios to Nod's SQLite p50. The baselines need ``pip install -e '.[bench]'``; a missing
one is skipped with a line saying so.
"""

from __future__ import annotations

import gc
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.storage.database import create_engine
from adapters.storage.message_import import append_in_order
from adapters.storage.message_store import IMPORT_BATCH, MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from bot.wiring import history_search
from core.clock import SystemClock
from core.history.search import HistorySearch
from core.message import Message, Role
from core.owner import Owner
from core.text import STOP_WORDS
from tests.tool_calls import history_args

START = datetime(2021, 1, 1, tzinfo=UTC)
VOCABULARY = 60_000
COMMON = 1_000
SYLLABLES = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["ar", "en", "ol", "us", "ith"]


@dataclass(frozen=True)
class Query:
    text: str
    kind: str  # "common" or "rare"


def vocabulary(rng: random.Random) -> list[str]:
    """Stop words first (most frequent), then distinct pseudo-words of 1–4 syllables."""
    words = sorted(STOP_WORDS)
    seen = set(words)
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def zipf_weights(n: int) -> list[float]:
    return [1 / (rank ** 1.07) for rank in range(1, n + 1)]


def messages_text(rng: random.Random, words: list[str], count: int) -> Iterator[str]:
    weights = zipf_weights(len(words))
    cumulative: list[float] = []
    total = 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    for _ in range(count):
        size = rng.randint(3, 40)
        yield " ".join(rng.choices(words, cum_weights=cumulative, k=size))


def queries(rng: random.Random, words: list[str], count: int) -> list[Query]:
    content = [w for w in words if w not in STOP_WORDS]
    weights = zipf_weights(len(content))
    found: list[Query] = []
    while len(found) < count:
        picked = rng.choices(range(len(content)), weights=weights, k=rng.randint(1, 3))
        kind = "common" if max(picked) < COMMON else "rare"
        found.append(Query(" ".join(content[i] for i in picked), kind))
    return found


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def row(label: str, samples: dict[str, list[float]], base: float | None = None) -> str:
    cells = []
    for kind in ("all", "common", "rare"):
        p50, p99 = percentiles(samples[kind])
        cells += [f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}"]
    ratio = "" if base is None else f"{percentiles(samples['all'])[0] / base:.2f}×"
    return f"| {label} | " + " | ".join(cells) + f" | {ratio} |"


async def timed(batch: list[Query], run: Callable[[str], Awaitable[Any]]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"all": [], "common": [], "rare": []}
    for query in batch:
        began = time.perf_counter()
        await run(query.text)
        spent = time.perf_counter() - began
        samples["all"].append(spent)
        samples[query.kind].append(spent)
    return samples


def _message(owner_id: int, texts: list[str], i: int) -> Message:
    return Message(owner_id, Role.OWNER if i % 2 == 0 else Role.ASSISTANT, texts[i], "bench",
                      START + timedelta(minutes=3 * i))


async def load(url: str, texts: list[str]) -> tuple[Owner, HistorySearch, float, Any]:
    """Import the thread the way ``nod history import`` stores it (adapters.storage.message_import:
    batches of IMPORT_BATCH in order, the next one prepared while SQLite stores the last);
    return the import rate."""
    engine = create_engine(url)
    await migrate(engine)
    clock = SystemClock()
    owner = await OwnerStore(engine).add("Scale", "UTC", (), clock.now())
    store = MessageStore(engine, clock)

    async def batches() -> AsyncIterator[list[Message]]:
        for first in range(0, len(texts), IMPORT_BATCH):
            yield [_message(owner.id, texts, i) for i in range(first, min(first + IMPORT_BATCH, len(texts)))]

    began = time.perf_counter()
    await append_in_order(store, owner.id, batches())
    rate = len(texts) / (time.perf_counter() - began)
    return owner, history_search(engine, store), rate, engine


def cli_import(texts: list[str], where: Path) -> str:
    """``nod history import`` itself, a process of its own, on the same thread as JSON Lines:
    lines per second from the command's start to its exit (start-up included)."""
    lines = where / "thread.jsonl"
    with lines.open("w") as out:
        for i, words in enumerate(texts):
            sent = (START + timedelta(minutes=3 * i)).isoformat()
            out.write(json.dumps({"role": "owner" if i % 2 == 0 else "assistant", "text": words, "sent_at": sent}) + "\n")
    env = {**os.environ, "NOD_DATABASE_URL": f"sqlite+aiosqlite:///{where / 'cli.db'}"}
    nod = [sys.executable, "-m", "bot"]
    subprocess.run([*nod, "init"], env=env, check=True, capture_output=True)  # only init and run create a database
    subprocess.run([*nod, "owners", "add", "Scale"], env=env, check=True, capture_output=True)
    began = time.perf_counter()
    done = subprocess.run([*nod, "history", "import", "--owner", "Scale", str(lines)], env=env, capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        return f"nod history import failed: {done.stderr.strip()}"
    return f"nod history import (SQLite, its own process): {len(texts) / took:,.0f} lines/s ({took:.1f} s)"


async def with_derived_index(url: str, engine: Any, rates: list[str], directory: Path | None = None) -> HistorySearch:
    """The production path: the derived tantivy index (beside SQLite, or in ``directory`` for
    PostgreSQL), built (caught up) once here."""
    index = DerivedIndex.beside(url, engine, directory)
    assert index is not None
    began = time.perf_counter()
    await index.warm()  # everything stored so far, waited for: a search would build it in the background
    assert await index.ready_for(index.watermark), "the derived index did not build"
    took = time.perf_counter() - began
    size = sum(f.stat().st_size for f in index.directory.rglob("*") if f.is_file())
    rates.append(f"Nod derived index first build ({engine.dialect.name}): {index.watermark / took:,.0f} messages/s, "
                 f"{took:.1f} s, {size / 2**20:,.0f} MiB on disk")
    return history_search(engine, MessageStore(engine, SystemClock()), index)


async def nod_rows(name: str, search: HistorySearch, owner: Owner, batch: list[Query]) -> list[tuple[str, dict[str, list[float]]]]:
    last = START + timedelta(minutes=3 * 1_000_000)
    year = {"from": (last - timedelta(days=400)).date().isoformat(), "to": (last - timedelta(days=35)).date().isoformat()}

    async def first(q: str) -> Any:
        return await search.search(owner, history_args({"query": q}))

    async def dated(q: str) -> Any:
        return await search.search(owner, history_args({"query": q, **year}))

    async def fifth(q: str) -> Any:
        answer = await search.search(owner, history_args({"query": q}))
        for _ in range(4):
            if not answer.get("nextCursor"):
                return answer
            answer = await search.search(owner, history_args({"query": q, "cursor": answer["nextCursor"]}))
        return answer

    gc.collect()
    gc.freeze()  # as `nod run` once started (bot/run.py); the bench's own million texts are no server's either
    rows = [(f"Nod {name}, page 1", await timed(batch, first)), (f"Nod {name}, page 1, dates", await timed(batch, dated))]
    # The fifth page is timed as the whole walk of five pages, divided by five: it is what
    # an agent that pages that far pays per page.
    walk = await timed(batch, fifth)
    rows.append((f"Nod {name}, pages 1–5 (per page)", {k: [v / 5 for v in vs] for k, vs in walk.items()}))
    return rows


def naive_fts5(db: Path, batch: list[Query]) -> dict[str, list[float]]:
    conn = sqlite3.connect(db)
    samples: dict[str, list[float]] = {"all": [], "common": [], "rare": []}
    for query in batch:
        match = " OR ".join(f'"{w}"' for w in query.text.split())
        began = time.perf_counter()
        conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH ?", (match,)).fetchone()
        conn.execute("SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY bm25(search_fts) LIMIT 10", (match,)).fetchall()
        spent = time.perf_counter() - began
        samples["all"].append(spent)
        samples[query.kind].append(spent)
    conn.close()
    return samples


def tantivy_baseline(texts: list[str], batch: list[Query], where: Path) -> tuple[dict[str, list[float]], float] | str:
    try:
        import tantivy  # type: ignore[import-not-found]
    except ImportError:
        return "tantivy not installed (pip install -e '.[bench]')"
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    builder.add_integer_field("id", stored=True, fast=True)
    schema = builder.build()
    where.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema, path=str(where))
    writer = index.writer(heap_size=500_000_000)
    began = time.perf_counter()
    for i, body in enumerate(texts):
        writer.add_document(tantivy.Document(text=body, id=i))
    writer.commit()
    writer.wait_merging_threads()
    rate = len(texts) / (time.perf_counter() - began)
    index.reload()
    searcher = index.searcher()
    samples: dict[str, list[float]] = {"all": [], "common": [], "rare": []}
    for query in batch:
        began = time.perf_counter()
        parsed = index.parse_query(query.text, ["text"])
        result = searcher.search(parsed, 10, count=True)
        _ = (result.count, [searcher.doc(addr)["id"] for _, addr in result.hits])
        spent = time.perf_counter() - began
        samples["all"].append(spent)
        samples[query.kind].append(spent)
    return samples, rate


def bm25s_baseline(texts: list[str], batch: list[Query]) -> dict[str, list[float]] | str:
    try:
        import bm25s  # type: ignore[import-not-found]
        import Stemmer  # type: ignore[import-not-found]  # noqa: F401 - bm25s's optional stemmer
        stemmer: Any = Stemmer.Stemmer("english")
    except ImportError:
        try:
            import bm25s  # type: ignore[import-not-found]
        except ImportError:
            return "bm25s not installed (pip install -e '.[bench]')"
        from core.text import stem

        stemmer = type("S", (), {"stemWords": staticmethod(lambda ws: [stem(w) for w in ws])})()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    samples: dict[str, list[float]] = {"all": [], "common": [], "rare": []}
    for query in batch:
        began = time.perf_counter()
        tokens = bm25s.tokenize([query.text], stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.retrieve(tokens, k=10, show_progress=False)
        spent = time.perf_counter() - began
        samples["all"].append(spent)
        samples[query.kind].append(spent)
    return samples


def header() -> None:
    print("| engine | all p50 ms | all p99 ms | common p50 | common p99 | rare p50 | rare p99 | p50 vs Nod SQLite |")
    print("|" + "---|" * 8)


async def run_scale(size: int, query_count: int) -> None:
    rng = random.Random(20261203)
    words = vocabulary(rng)
    print(f"Generating {size:,} messages…", flush=True)
    texts = list(messages_text(rng, words, size))
    batch = queries(random.Random(7), words, query_count)
    kinds = {k: sum(q.kind == k for q in batch) for k in ("common", "rare")}
    print(f"{len(batch)} queries: {kinds['common']} common, {kinds['rare']} rare")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "scale.db"
        owner, search, rate, engine = await load(f"sqlite+aiosqlite:///{db}", texts)
        rates = [f"Nod SQLite import (as nod history import stores it): {rate:,.0f} messages/s",
                 cli_import(texts, Path(tmp))]
        derived = await with_derived_index(f"sqlite+aiosqlite:///{db}", engine, rates)
        rows = await nod_rows("SQLite", derived, owner, batch)
        rows.append(("Nod SQLite FTS5 only, page 1", await timed(batch, lambda q: search.search(owner, history_args({"query": q})))))
        await engine.dispose()
        base = percentiles(rows[0][1]["all"])[0]
        rows.append(("naive FTS5 (bm25() LIMIT 10 + count)", naive_fts5(db, batch)))
        tantivy = tantivy_baseline(texts, batch, Path(tmp) / "tantivy")
        if isinstance(tantivy, str):
            rates.append(tantivy)
        else:
            rows.append(("tantivy en_stem (top 10 + count)", tantivy[0]))
            rates.append(f"tantivy index build: {tantivy[1]:,.0f} messages/s")
        bm25 = bm25s_baseline(texts, batch)
        if isinstance(bm25, str):
            rates.append(bm25)
        else:
            rows.append(("bm25s (top 10, no count)", bm25))
    url = os.environ.get("NOD_TEST_POSTGRES_URL")
    if url:
        rows += await _postgres(url, texts, batch, rates)
    else:
        rates.append("PostgreSQL skipped: set NOD_TEST_POSTGRES_URL")
    header()
    for label, samples in rows:
        print(row(label, samples, base))
    for line in rates:
        print(line)


async def _postgres(url: str, texts: list[str], batch: list[Query], rates: list[str]) -> list[tuple[str, dict[str, list[float]]]]:
    from tests.conftest import drop_postgres_database, fresh_postgres_url

    os.environ.setdefault("NOD_TEST_POSTGRES_URL", url)
    db_url = await fresh_postgres_url()
    try:
        owner, search, rate, engine = await load(db_url, texts)
        rates.append(f"Nod PostgreSQL import (as nod history import stores it): {rate:,.0f} messages/s")
        try:
            rows = await nod_rows("PostgreSQL tsvector", search, owner, batch)
            with tempfile.TemporaryDirectory() as where:
                derived = await with_derived_index(db_url, engine, rates, Path(where) / "search")
                rows += await nod_rows("PostgreSQL derived index", derived, owner, batch)
            return rows
        finally:
            await engine.dispose()
    finally:
        await drop_postgres_database(db_url)
