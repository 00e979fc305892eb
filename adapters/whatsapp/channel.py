"""The WhatsApp channel: Twilio's signed webhook in, the front door, the REST API out.

``POST /webhooks/whatsapp`` validates ``X-Twilio-Signature`` with twilio's
RequestValidator against the public URL Twilio called (``NOD_PUBLIC_URL`` plus the path
and query): a bad or missing signature gets 403 and nothing is stored. A valid message is
stored (idempotent on MessageSid, since Twilio retries) and its turn started before the
answer — 200 with empty TwiML, at once; the reply goes out later through the REST API.
When the database cannot store it the answer is 503, so a retry can. A command's answer
is sent from a task of its own. A voice note is stored the same way, before the answer,
as a placeholder with its media URL; its audio is fetched (``media.TwilioMedia``) and
transcribed in the turn, after Twilio has had its 200.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from twilio.request_validator import RequestValidator, get_signature_algorithm
from twilio.twiml.messaging_response import MessagingResponse

from adapters.whatsapp.inbound import CHANNEL, incoming_message
from adapters.whatsapp.kind import PATH
from adapters.whatsapp.media import TwilioMedia
from adapters.whatsapp.sink import TwilioSender
from core.inbox.answering import Answering
from core.inbox.front import FrontDoor

log = logging.getLogger("nod.whatsapp")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
EMPTY_TWIML = str(MessagingResponse())


class WhatsAppChannel:
    def __init__(self, sender: TwilioSender, auth_token: str, public_url: str, audio: TwilioMedia) -> None:
        self.sender = sender
        self.audio = audio  # voice notes' audio, into memory
        self._validator = RequestValidator(auth_token)
        self._url = public_url.rstrip("/") + PATH
        self._front: FrontDoor | None = None
        self._answering: Answering[str] = Answering(CHANNEL, self._send)

    async def start(self, front: FrontDoor) -> None:
        self._front = front

    def webhooks(self) -> dict[str, Handler]:
        return {PATH: self.webhook}

    async def stop(self) -> None:
        await self._answering.stop()
        await self.sender.close()
        await self.audio.close()

    def _signed(self, request: web.Request, params: dict[str, str]) -> bool:
        url = self._url + (f"?{request.query_string}" if request.query_string else "")
        algorithm = get_signature_algorithm(request.headers.get("X-Twilio-Webhooks-Signature-Settings"))
        signature = request.headers.get("X-Twilio-Signature", "")
        return bool(signature) and bool(self._validator.validate(url, params, signature, algorithm))

    async def webhook(self, request: web.Request) -> web.Response:
        try:
            form = await request.post()
        except (ValueError, LookupError):  # LookupError: a charset Python does not know
            return web.Response(status=400, text="malformed form")
        params = {key: value for key, value in form.items() if isinstance(value, str)}
        if not self._signed(request, params):
            log.warning("whatsapp_webhook_refused reason=signature remote=%s", request.remote)
            return web.Response(status=403, text="forbidden")
        if self._front is None:  # the web server listens before the channel starts
            return web.Response(status=503, text="starting; deliver again")
        incoming = incoming_message(params)
        if incoming is None:
            log.info("whatsapp_webhook_ignored sid=%s", params.get("MessageSid", "-"))
            return _twiml()
        try:
            handled = await self._front.handle(incoming)
        except Exception as exc:  # noqa: BLE001 - not stored: Twilio may deliver it again
            log.warning("whatsapp_message_not_stored sid=%s error=%s", incoming.external_id, type(exc).__name__)
            return web.Response(status=503, text="not stored; deliver again")
        self._answering.follow_up(handled, incoming.sender.external_id)
        return _twiml()

    async def _send(self, number: str, text: str) -> None:
        try:
            await self.sender.send(number, text)
        except Exception:  # noqa: BLE001 - logged by the sender; a webhook task never crashes the server
            log.info("whatsapp_answer_not_sent")


def _twiml() -> web.Response:
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")
