"""Database files made immutable under a running ``nod run`` (issue 39, finding 11).

SQLite maps ``nod.db-shm``; a write begun into files the kernel now refuses ended the
process with SIGBUS and no log line. Every write (the health check's too) first checks the
three files are writable, so the health check answers 503 with the reason and the process
lives on, and answers 200 again once the files are writable. The files change once the start's
own reads are over (the index's warm-up): a statement already running when they change can
still fault, which no check before it can prevent (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.loopback import clean_env, free_port, wait_healthy

FILES = ("nod.db", "nod.db-wal", "nod.db-shm")


def _chattr(flag: str, where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chattr", flag, *(str(where / name) for name in FILES)], capture_output=True, text=True)


def _stderr_until(proc: subprocess.Popen[str], marker: str, timeout: float = 30.0) -> list[str]:
    """The lines ``nod run`` logged up to and including the one holding ``marker``."""
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if marker in line:
                break
        done.set()
    threading.Thread(target=read, daemon=True).start()
    assert done.wait(timeout) and any(marker in line for line in lines), f"no {marker!r} in {lines}"
    return lines


async def _health(port: int) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as response:
        return response.status, await response.text()


async def test_immutable_database_files_make_health_503_and_the_process_survives(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(NOD_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", NOD_PORT=str(port),
                    NOD_LOG_LEVEL="DEBUG")  # for the line that says the start's reads are over
    proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        logged = await asyncio.to_thread(_stderr_until, proc, "search_index_warm_done")
        made = _chattr("+i", tmp_path)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not possible here: {made.stderr.strip()}")
        try:
            for _ in range(3):
                status, body = await _health(port)
                assert status == 503 and "cannot be written" in body
            assert proc.poll() is None  # alive, not killed by SIGBUS
        finally:
            _chattr("-i", tmp_path)
        assert (await _health(port))[0] == 200
        proc.send_signal(signal.SIGTERM)
        _, rest = await asyncio.to_thread(proc.communicate, timeout=30)
        stderr = "".join(logged) + rest
        assert proc.returncode == 0 and "Traceback" not in stderr
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
