"""Nod on any OpenAI-compatible server, for the memory benchmarks: the real wiring, a real SQLite file, a clock.

``conversation`` and ``locomo-qa`` both talk to Nod the way an owner does — an ``Inbound``
through the conductor, the real turn, the real gateway and adapter — and read what came out:
the replies delivered, the memory document, and each call's usage row (tokens, duration,
outcome). The server is whatever ``--base-url`` names: the tiny model in CI, an operator's own
vLLM, Ollama, llama.cpp or OpenAI otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from adapters.storage.schema import usage as usage_table
from bot.settings import Settings
from bot.wiring import Services, services
from core.agent.conductor import Conductor
from core.clock import Clock
from core.errors import NotFound
from core.message import Inbound
from core.owner import Identity, Owner
from core.replies import Reply

TURN_BOUND_S = 900.0  # each call has its own deadline; this only keeps a hung server from hanging the run


@dataclass(frozen=True)
class Target:
    """The server under test and how Nod is set up for it."""

    base_url: str | None
    model: str
    memory_model: str
    api_key: str | None
    json_mode: str
    tokens_scale: float
    agent_deadline_s: float
    memory_deadline_s: float

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Target:
        return cls(args.base_url, args.model, args.memory_model or args.model, args.api_key or os.environ.get("OPENAI_API_KEY"),
                   args.json_mode, args.tokens_scale, args.agent_deadline, args.memory_deadline)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="conversation/locomo-qa: the OpenAI-compatible server (default: OpenAI)")
    parser.add_argument("--model", help="conversation/locomo-qa: the agent model")
    parser.add_argument("--memory-model", help="conversation/locomo-qa: the memory model (default: --model)")
    parser.add_argument("--judge-model", help="locomo-qa: the judge (default: --model)")
    parser.add_argument("--api-key", help="default: OPENAI_API_KEY")
    parser.add_argument("--json-mode", choices=["json_schema", "json_object"], default="json_schema")
    parser.add_argument("--tokens-scale", type=float, default=1.0, help="NOD_MAX_TOKENS_SCALE for the run")
    parser.add_argument("--agent-deadline", type=float, default=120.0)
    parser.add_argument("--memory-deadline", type=float, default=20.0)
    parser.add_argument("--limit", type=int, help="locomo-qa: questions per conversation; conversation: scenarios")
    parser.add_argument("--conversations", help="locomo-qa: conversation numbers, e.g. 0,3 or 0-4 (default 0)")
    parser.add_argument("--baseline-chars", type=int, default=400_000,
                        help="locomo-qa: the full-context baseline keeps at most this much of the conversation")
    parser.add_argument("--smoke", action="store_true", help="the smallest run that exercises every part (CI)")


@dataclass
class Delivered:
    texts: list[str] = field(default_factory=list)

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.texts.append(reply.text_form())


@dataclass
class Session:
    """One owner of a fresh Nod: ``say`` one message, read the replies, memory and usage."""

    svc: Services
    owner: Owner
    conductor: Conductor
    sink: Delivered

    async def say(self, words: str, forwarded: bool = False) -> str:
        before = len(self.sink.texts)
        await self.conductor.receive(self.owner, Inbound(Identity("local", self.owner.name), words, forwarded=forwarded))
        await asyncio.wait_for(self.conductor.wait(self.owner.id), TURN_BOUND_S)
        return "\n".join(self.sink.texts[before:])

    async def usage(self, after_id: int = 0) -> list[Any]:
        query = select(usage_table).where(usage_table.c.owner_id == self.owner.id, usage_table.c.id > after_id)
        async with self.svc.engine.connect() as conn:
            return list((await conn.execute(query.order_by(usage_table.c.id))).all())


def settings_for(target: Target, database: Path) -> Settings:
    return Settings(database_url=f"sqlite+aiosqlite:///{database}", openai_base_url=target.base_url,
                    openai_api_key=target.api_key, agent_model=target.model, memory_model=target.memory_model,
                    json_mode=target.json_mode, max_tokens_scale=target.tokens_scale, spending_limit_usd=None,
                    agent_deadline_s=target.agent_deadline_s, memory_deadline_s=target.memory_deadline_s)


@asynccontextmanager
async def session(target: Target, database: Path, clock: Clock, owner_name: str = "Maya",
                  zone: str = "Europe/Lisbon") -> AsyncIterator[Session]:
    """A Nod on ``database`` (created, or the copy of an imported one) with its owner."""
    async with services(settings_for(target, database), clock) as svc:
        try:
            owner = await svc.owners.by_name(owner_name)
        except NotFound:  # a fresh database
            owner = await svc.owners.add(owner_name, zone, (), clock.now())
        sink = Delivered()
        conductor = svc.conductor(sink)
        try:
            yield Session(svc, owner, conductor, sink)
        finally:
            await conductor.close()


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
