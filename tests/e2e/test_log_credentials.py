"""No sign-in token reaches ``nod run``'s log, not even through aiohttp's own error paths (issue 39, finding 6).

A request line over aiohttp's 8 KB limit makes it log a ``LineTooLong`` traceback that
quotes the start of the line: ``GET /settings/memory?t=<token>``. The token is a real one,
printed by ``nod page``, and it still signs in after the attack.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.cli_runner import run_nod
from tests.fakes.loopback import clean_env, free_port, wait_healthy

SECRET_KEY = "a-secret-key-for-signing-page-sessions-0123456789"


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(4096), 10)
    finally:
        writer.close()


async def test_a_sign_in_token_in_a_refused_request_line_never_reaches_the_log(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(NOD_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", NOD_PORT=str(port),
                    NOD_SECRET_KEY=SECRET_KEY, NOD_PUBLIC_URL=f"http://127.0.0.1:{port}")
    for argv in (("init",), ("owners", "add", "maya"), ("page", "--owner", "maya")):
        done = await asyncio.to_thread(run_nod, argv, environ=env, cwd=tmp_path)  # in process; main runs its own loop
        assert done.returncode == 0, done.stderr
    token = re.search(r"\?t=([\w-]+)", done.stdout).group(1)  # type: ignore[union-attr]
    proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        await wait_healthy(proc, f"http://127.0.0.1:{port}")
        pad = "x" * 9000
        attacks = (f"GET /settings/memory?t={token}&pad={pad} HTTP/1.1\r\nHost: a\r\n\r\n",
                   f"GET /oauth/google/callback?state={token}&code={token}{pad} HTTP/1.1\r\nHost: a\r\n\r\n",
                   f"GET /settings/memory?t={token} HTTP/1.1\r\nHost: a\r\nX-Long: {pad}\r\n\r\n",
                   f"G\x01T /settings/memory?t={token} HTTP/1.1\r\nHost: a\r\n\r\n",
                   f"GET /reset-password/{token} HTTP/1.1\r\nHost: a\r\n\r\n")
        answers = [await _raw(port, attack.encode("latin-1")) for attack in attacks]
        assert all(answer.split(b" ")[1].startswith(b"4") for answer in answers), answers
        async with aiohttp.ClientSession() as http, \
                http.get(f"http://127.0.0.1:{port}/settings/memory?t={token}", allow_redirects=False) as response:
            assert response.status in (302, 303)  # the token was never spent by the attacks: it signs in
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0
        assert "LineTooLong" in stderr or "Bad" in stderr  # aiohttp did log the refused lines ...
        assert token not in stderr and token[:12] not in stderr  # ... without the token
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
