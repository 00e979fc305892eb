"""``kill -9`` of a real ``nod run`` while a photo is being fetched: after the restart it is fetched again and answered once."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from bot.settings import Settings
from bot.wiring import services
from core.owner import Identity
from tests.fakes import telegram_server as tg
from tests.fakes.files import jpeg
from tests.fakes.loopback import clean_env, free_port, wait_healthy
from tests.fakes.model_server import FakeModelServer, text

AGENT = "gpt-4o-mini"
SECRET = "crash-secret"
MAYA = 4242
PHOTO = jpeg(seed=5)


def _owner_messages(db: Path) -> list[tuple[str, int, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT text, awaiting, media FROM messages WHERE role = 'owner' ORDER BY id").fetchall()


def _start(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def test_a_photo_whose_fetch_a_kill_9_cut_short_is_fetched_again_and_answered_once_after_the_restart(
        tmp_path: Path) -> None:
    model, telegram = await FakeModelServer().start(), await tg.FakeTelegramServer().start()
    port, db = free_port(), tmp_path / "nod.db"
    env = clean_env(NOD_DATABASE_URL=f"sqlite+aiosqlite:///{db}", NOD_PORT=str(port), NOD_AGENT_MODEL=AGENT,
                    OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test", TELEGRAM_BOT_TOKEN=tg.TOKEN,
                    TELEGRAM_API_BASE_URL=telegram.base_url, TELEGRAM_WEBHOOK_URL="https://nod.example.org/webhooks/telegram",
                    TELEGRAM_WEBHOOK_SECRET=SECRET)
    async with services(Settings(database_url=env["NOD_DATABASE_URL"])) as svc:  # in process: no second start-up
        await svc.owners.add("maya", "Europe/Lisbon", (Identity("telegram", str(MAYA)),), datetime.now(UTC))
    telegram.add_file("P1", PHOTO, folder="photos", ending="jpg")
    telegram.held = asyncio.Event()  # the download starts and never ends: the process dies meanwhile
    proc = _start(tmp_path, env)
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        async with aiohttp.ClientSession() as http, http.post(
                f"http://127.0.0.1:{port}/webhooks/telegram", json=tg.photo_update(1, MAYA, "P1", caption="which bird is this?"),
                headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as response:
            assert response.status == 200  # acknowledged: stored first
        await telegram.wait_for_download(1)
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.communicate, timeout=30)
        [(words, awaiting, media)] = _owner_messages(db)
        assert (words, awaiting) == ("which bird is this?", 1) and json.loads(media)["source"] == "P1"
        assert model.requests == []
        telegram.held.set()
        telegram.held = None
        model.enqueue(AGENT, text("A European robin."))
        proc = _start(tmp_path, env)
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        sent = await telegram.wait_for("sendMessage", timeout=30)
        assert [p["text"] for p in sent] == ["A European robin."]
        content = model.calls()[0]["messages"][-1]["content"]
        assert content[1]["image_url"]["url"] == "data:image/jpeg;base64," + base64.b64encode(PHOTO).decode()
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0 and "Traceback" not in stderr
        assert len(telegram.of("sendMessage")) == 1 and len(telegram.downloads) == 2 and len(model.calls()) == 1
        assert [a for _, a, _ in _owner_messages(db)] == [0]
        assert not any(PHOTO[500:564] in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        await model.stop()
        await telegram.stop()
