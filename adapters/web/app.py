"""The aiohttp application: ``GET /healthz`` now; pages, API and webhooks mount here.

Health answers 200 only when the database answers, so a load balancer takes a worker
out of rotation when its database is gone.
"""

from __future__ import annotations

import logging

from aiohttp import web
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("nod.web")
ENGINE: web.AppKey[AsyncEngine] = web.AppKey("engine", AsyncEngine)


async def _healthz(request: web.Request) -> web.Response:
    try:
        async with request.app[ENGINE].connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any database failure means "not healthy", never a 500 trace
        log.warning("health_check_failed error=%s", type(exc).__name__)
        return web.json_response({"status": "database unavailable"}, status=503)
    return web.json_response({"status": "ok"})


def build_app(engine: AsyncEngine) -> web.Application:
    app = web.Application(client_max_size=1024 * 1024)
    app[ENGINE] = engine
    app.router.add_get("/healthz", _healthz)
    return app
