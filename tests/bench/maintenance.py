"""One maintenance tick at size: 10,000 new owner messages (250 batches of 40) and a
nearly full 256 KiB document, with a memory model that answers at once (through the
ChatModel port) with one valid add per batch; and repair alone on a full document.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adapters.storage.locks import DatabaseLocks
from bot.settings import Settings
from bot.wiring import build_gateway, services
from core.agent.chat import ChatReply, ChatRequest
from core.maintenance.reflect import Reflector
from core.maintenance.repair import repair
from core.maintenance.tick import MaintenanceJob
from core.memory.values import MemoryDocument, Origin
from core.message import Message, Role
from tests.bench.storage import full_document

MESSAGES = 10_000
START = datetime(2026, 1, 1, tzinfo=UTC)


class InstantMemoryModel:
    """Proposes one add per batch, quoting the batch's first message."""

    async def close(self) -> None:
        pass

    async def complete(self, request: ChatRequest) -> ChatReply:
        payload = json.loads(request.messages[-1]["content"])
        first = payload["messages"][0]
        op = {"op": "add", "path": f"about/bench-{first['id']}", "text": f"Said {first['id']}", "sensitive": False,
              "message_ids": [first["id"]], "quote": first["text"][:20]}
        return ChatReply(json.dumps({"operations": [op]}), (), 3000, 60, request.model)


class TimedReflector(Reflector):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.batch_times: list[float] = []

    async def _ask(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        try:
            return await super()._ask(*args, **kwargs)
        finally:
            self.batch_times.append(time.perf_counter() - began)


async def run_maintenance_bench() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite+aiosqlite:///{Path(tmp) / 'm.db'}", memory_model="bench-memory",
                            openai_base_url="http://127.0.0.1:9/v1")
        async with services(settings) as svc:
            owner = await svc.owners.add("Bench", "UTC", (), START)
            doc = full_document()
            kept = tuple(replace(e, origin=Origin.STATED) for e in doc.entries[: len(doc.entries) - 20])
            trimmed = MemoryDocument(entries=kept)  # stated, so repair keeps them; room for 250 small adds
            await svc.memory.save(owner.id, trimmed, 0)
            batch = [Message(owner.id, Role.OWNER, f"Message number {i} about the garden and the boat", "bench",
                                START + timedelta(minutes=i)) for i in range(MESSAGES)]
            await svc.messages.append_many(owner.id, batch)
            gateway = build_gateway(settings, svc.usage, svc.clock, (None, InstantMemoryModel()))
            reflector = TimedReflector(gateway, svc.messages, svc.memory, svc.clock)
            job = MaintenanceJob(svc.owners, svc.memory, reflector, DatabaseLocks(svc.engine), svc.clock)
            began = time.perf_counter()
            ticks = await job.run()
            total = time.perf_counter() - began
            full = full_document()
            repairs = []
            for _ in range(20):
                t = time.perf_counter()
                repair(full, START)
                repairs.append(time.perf_counter() - t)
    per_batch = total / max(1, len(reflector.batch_times))
    print("| measure | value |\n|---|---|")
    print(f"| batches | {len(reflector.batch_times)} |")
    print(f"| tick total (10,000 messages) | {total:.2f} s |")
    print(f"| per batch, all server work | {per_batch * 1000:.1f} ms |")
    print(f"| repair alone, full 256 KiB document (p50 of 20) | {statistics.median(repairs) * 1000:.1f} ms |")
    print(ticks[0].line())
