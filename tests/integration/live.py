"""Nod's channels running for real: Telegram and WhatsApp adapters on the fake platforms.

``make_live`` wires Nod as ``nod run`` does (bot.channels), with the Telegram Bot API,
Twilio and the model as fake servers on 127.0.0.1, and serves the webhooks from Nod's own
aiohttp application on a loopback port. The owner Maya has Telegram id 4242 and WhatsApp
number +351910000001.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from adapters.telegram.channel import PATH as TELEGRAM_PATH
from adapters.telegram.channel import Pauses, TelegramChannel
from adapters.telegram.kind import Telegram
from adapters.web.app import build_app
from adapters.whatsapp.channel import WhatsAppChannel
from bot.channels import Channels, channels
from bot.settings import Settings
from core.owner import Identity
from tests.fakes import telegram_server as tg
from tests.fakes import twilio_server as tw
from tests.fakes.loopback import serve
from tests.fakes.model_server import FakeModelServer
from tests.integration.harness import Harness, make_harness

MAYA_TELEGRAM = 4242
MAYA_WHATSAPP = "+351910000001"
SECRET = "webhook-secret"
T = TypeVar("T")
QUICK = Pauses((0.05,), (0.05,), 0.05, 0.5)  # the retries' real pauses and typing's, shortened


@dataclass
class Live:
    nod: Harness
    telegram: tg.FakeTelegramServer
    twilio: tw.FakeTwilioServer
    running: Channels
    url: str
    http: aiohttp.ClientSession

    @property
    def telegram_channel(self) -> TelegramChannel:
        return _running(self.running, "telegram", TelegramChannel)

    @property
    def whatsapp_channel(self) -> WhatsAppChannel:
        return _running(self.running, "whatsapp", WhatsAppChannel)

    async def post_update(self, update: dict[str, Any], secret: str | None = SECRET) -> int:
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
        async with self.http.post(self.url + TELEGRAM_PATH, json=update, headers=headers) as response:
            return response.status

    async def post_whatsapp(self, form: dict[str, str], signature: str | None = None) -> tuple[int, str]:
        public = "https://nod.example.org/webhooks/whatsapp"
        headers = {"X-Twilio-Signature": signature if signature is not None else tw.sign(public, form)}
        async with self.http.post(self.url + "/webhooks/whatsapp", data=form, headers=headers) as response:
            return response.status, await response.text()


async def make_live(tmp_path: Path, model: FakeModelServer, telegram: tg.FakeTelegramServer,
                    twilio: tw.FakeTwilioServer, webhook: bool = True, **overrides: Any) -> AsyncIterator[Live]:
    """Nod with both channels; ``database_url`` in ``overrides`` picks another database than a SQLite file."""
    values: dict[str, Any] = {
        "telegram_bot_token": tg.TOKEN, "telegram_api_base_url": telegram.base_url,
        "telegram_webhook_url": "https://nod.example.org/webhooks/telegram" if webhook else None,
        "telegram_webhook_secret": SECRET if webhook else None,
        "twilio_account_sid": tw.ACCOUNT_SID, "twilio_auth_token": tw.AUTH_TOKEN,
        "twilio_whatsapp_from": tw.FROM, "twilio_api_base_url": twilio.base_url,
        "public_url": "https://nod.example.org",
    }
    values.update(overrides)
    async for nod in make_harness(tmp_path, model, **values):
        if not await nod.svc.owners.identities(nod.owner.id):  # a second worker finds them linked
            await nod.svc.owners.link(nod.owner.id, Identity("telegram", str(MAYA_TELEGRAM)))
            await nod.svc.owners.link(nod.owner.id, Identity("whatsapp", MAYA_WHATSAPP))
        quick = Settings.with_channels(Telegram(QUICK))  # Telegram's retries' real pauses, shortened
        settings = quick(**{"database_url": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", **values})
        async with channels(settings, nod.svc) as running:
            whatsapp = running.running.get("whatsapp")
            if isinstance(whatsapp, WhatsAppChannel):  # the retries' real pauses, shortened
                whatsapp.sender.backoff_s, whatsapp.sender.max_retry_after_s = (0.05,), 0.5
            runner, port = await serve(build_app(nod.svc.health.problem, running.webhooks))
            await running.start()
            try:
                async with aiohttp.ClientSession() as http:
                    yield Live(nod, telegram, twilio, running, f"http://127.0.0.1:{port}", http)
            finally:
                await runner.cleanup()


def _running(running: Channels, name: str, kind: type[T]) -> T:
    found = running.running.get(name)
    assert isinstance(found, kind), f"{name} is not running"
    return found
