"""``nod chat`` as a process, its standard input a pipe, against the scripted model server; the
owners it talks for are made in process. Its edge cases run in process (tests/integration/cli/test_chat.py)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.cli_runner import Ran, run_nod
from tests.e2e.test_cli import _env
from tests.fakes.model_server import UNSCRIPTED, FakeModelServer, text, tool

AGENT = "gpt-4o-mini"


async def _chat(tmp_path: Path, lines: str, **extra: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--owner", "ana", cwd=tmp_path, env=_env(tmp_path, **extra),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(lines.encode()), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def _nod(tmp_path: Path, *argv: str) -> Ran:
    """``nod ARGV`` in process, in a thread (``main`` runs an event loop of its own), in ``_chat``'s environment."""
    return await asyncio.to_thread(run_nod, argv, environ=_env(tmp_path), cwd=tmp_path)


async def _ana(tmp_path: Path) -> None:
    for argv in (("init",), ("owners", "add", "ana")):
        done = await _nod(tmp_path, *argv)
        assert done.returncode == 0, done.stderr


async def test_piped_chat_answers_each_line_in_order_with_commands(tmp_path: Path) -> None:
    await _ana(tmp_path)
    assert (await _nod(tmp_path, "memory", "add", "--owner", "ana", "people/sister", "Sister: Ana, lives in Porto")
            ).returncode == 0
    server = await FakeModelServer().start()
    try:
        server.enqueue(AGENT, text("Hello, Ana!"), tool("memory_read", {"path": "people"}), text("Your sister lives in Porto."))
        code, out, err = await _chat(
            tmp_path, "hi\nwhere does my sister live?\n/memory\n/context\n/reset\n/stop\n/bogus\n/shrug that was odd\n",
            OPENAI_BASE_URL=server.base_url, NOD_AGENT_MODEL=AGENT,
        )
    finally:
        await server.stop()
    assert code == 0, err
    blocks = [b for b in out.split("\n\n") if b.strip()]
    assert blocks[0] == "Hello, Ana!" and blocks[1] == "Your sister lives in Porto."
    assert blocks[2] == "I remember 1 note (people 1):\n- people/sister: Sister: Ana, lives in Porto"
    assert blocks[3].startswith("What I see at the start of every turn:") and blocks[4].startswith("Learned skills:")
    assert blocks[5] == "Started a new conversation. Your memory is kept."
    # as on Telegram and WhatsApp, a lone slash word that is no command gets the help, with no turn;
    # a slash inside a sentence is a message for the agent
    assert blocks[6] == "Nothing is running." and blocks[7] == "I don't have that command."
    assert blocks[8].startswith("I'm Nod, your assistant.") and blocks[-1] == UNSCRIPTED
    assert len(server.calls()) == 4 and "Traceback" not in err
    usage = await _nod(tmp_path, "usage", "--owner", "ana")
    assert usage.returncode == 0
    assert any(line.split()[:3] == ["today", "agent", "4"] for line in usage.stdout.splitlines()), usage.stdout
