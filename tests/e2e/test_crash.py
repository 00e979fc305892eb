"""``kill -9`` of a real ``nod run``: what was acknowledged is stored, and is answered after the restart."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import text as text_sql

from adapters.storage.database import create_engine
from tests.cli_runner import run_nod
from tests.fakes import telegram_server as tg
from tests.fakes.loopback import clean_env, free_port, wait_healthy
from tests.fakes.model_server import FakeModelServer, text

AGENT = "gpt-4o-mini"
SECRET = "crash-secret"
MAYA = 4242


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database the killed process used: a SQLite file, or a fresh PostgreSQL database (or a skip)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}"
    return str(request.getfixturevalue("postgres_url"))


async def _owner_messages(url: str) -> list[tuple[str, bool]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text_sql("SELECT external_id, awaiting FROM messages WHERE role = 'owner' ORDER BY id"))
            return [(str(external), bool(awaiting)) for external, awaiting in rows]
    finally:
        await engine.dispose()


def _start(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    # subprocess.Popen, not asyncio's: asyncio's child watcher outlives a test's loop and misses exits
    return subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGKILL)
    _, stderr = proc.communicate(timeout=30)
    return stderr


async def _post(http: aiohttp.ClientSession, port: int, update: dict) -> int:  # type: ignore[type-arg]
    async with http.post(f"http://127.0.0.1:{port}/webhooks/telegram", json=update,
                         headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as response:
        return response.status


async def test_acknowledged_telegram_updates_survive_kill_9_and_are_answered_after_the_restart(
        tmp_path: Path, database_url: str) -> None:
    model, telegram = await FakeModelServer().start(), await tg.FakeTelegramServer().start()
    port = free_port()
    env = clean_env(NOD_DATABASE_URL=database_url, NOD_PORT=str(port),
                    NOD_AGENT_MODEL=AGENT, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test",
                    TELEGRAM_BOT_TOKEN=tg.TOKEN, TELEGRAM_API_BASE_URL=telegram.base_url,
                    TELEGRAM_WEBHOOK_URL="https://nod.example.org/webhooks/telegram", TELEGRAM_WEBHOOK_SECRET=SECRET)
    for argv in (("init",), ("owners", "add", "maya", "--telegram", str(MAYA))):  # in process; main runs its own loop
        done = await asyncio.to_thread(run_nod, argv, environ=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    model.enqueue(AGENT, *[text("never in time", delay_s=60) for _ in range(60)])
    proc = _start(tmp_path, env)
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        async with aiohttp.ClientSession() as http:
            statuses = [await _post(http, port, tg.message_update(n, MAYA, f"one by one {n}")) for n in range(1, 9)]
            burst = await asyncio.gather(*(_post(http, port, tg.message_update(n, MAYA, f"burst {n}"))
                                           for n in range(100, 140)), return_exceptions=True)
        await model.wait_for_calls(1)
        _kill(proc)
        acknowledged = {str(n) for n, s in zip(range(1, 9), statuses, strict=True) if s == 200}
        acknowledged |= {str(n) for n, s in zip(range(100, 140), burst, strict=True) if s == 200}
        assert statuses == [200] * 8 and len(acknowledged) >= 8
        stored = dict(await _owner_messages(database_url))
        assert acknowledged <= set(stored) and all(stored.values())  # stored, and still awaiting their answer
        model.queues.clear()  # the slow answers were for the killed process
        model.enqueue(AGENT, text("Back, and answering everything."))
        proc = _start(tmp_path, env)
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        sent = await telegram.wait_for("sendMessage", timeout=30)
        assert [p["text"] for p in sent] == ["Back, and answering everything."]
        assert "burst" in str(model.calls()[-1]["messages"])  # one turn, the unanswered messages in view
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0 and "Traceback" not in stderr
        assert not any(awaiting for _, awaiting in await _owner_messages(database_url))
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        await model.stop()
        await telegram.stop()
