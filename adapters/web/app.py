"""The aiohttp application: ``GET /healthz``, and the channels' webhooks mounted by the caller.

The web adapter knows no channel: ``bot`` hands it the webhook handlers by path
(``POST /webhooks/telegram``, ``POST /webhooks/whatsapp``), so adapters never import each
other.

Health answers 200 only when the database answers, so a load balancer takes a worker
out of rotation when its database is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

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


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def build_app(engine: AsyncEngine, webhooks: Mapping[str, Handler] | None = None) -> web.Application:
    app = web.Application(client_max_size=1024 * 1024)  # a bigger body gets 413, never a crash
    app[ENGINE] = engine
    app.router.add_get("/healthz", _healthz)
    for path, handler in (webhooks or {}).items():
        app.router.add_post(path, handler)
    return app
