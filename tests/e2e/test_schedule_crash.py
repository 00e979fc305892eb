"""``kill -9`` of a real ``nod run`` while a scheduled task is running: after the restart it is sent once."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.settings import Settings
from bot.wiring import services
from core.owner import Identity
from core.schedules.model import Kind
from tests.fakes import telegram_server as tg
from tests.fakes.loopback import clean_env, free_port, wait_healthy
from tests.fakes.model_server import FakeModelServer, text

AGENT = "gpt-4o-mini"
MAYA = 4242


def _run_status(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT status FROM schedule_runs")]


async def _task_due_soon(url: str) -> None:
    async with services(Settings(database_url=url)) as svc:
        owner = await svc.owners.add("maya", "Europe/Lisbon", (Identity("telegram", str(MAYA)),), datetime.now(UTC))
        due = datetime.now(UTC) + timedelta(seconds=1)
        local = due.astimezone(owner.zone).replace(tzinfo=None)
        await svc.schedules.create(owner.id, Kind.TASK, "sum up my day", local, None, due, datetime.now(UTC), None)


async def test_a_task_killed_mid_run_is_sent_once_after_the_restart(tmp_path: Path) -> None:
    model, telegram = await FakeModelServer().start(), await tg.FakeTelegramServer().start()
    port, db = free_port(), tmp_path / "nod.db"
    env = clean_env(NOD_DATABASE_URL=f"sqlite+aiosqlite:///{db}", NOD_PORT=str(port), NOD_AGENT_MODEL=AGENT,
                    OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test", TELEGRAM_BOT_TOKEN=tg.TOKEN,
                    TELEGRAM_API_BASE_URL=telegram.base_url)
    await _task_due_soon(env["NOD_DATABASE_URL"])
    model.enqueue(AGENT, text("never in time", delay_s=60))

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    proc = start()
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        await model.wait_for_calls(1, timeout=30)  # the run is claimed and its turn waits for the model
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.communicate, timeout=30)
        assert _run_status(db) == ["claimed"]
        model.queues.clear()
        model.enqueue(AGENT, text("Your day: three meetings."))
        proc = start()
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        sent = await telegram.wait_for("sendMessage", timeout=30)
        assert len(sent) == 1 and sent[0]["text"].startswith("(Late: Nod was offline at ")
        assert sent[0]["text"].endswith("Your day: three meetings.")
        assert _run_status(db) == ["sent"]  # finished: nothing left to send again
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0 and "Traceback" not in stderr
        assert len(telegram.of("sendMessage")) == 1
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        for fake in (model, telegram):
            await fake.stop()
