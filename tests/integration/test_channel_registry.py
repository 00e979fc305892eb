"""A channel Nod has never heard of, plugged in through one registry entry (issue 40; docs/architecture.md,
"Adding a channel").

``Echo`` below is a channel package in miniature, written only here: its settings named by their
environment variables, when it is on, its start-summary line, how an operator writes an identity on
it, and the channel it builds (messages in at a webhook, replies out through its sink).
``Settings.with_channels(ECHO)`` is the registry line. No other file of Nod knows it, and yet
``nod owners add --link echo:42``, the settings' checks, the start summary and a message in with its
reply out all work for it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import aiohttp
import pytest
from aiohttp import web
from pydantic import BaseModel, Field

from adapters.web.app import Handler, build_app
from bot.channels import Channels, channels
from bot.settings import Settings, load_settings, variable_names
from bot.summary import start_summary
from core.errors import AttachmentUnavailable, AudioUnavailable, ConfigError, InvalidInput
from core.inbox.answering import Answering
from core.inbox.commands import HELP
from core.inbox.front import FrontDoor
from core.inbox.gate import REFUSAL
from core.message import Inbound
from core.owner import Identity, Owner
from core.replies import Reply
from tests.cli_runner import one_sentence, run_nod
from tests.fakes.loopback import NOD_PREFIXES, serve
from tests.fakes.model_server import FakeModelServer, text
from tests.integration.harness import AGENT, make_harness

ROOT = Path(__file__).resolve().parents[2]


class EchoSettings(BaseModel):
    echo_token: str | None = Field(None, validation_alias="ECHO_TOKEN")
    echo_room: str | None = Field(None, validation_alias="ECHO_ROOM")


class Said:
    """The channel's way out: what Nod says, to whom, in order."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        await self.lines.put((to.external_id, reply.text_form()))

    async def next(self) -> tuple[str, str]:
        return await asyncio.wait_for(self.lines.get(), 15)


class NoFiles:
    async def fetch(self, note: object, max_bytes: int) -> bytes:
        raise AudioUnavailable("Echo carries no audio.")

    async def fetch_media(self, media: object, max_bytes: int) -> bytes:
        raise AttachmentUnavailable("Echo carries no files.")


class EchoChannel:
    """``POST /webhooks/echo`` with ``{"from", "text", "id"}`` in; what Nod says out, in ``sender``."""

    def __init__(self) -> None:
        self.sender = Said()
        self.audio = NoFiles()
        self._front: FrontDoor | None = None
        self._answering: Answering[str] = Answering("echo", self._send)

    async def start(self, front: FrontDoor) -> None:
        self._front = front

    def webhooks(self) -> dict[str, Handler]:
        return {"/webhooks/echo": self._webhook}

    async def stop(self) -> None:
        await self._answering.stop()

    async def _webhook(self, request: web.Request) -> web.Response:
        assert self._front is not None
        body = await request.json()
        incoming = Inbound(Identity("echo", body["from"]), body["text"], body["id"])
        self._answering.follow_up(await self._front.handle(incoming), incoming.sender.external_id)
        return web.Response()

    async def _send(self, to: str, words: str) -> None:
        await self.sender.lines.put((to, words))


class Echo:
    name: ClassVar[str] = "echo"
    label: ClassVar[str] = "Echo"
    settings: ClassVar[type[BaseModel]] = EchoSettings
    parts: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({"echo": ("echo_token", "echo_room")})
    secrets: ClassVar[tuple[str, ...]] = ("echo_token",)
    turn_on: ClassVar[str] = "ECHO_TOKEN"
    off_hint: ClassVar[str] = "from the echo console"
    example: ClassVar[str] = "42"

    def parse_identity(self, raw: str) -> str:
        if not raw.isdigit():
            raise InvalidInput(f"An echo id is digits, not {raw!r}.")
        return raw

    def summary(self, settings: EchoSettings) -> str:
        return f"on, room {settings.echo_room}"

    def build(self, settings: EchoSettings) -> EchoChannel:
        return EchoChannel()


ECHO = Echo()
WITH_ECHO = Settings.with_channels(ECHO)  # the registry line


