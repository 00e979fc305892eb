"""Loopback helpers for fakes and for tests that start ``nod`` as a process.

``serve`` puts a fake's aiohttp application on 127.0.0.1 at a free port; ``free_port``,
``clean_env`` and ``wait_healthy`` are what a test or benchmark needs to run ``nod run``
beside it: a port, an environment without the developer's own Nod settings, and the
moment its health check answers.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import aiohttp
from aiohttp import web

NOD_PREFIXES = ("NOD_", "TELEGRAM_", "TWILIO_", "OPENAI_", "GOOGLE_", "GMAIL_")


async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ROOT = Path(__file__).resolve().parents[2]


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without any Nod setting, plus ``settings``.

    PYTHONPATH names this checkout, so a ``nod`` started by a test runs the code under test
    (not whatever checkout the virtual environment was installed from).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOD_PREFIXES)}
    env["PYTHONPATH"] = str(ROOT)
    env.update(settings)
    return env


async def wait_healthy(base_url: str, attempts: int = 300) -> None:
    """Until ``GET /healthz`` answers 200 (0.1 s apart), or AssertionError."""
    async with aiohttp.ClientSession() as http:
        for _ in range(attempts):
            try:
                async with http.get(base_url + "/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"nod run at {base_url} did not become healthy")
