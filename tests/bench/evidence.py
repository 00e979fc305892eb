"""The model-free part of evidence selection on LoCoMo's test split.

For each question (categories 1–4) the server runs the searches the question's own words
give — one search, up to 5 pages of 20, at most 100 messages, as the selector does — and
"keeps the top results" in place of the ranking call; the packet is then built exactly as
for a turn (12 records). Reported: packet build time p50/p99 (searches included), packet
size in characters, and the share of evidence turns the packet holds, next to
history_search R@10 on the same questions.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters.storage.database import create_engine
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from bot.wiring import history_search
from core.clock import SystemClock
from core.evidence.packet import FACTS, MessageRecord, build_packet
from core.message import Message, Role
from tests.bench.retrieval import CATEGORIES, DATA, SPLITS, _session_turns
from tests.tool_calls import history_args


async def _conversation(sample: dict[str, Any], db: Path, rows: dict[str, list[float]]) -> None:
    url = f"sqlite+aiosqlite:///{db}"
    engine = create_engine(url)
    await migrate(engine)
    conv = sample["conversation"]
    clock = SystemClock()
    owner = await OwnerStore(engine).add(conv["speaker_a"], "UTC", (), clock.now())
    store = MessageStore(engine, clock)
    turns = _session_turns(conv)
    await store.append_many(owner.id, [
        Message(owner.id, Role.OWNER if spk == conv["speaker_a"] else Role.ASSISTANT, text, "locomo", when, dia)
        for dia, spk, text, when in turns])
    dia_of = {m.id: m.external_id for m in await store.recent(owner.id, len(turns) + 1)}
    search = history_search(engine, store, DerivedIndex.beside(url, engine))
    for qa in sample["qa"]:
        if qa["category"] not in CATEGORIES or not qa.get("evidence"):
            continue
        evidence = set(qa["evidence"])
        began = time.perf_counter()
        found: list[dict[str, Any]] = []
        args: dict[str, Any] = {"query": qa["question"], "limit": 20}
        try:
            for _ in range(5):
                page = await search.search(owner, history_args(args))
                found += page["results"]
                if not page["nextCursor"] or len(found) >= 100:
                    break
                args = {**args, "cursor": page["nextCursor"]}
        except Exception:  # noqa: BLE001 - a refused query is an empty packet
            found = []
        kept = found[:100]
        records = [MessageRecord(r["id"], r["role"], r["sent_at"][:16], r["text"], bool(r.get("truncated"))) for r in kept]
        packet = build_packet([], records[:FACTS], False, False, max(0, len(records) - FACTS))
        rows["ms"].append((time.perf_counter() - began) * 1000)
        rows["chars"].append(len(packet))
        in_packet = {dia_of[r.id] for r in records[:FACTS]}
        rows["held"].append(len(evidence & in_packet) / len(evidence))
        rows["r10"].append(len(evidence & {dia_of[r["id"]] for r in found[:10]}) / len(evidence))
    await engine.dispose()


async def run_evidence_bench() -> None:
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}; skipping.")
        return
    samples = json.loads(DATA.read_text())
    rows: dict[str, list[float]] = {"ms": [], "chars": [], "held": [], "r10": []}
    with tempfile.TemporaryDirectory() as tmp:
        for index in SPLITS["test"]:
            await _conversation(samples[index], Path(tmp) / f"c{index}.db", rows)
    ms = sorted(rows["ms"])
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print("| questions | build p50 ms | build p99 ms | packet chars (mean) | evidence held | history_search R@10 |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(ms)} | {statistics.median(ms):.1f} | {ms[round(0.99 * (len(ms) - 1))]:.1f} | "
          f"{mean(rows['chars']):,.0f} | {mean(rows['held']):.3f} | {mean(rows['r10']):.3f} |")