def test_nod_owners_takes_an_identity_on_the_plugged_in_channel(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items() if not name.startswith(NOD_PREFIXES)}
    environ |= {"NOD_HOME": str(tmp_path), "NOD_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}"}

    def nod(*argv: str, settings: type[Settings] = WITH_ECHO) -> tuple[int, str, str]:
        ran = run_nod(argv, environ=environ, settings=settings)
        return ran.returncode, ran.stdout, ran.stderr

    assert nod("init")[0] == 0
    assert nod("owners", "add", "ana", "--link", "echo:42", "--telegram", "7")[0] == 0
    assert nod("owners", "list")[1].strip() == "ana\tUTC\techo:42, telegram:7"
    refused = run_nod(("owners", "link", "ana", "--link", "echo:forty-two"), environ=environ, settings=WITH_ECHO)
    assert refused.returncode == 1 and one_sentence(refused) == "nod: An echo id is digits, not 'forty-two'."
    assert "CHANNEL one of telegram, whatsapp, echo" in " ".join(nod("owners", "add", "--help")[1].split())
    unknown = run_nod(("owners", "link", "ana", "--link", "echo:43"), environ=environ)  # Nod without the entry
    assert one_sentence(unknown) == "nod: There is no channel 'echo'; the channels are telegram, whatsapp."


def test_the_start_summary_says_whether_the_plugged_in_channel_is_on_and_what_turns_it_on(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}"
    off = start_summary(WITH_ECHO(database_url=database), None).splitlines()
    assert off[1:4] == ["  Telegram      off: set TELEGRAM_BOT_TOKEN (from @BotFather)",
                        "  WhatsApp      off: set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_WHATSAPP_FROM and NOD_PUBLIC_URL",
                        "  Echo          off: set ECHO_TOKEN and ECHO_ROOM (from the echo console)"]
    assert off[-1] == ("No channel is on: talk to Nod here with `nod chat --owner NAME`, or set TELEGRAM_BOT_TOKEN, "
                       "the TWILIO_* settings or ECHO_TOKEN.")
    on = start_summary(WITH_ECHO(database_url=database, echo_token="t0ken-value", echo_room="lobby"), None)
    assert "  Echo          on, room lobby" in on.splitlines()
    assert "No channel is on" not in on and "t0ken-value" not in on


def test_its_settings_are_read_named_and_checked_as_nods_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"ECHO_TOKEN", "ECHO_ROOM"} <= set(variable_names(WITH_ECHO))
    assert not {"ECHO_TOKEN", "ECHO_ROOM"} & set(variable_names())
    for name in variable_names(WITH_ECHO):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NOD_HOME", str(tmp_path))
    monkeypatch.setenv("ECHO_TOKEN", "t0ken-value")
    with pytest.raises(ConfigError, match=r"^ECHO_TOKEN is set, so ECHO_ROOM must be set too\.$"):
        load_settings(env_file=None, settings=WITH_ECHO)
    monkeypatch.setenv("ECHO_ROOM", "  lobby ")
    settings = load_settings(env_file=None, settings=WITH_ECHO)
    assert settings.on("echo") and settings.missing("echo") == () and settings.echo_room == "lobby"  # type: ignore[attr-defined]
    assert not hasattr(load_settings(env_file=None), "echo_token")  # Nod without the entry reads no ECHO_* at all


async def test_a_message_comes_in_and_its_reply_goes_out_through_the_plugged_in_channel(
        tmp_path: Path, server: FakeModelServer) -> None:
    settings = WITH_ECHO(database_url=f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", echo_token="t", echo_room="lobby")
    async for nod in make_harness(tmp_path, server):
        await nod.svc.owners.link(nod.owner.id, Identity("echo", "42"))
        async with channels(settings, nod.svc) as running:
            echo = running.running["echo"]
            assert isinstance(echo, EchoChannel) and running.names == ("echo",)
            runner, port = await serve(build_app(nod.svc.health.problem, running.webhooks))
            await running.start()
            try:
                server.enqueue(AGENT, text("Hello back, Maya."))
                await _post(port, {"from": "42", "text": "hello", "id": "m1"})
                assert await echo.sender.next() == ("42", "Hello back, Maya.")
                await _post(port, {"from": "42", "text": "/help", "id": "m2"})
                assert await echo.sender.next() == ("42", HELP)
                await _post(port, {"from": "7", "text": "hi", "id": "m3"})  # a stranger: one short refusal
                assert await echo.sender.next() == ("7", REFUSAL)
            finally:
                await _stopped(running, nod.owner.id)
                await runner.cleanup()


async def _post(port: int, body: dict[str, str]) -> None:
    async with aiohttp.ClientSession() as http, http.post(f"http://127.0.0.1:{port}/webhooks/echo", json=body) as answer:
        assert answer.status == 200


async def _stopped(running: Channels, owner_id: int) -> None:
    await asyncio.wait_for(running.front.wait(owner_id), 15)


def test_the_one_shot_commands_load_no_channel_sdk() -> None:
    """The registry and the settings read each channel's ``kind.py``; its SDK loads only when ``nod run`` builds it."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, bot.cli; print(sorted({m.split('.')[0] for m in sys.modules}"
                             " & {'telegram', 'twilio'}))"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
