"""``nod backup`` taken while a real ``nod run`` stores messages, restored into a fresh NOD_HOME
where Nod answers from it (issue 43: 11; the restore is the README's "Backup and restore").
The backup is a process of its own beside ``nod run``; the commands around it run in process."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.cli_runner import Ran, run_nod
from tests.fakes import telegram_server as tg
from tests.fakes.loopback import clean_env, free_port, wait_healthy

SECRET = "backup-secret"
MAYA = 4242


def _backup(env: dict[str, str], cwd: Path, file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", "backup", str(file)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


async def _nod(env: dict[str, str], cwd: Path, *argv: str) -> Ran:
    """``nod ARGV`` in process, in a thread: ``main`` runs an event loop of its own."""
    return await asyncio.to_thread(run_nod, argv, environ=env, cwd=cwd)


async def test_a_backup_taken_while_nod_run_writes_restores_into_a_working_nod(tmp_path: Path) -> None:
    telegram = await tg.FakeTelegramServer().start()
    port = free_port()
    env = clean_env(NOD_HOME=str(tmp_path / "home"), NOD_PORT=str(port), TELEGRAM_BOT_TOKEN=tg.TOKEN,
                    TELEGRAM_API_BASE_URL=telegram.base_url, TELEGRAM_WEBHOOK_URL="https://nod.example.org/webhooks/telegram",
                    TELEGRAM_WEBHOOK_SECRET=SECRET)
    for argv in (("init",), ("owners", "add", "maya", "--telegram", str(MAYA)),
                 ("memory", "add", "--owner", "maya", "people/sister", "Sister: Ana, lives in Porto")):
        done = await _nod(env, tmp_path, *argv)
        assert done.returncode == 0, done.stderr
    log = (tmp_path / "run.log").open("w")  # a file, not a pipe: INFO lines of hundreds of messages would fill
    proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,  # a pipe nobody reads
                            stdout=subprocess.PIPE, stderr=log, text=True)
    acknowledged: list[int] = []
    stop, twenty = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with aiohttp.ClientSession() as http:
            n = 0
            while not stop.is_set():
                n += 1
                update = tg.message_update(n, MAYA, f"backup test message {n} about figs")
                async with http.post(f"http://127.0.0.1:{port}/webhooks/telegram", json=update,
                                     headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as response:
                    if response.status == 200:
                        acknowledged.append(n)
                if len(acknowledged) >= 20:
                    twenty.set()

    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        writing = asyncio.create_task(write())
        await asyncio.wait_for(twenty.wait(), 30)  # the process is storing messages when the backup starts
        before = set(acknowledged)
        backup = await asyncio.to_thread(_backup, env, tmp_path, tmp_path / "copy.db")
        during = len(acknowledged)
        stop.set()
        await asyncio.wait_for(writing, 30)
        assert backup.returncode == 0, backup.stderr
        assert backup.stdout.startswith(f"Backed up {tmp_path / 'home' / 'nod.db'} to {tmp_path / 'copy.db'} (")
        assert during > len(before)  # the server went on taking messages while the copy was made
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.communicate, timeout=30)
        log.close()
        await telegram.stop()
    stderr = (tmp_path / "run.log").read_text()
    assert proc.returncode == 0 and "Traceback" not in stderr
    again = await _nod(env, tmp_path, "backup", str(tmp_path / "copy.db"))
    assert again.returncode == 1 and "never overwrites" in again.stderr

    with sqlite3.connect(tmp_path / "copy.db") as copy:
        assert copy.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one self-contained file
        stored = {int(r[0]) for r in copy.execute("SELECT external_id FROM messages WHERE role = 'owner'")}
    assert before <= stored <= set(acknowledged)  # everything acknowledged before it began, nothing half-written

    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(tmp_path / "copy.db", restored / "nod.db")  # the README's restore: the file into NOD_HOME
    fresh = clean_env(NOD_HOME=str(restored))
    shown = await _nod(fresh, tmp_path, "memory", "show", "--owner", "maya")
    assert shown.returncode == 0 and "people/sister [Confirmed]: Sister: Ana, lives in Porto" in shown.stdout
    found = await _nod(fresh, tmp_path, "tool", "--owner", "maya", "history_search", '{"query": "figs", "limit": 5}')
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["totalMatches"] == len(stored) and answer["results"][0]["text"].startswith("backup test message")
    assert (restored / "nod.db.search").is_dir()  # the search index was built for the restored database
