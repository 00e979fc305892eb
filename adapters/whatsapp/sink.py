"""Sending WhatsApp messages through Twilio's REST API with the twilio client (async).

A reply is its Markdown written in WhatsApp's markup with the choices numbered under it
(WhatsApp shows no buttons here), in parts of at most 1,600 characters cut between
blocks (``adapters.whatsapp.formatting``); each send is bounded by ``SEND_TIMEOUT_S``. A create is not
retried — Twilio may have accepted it, and a duplicate message is worse than a log line.
Twilio's error code is logged and carried in ``DeliveryFailed`` (63016: outside the
24-hour window for free-form messages), so the router can tell the owner elsewhere.
"""

from __future__ import annotations

import asyncio
import logging

from twilio.base.exceptions import TwilioException, TwilioRestException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.rest import Client

from adapters.whatsapp.formatting import WHATSAPP_LIMIT, whatsapp_parts
from core.errors import DeliveryFailed
from core.owner import Identity, Owner
from core.replies import Reply, choice_lines

log = logging.getLogger("nod.whatsapp")
SEND_TIMEOUT_S = 15.0
OUTSIDE_WINDOW = 63016


def build_client(account_sid: str, auth_token: str, api_base_url: str | None) -> Client:
    """A twilio client on the async HTTP client; ``api_base_url`` replaces api.twilio.com."""
    client = Client(account_sid, auth_token, http_client=AsyncTwilioHttpClient(), environment={})
    if api_base_url:
        client.api.base_url = api_base_url.rstrip("/")
    return client


class TwilioSender:
    def __init__(self, client: Client, from_number: str, timeout_s: float = SEND_TIMEOUT_S) -> None:
        self._client = client
        self._from = from_number if from_number.startswith("whatsapp:") else f"whatsapp:{from_number}"
        self.timeout_s = timeout_s

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        await self.send(to.external_id, reply.text, reply.choices)

    async def send(self, number: str, text: str, choices: tuple[str, ...] = ()) -> None:
        for part in whatsapp_parts(text, choice_lines(choices), WHATSAPP_LIMIT) or ["…"]:
            await self._send_part(number, part)

    async def _send_part(self, number: str, part: str) -> None:
        try:
            message = await asyncio.wait_for(
                self._client.messages.create_async(from_=self._from, to=f"whatsapp:{number}", body=part), self.timeout_s)
        except TwilioRestException as exc:
            log.warning("twilio_send_failed code=%s status=%s", exc.code, exc.status)
            reason = ("WhatsApp only accepts my replies within 24 hours of your last message there"
                      if exc.code == OUTSIDE_WINDOW else f"Twilio refused the WhatsApp message (error {exc.code})")
            raise DeliveryFailed(reason, code=str(exc.code)) from exc
        except TimeoutError as exc:
            log.warning("twilio_send_failed code=timeout after_s=%s", self.timeout_s)
            raise DeliveryFailed("Twilio did not answer in time", code="timeout") from exc
        except (TwilioException, OSError) as exc:
            log.warning("twilio_send_failed code=unreachable error=%s", type(exc).__name__)
            raise DeliveryFailed("Twilio could not be reached", code="unreachable") from exc
        log.info("twilio_sent sid=%s status=%s", message.sid, message.status)

    async def close(self) -> None:
        http = self._client.http_client
        if isinstance(http, AsyncTwilioHttpClient):
            await http.close()
