"""Loopback helpers for fakes and for tests that start ``nod`` as a process.

``serve`` puts a fake's aiohttp application on 127.0.0.1 at a free port; ``free_port``,
``clean_env`` and ``wait_healthy`` are what a test or benchmark needs to run ``nod run``
beside it: a port, an environment without the developer's own Nod settings, and the
moment it says it is listening (then its health check must answer).
"""

from __future__ import annotations

import asyncio
import os
import queue
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

LISTENING = "Nod is listening on "  # bot/run.py
SQLITE = "sqlite+aiosqlite:///"
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
    (not whatever checkout the virtual environment was installed from). NOD_HOME, unless
    given, is the folder of the SQLite file given, so no ``.env`` of the developer's is read.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOD_PREFIXES)}
    env["PYTHONPATH"] = str(ROOT)
    database = settings.get("NOD_DATABASE_URL", "")
    if "NOD_HOME" not in settings and database.startswith(SQLITE):
        env["NOD_HOME"] = str(Path(database.removeprefix(SQLITE)).parent)
    env.update(settings)
    return env


def wait_listening(proc: subprocess.Popen[Any], timeout: float = 60.0) -> None:
    """Until ``nod run`` prints that it is listening (bot/run.py prints it once the server and
    the channels run): a line read from its stdout, not a poll. AssertionError when it exits
    first or ``timeout`` passes; its stdout must be a pipe."""
    said: queue.Queue[bool] = queue.Queue()
    threading.Thread(target=lambda: said.put(_says_listening(proc)), daemon=True).start()
    try:
        if said.get(timeout=timeout):
            return
    except queue.Empty:
        raise AssertionError(f"nod run did not start listening within {timeout:.0f} s") from None
    raise AssertionError(f"nod run exited ({proc.wait()}) before it was listening")


def _says_listening(proc: subprocess.Popen[Any]) -> bool:
    assert proc.stdout is not None, "start nod run with stdout=subprocess.PIPE"
    for line in proc.stdout:
        if (line.decode() if isinstance(line, bytes) else line).startswith(LISTENING):
            return True
    return False


async def wait_healthy(proc: subprocess.Popen[Any], base_url: str, timeout: float = 60.0) -> None:
    """``wait_listening``, then ``GET /healthz`` must answer 200."""
    await asyncio.to_thread(wait_listening, proc, timeout)
    async with aiohttp.ClientSession() as http, http.get(base_url + "/healthz") as response:
        assert response.status == 200, f"nod run at {base_url} is not healthy: {response.status}"
