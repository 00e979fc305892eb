"""The aiohttp application: ``GET /healthz``, the memory page and its API, and the channels' webhooks.

The web adapter knows no channel: ``bot`` hands it the webhook handlers by path
(``POST /webhooks/telegram``, ``POST /webhooks/whatsapp``), so adapters never import each
other.

Health answers 200 only when the database takes a write (``adapters.storage.health``), so a
load balancer takes a worker out of rotation when its database is gone, full or replaced;
the 503 says why in one sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from adapters.web.api import mount as mount_api
from adapters.web.forms import mount as mount_forms
from adapters.web.page import PageServices, security_headers
from adapters.web.page import mount as mount_page

log = logging.getLogger("nod.web")
HealthCheck = Callable[[], Awaitable[str | None]]  # None when healthy, else the reason
HEALTH: web.AppKey[HealthCheck] = web.AppKey("health", object)  # type: ignore[arg-type]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _healthz(request: web.Request) -> web.Response:
    try:
        problem = await request.app[HEALTH]()
    except Exception as exc:  # noqa: BLE001 - a failing check means "not healthy", never a 500 trace
        log.warning("health_check_failed error=%s", type(exc).__name__)
        problem = "The health check failed."
    if problem is not None:
        return web.json_response({"status": "unhealthy", "reason": problem}, status=503)
    return web.json_response({"status": "ok"})


class PathOnlyAccessLog(AbstractAccessLogger):
    """aiohttp's access log without query strings: a sign-in link's token and Google's one-time code travel there."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        # formatted here, as aiohttp's own does: bot.logs withholds a library record's arguments
        self.logger.info(f"{request.remote} {request.method} {request.path} {response.status} {time:.3f}s")


def build_app(health: HealthCheck, webhooks: Mapping[str, Handler] | None = None,
              page: PageServices | None = None) -> web.Application:
    """``page`` is None when the page is off (no NOD_SECRET_KEY or NOD_PUBLIC_URL): no route answers for it."""
    app = web.Application(client_max_size=1024 * 1024, middlewares=[security_headers])  # a bigger body: 413
    app[HEALTH] = health
    if page is not None:
        mount_page(app, page)
        mount_forms(app)
        mount_api(app)
    app.router.add_get("/healthz", _healthz)
    for path, handler in (webhooks or {}).items():
        app.router.add_post(path, handler)
    return app
