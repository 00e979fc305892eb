"""Nod wired as in production — real turn, gateway, OpenAI adapter, a real SQLite file — on a real model server."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.settings import Settings
from bot.wiring import services
from core.clock import FixedClock
from core.message import Inbound
from core.owner import Identity
from tests.integration.harness import Harness, Sink
from tests.realserver.recorder import RecordingProxy

MODEL = os.environ.get("NOD_TEST_LLAMA_MODEL", "smollm2-135m-instruct")
NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
AGENT_DEADLINE_S = 240.0
MEMORY_DEADLINE_S = 180.0  # a CPU-only tiny model on a shared machine: generous, and still a bound every call must end within
# budgets a tenth of production's: a runaway tiny model on two CPU cores (~20 tokens a second) then holds the
# server seconds, not minutes; the full budgets are the same code path with bigger numbers (NOD_MAX_TOKENS_SCALE)
TOKENS_SCALE = float(os.environ.get("NOD_TEST_LLAMA_TOKENS_SCALE", "0.1"))
TURN_BOUND_S = 600.0  # a turn's own calls are each bounded above; this only keeps a hung test from hanging CI


@dataclass
class Real(Harness):
    proxy: RecordingProxy | None = None

    async def say(self, words: str) -> None:
        """The owner's message, and its whole turn: a CPU-only model takes its time, within its deadlines."""
        await self.conductor.receive(self.owner, Inbound(Identity("local", self.owner.name), words))
        await asyncio.wait_for(self.conductor.wait(self.owner.id), TURN_BOUND_S)

    @property
    def server_name(self) -> str:
        assert self.proxy is not None
        return self.proxy.server


async def make_real(tmp_path: Path, proxy: RecordingProxy, **overrides: Any) -> AsyncIterator[Real]:
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}",
        "openai_base_url": proxy.base_url, "openai_api_key": None,
        "agent_model": MODEL, "memory_model": MODEL,
        "agent_deadline_s": AGENT_DEADLINE_S, "memory_deadline_s": MEMORY_DEADLINE_S,
        "spending_limit_usd": None, "max_tokens_scale": TOKENS_SCALE,
    }
    settings = Settings(**{**values, **overrides})
    async with services(settings, FixedClock(NOW)) as svc:
        owner = await svc.owners.add("Maya", "Europe/Lisbon", (), NOW)
        sink = Sink()
        conductor = svc.conductor(sink)
        try:
            yield Real(svc, None, sink, owner, conductor, proxy)  # type: ignore[arg-type]
        finally:
            await conductor.close()
