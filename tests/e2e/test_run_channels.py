"""``nod run`` as a process with both channels: Telegram polling the fake Bot API, WhatsApp's webhook."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.cli_runner import run_nod
from tests.fakes import telegram_server as tg
from tests.fakes import twilio_server as tw
from tests.fakes.loopback import clean_env, free_port, wait_healthy
from tests.fakes.model_server import FakeModelServer, text

AGENT = "gpt-4o-mini"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(**{"NOD_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", **extra})


async def test_nod_run_answers_on_telegram_and_whatsapp_then_stops_cleanly(tmp_path: Path) -> None:
    model, telegram, twilio = await FakeModelServer().start(), await tg.FakeTelegramServer().start(), \
        await tw.FakeTwilioServer().start()
    port = free_port()
    env = _env(tmp_path, NOD_PORT=str(port), NOD_AGENT_MODEL=AGENT, OPENAI_BASE_URL=model.base_url,
               OPENAI_API_KEY="test", TELEGRAM_BOT_TOKEN=tg.TOKEN, TELEGRAM_API_BASE_URL=telegram.base_url,
               TWILIO_ACCOUNT_SID=tw.ACCOUNT_SID, TWILIO_AUTH_TOKEN=tw.AUTH_TOKEN, TWILIO_WHATSAPP_FROM=tw.FROM,
               TWILIO_API_BASE_URL=twilio.base_url, NOD_PUBLIC_URL="https://nod.example.org")
    for argv in (("init",), ("owners", "add", "maya", "--telegram", "4242", "--whatsapp", "+351910000001")):
        done = await asyncio.to_thread(run_nod, argv, environ=env, cwd=tmp_path)  # in process; main runs its own loop
        assert done.returncode == 0, done.stderr
    # subprocess.Popen, not asyncio's: asyncio's child watcher outlives a test's loop and misses exits
    proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        model.enqueue(AGENT, text("Hello on Telegram."), text("Hello on WhatsApp."))
        telegram.push(tg.message_update(1, 4242, "hi from telegram"))
        assert (await telegram.wait_for("sendMessage", timeout=30))[0]["text"] == "Hello on Telegram."
        form = tw.inbound_form("SM1", "+351910000001", "hi from whatsapp")
        signature = tw.sign("https://nod.example.org/webhooks/whatsapp", form)
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{port}/webhooks/whatsapp", data=form,
                                 headers={"X-Twilio-Signature": signature}) as response:
                assert response.status == 200
        assert await twilio.wait_for(1, timeout=30) == ["Hello on WhatsApp."]
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0 and "Traceback" not in stderr
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        for fake in (model, telegram, twilio):
            await fake.stop()


async def test_a_refused_telegram_token_stops_nod_run_with_one_sentence(tmp_path: Path) -> None:
    telegram = await tg.FakeTelegramServer(token="another:token").start()
    try:
        env = _env(tmp_path, NOD_PORT=str(free_port()), TELEGRAM_BOT_TOKEN=tg.TOKEN,
                   TELEGRAM_API_BASE_URL=telegram.base_url)
        result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "run"], cwd=tmp_path,
                                         env=env, capture_output=True, text=True, timeout=60)
    finally:
        await telegram.stop()
    assert result.returncode == 1
    assert result.stderr.strip() == "nod: Telegram refused TELEGRAM_BOT_TOKEN; copy it again from @BotFather."
