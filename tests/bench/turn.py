"""Server-side turn overhead: everything a turn costs except the model's own time.

Setup (issue 4): a full 256 KiB memory document, a 100,000-message thread, and a model
that answers instantly through the ChatModel port (two shapes: a direct answer, and one
history_search tool call before the answer). Each sample is one owner message from
``Conductor.receive`` until the reply reaches the sink: storing the message, building
the context (index, recent turns, related older messages), the loop, usage rows, storing
and delivering the reply. Printed as p50/p99 per backend.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.settings import Settings
from bot.wiring import build_gateway, services
from core.agent.chat import ChatReply, ChatRequest, ToolCall
from core.agent.conductor import Conductor
from core.message import Inbound, Message, Role
from core.owner import Identity, Owner
from core.replies import Reply
from tests.bench.scale import messages_text, percentiles, vocabulary
from tests.bench.storage import full_document

THREAD = 100_000
START = datetime(2025, 1, 1, tzinfo=UTC)


class InstantModel:
    """Answers at once; with ``search`` the first call of each turn asks for history_search."""

    def __init__(self, search: bool) -> None:
        self.search = search

    async def close(self) -> None:
        pass

    async def complete(self, request: ChatRequest) -> ChatReply:
        asked = any(m.get("role") == "tool" for m in request.messages)
        if self.search and not asked:
            call = ToolCall("c1", "history_search", '{"query": "boat trip to the river"}')
            return ChatReply("", (call,), 2000, 20, request.model)
        return ChatReply("Here you are.", (), 2000, 20, request.model)


@dataclass
class Sink:
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.arrived.set()


async def _backend(name: str, url: str, rounds: int) -> list[str]:
    settings = Settings(database_url=url, agent_model="bench-agent", openai_base_url="http://127.0.0.1:9/v1")
    rows = []
    async with services(settings) as svc:
        owner = await svc.owners.add("Bench", "Europe/Lisbon", (), START)
        await svc.memory.save(owner.id, full_document(), 0)
        rng = random.Random(4)
        texts = list(messages_text(rng, vocabulary(rng), THREAD))
        for first in range(0, THREAD, 10_000):
            batch = [Message(owner.id, Role.OWNER if i % 2 == 0 else Role.ASSISTANT, texts[i], "bench",
                                START + timedelta(minutes=5 * i)) for i in range(first, first + 10_000)]
            await svc.messages.append_many(owner.id, batch)
        if svc.search_index is not None:  # built before timing, as `nod run` does at start
            await svc.search_index.warm()
        for shape in ("answer", "search+answer"):
            gateway = build_gateway(settings, svc.usage, svc.clock, (InstantModel(shape != "answer"), None))
            sink = Sink()
            conductor = Conductor(replace(svc.turn, gateway=gateway), sink)
            samples = []
            for i in range(rounds):
                sink.arrived.clear()
                began = time.perf_counter()
                await conductor.receive(owner, Inbound(Identity("bench", owner.name), f"what about the boat trip {i}?"))
                await sink.arrived.wait()
                samples.append(time.perf_counter() - began)
            await conductor.close()
            p50, p99 = percentiles(samples)
            rows.append(f"| {name} | {shape} | {rounds} | {p50 * 1000:.1f} | {p99 * 1000:.1f} |")
    return rows


async def run_turn_bench(rounds: int) -> None:
    rows = ["| backend | model answers | turns | p50 ms | p99 ms |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        rows += await _backend("SQLite", f"sqlite+aiosqlite:///{Path(tmp) / 'turn.db'}", rounds)
    url = os.environ.get("NOD_TEST_POSTGRES_URL")
    if url:
        from tests.conftest import drop_postgres_database, fresh_postgres_url

        db_url = await fresh_postgres_url()
        try:
            rows += await _backend("PostgreSQL", db_url, rounds)
        finally:
            await drop_postgres_database(db_url)
    else:
        rows.append("| PostgreSQL | skipped: set NOD_TEST_POSTGRES_URL | | | |")
    print("\n".join(rows))
