"""Usage rows on the database: one per model call, summed for the spending limit and ``nod usage``."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import case, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import writing
from adapters.storage.schema import usage
from core.agent.usage import PurposeTotal, UsageRecord

log = logging.getLogger("nod.usage")


class UsageStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def record(self, row: UsageRecord) -> None:
        async with writing(self._engine) as conn:
            await conn.execute(insert(usage).values(**row.__dict__))
        log.info(
            "model_call owner=%s purpose=%s model=%s tokens_in=%s cached=%s tokens_out=%s estimated=%s"
            " cost_usd=%.6f ms=%s outcome=%s",
            row.owner_id, row.purpose, row.model, row.tokens_in, row.cached_tokens, row.tokens_out,
            row.estimated, row.cost_usd, row.duration_ms, row.outcome,
        )

    async def spent_since(self, owner_id: int, start: datetime) -> float:
        query = select(func.coalesce(func.sum(usage.c.cost_usd), 0.0)).where(
            usage.c.owner_id == owner_id, usage.c.created_at >= start
        )
        async with self._engine.connect() as conn:
            return float((await conn.execute(query)).scalar_one())

    async def by_purpose(self, owner_id: int, start: datetime) -> list[PurposeTotal]:
        query = (
            select(
                usage.c.purpose, func.count(), func.sum(usage.c.tokens_in),
                func.sum(usage.c.tokens_out), func.sum(usage.c.cost_usd),
                func.sum(usage.c.cached_tokens), func.sum(case((usage.c.estimated, 1), else_=0)),
            )
            .where(usage.c.owner_id == owner_id, usage.c.created_at >= start)
            .group_by(usage.c.purpose)
            .order_by(usage.c.purpose)
        )
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            PurposeTotal(r[0], int(r[1]), int(r[2] or 0), int(r[3] or 0), float(r[4] or 0.0), int(r[5] or 0), int(r[6] or 0))
            for r in rows
        ]
