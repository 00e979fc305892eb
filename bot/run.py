"""``nod run``: the web server (and, as they land, the channels and maintenance) until a signal.

SIGINT and SIGTERM set one event; everything shuts down in reverse order of starting,
and the database is closed last.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from aiohttp import web

from adapters.web.app import build_app
from bot.settings import Settings
from bot.wiring import services

log = logging.getLogger("nod.run")


async def run_server(settings: Settings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with services(settings) as svc:
        runner = web.AppRunner(build_app(svc.engine), handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, settings.host, settings.port)
        warming = asyncio.create_task(svc.search_index.warm()) if svc.search_index else None
        try:
            await site.start()
            log.info("started host=%s port=%s", settings.host, settings.port)
            print(f"Nod is listening on http://{settings.host}:{settings.port}", flush=True)
            await stop.wait()
            log.info("stopping")
        finally:
            if warming is not None:
                warming.cancel()
            await runner.cleanup()
