"""A fake Twilio REST API on 127.0.0.1, spoken to by the twilio client itself.

It answers ``POST /2010-04-01/Accounts/{sid}/Messages.json`` as Twilio does (basic auth
with the account sid and auth token, a form body, a message resource back), records every
message, and can be told to fail the next sends with a Twilio error code or to answer
slowly. ``inbound_form`` and ``sign`` build what Twilio's webhook would POST to Nod.
``GET /_sent`` answers how many messages it took.

Media a test adds (``add_media``) are served as Twilio serves them: ``GET
…/Messages/{sid}/Media/{media}`` wants basic auth and answers with a redirect to a
storage server on another origin (another port), which, like S3 with a signed URL,
refuses a request that still carries an Authorization header.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from twilio.request_validator import RequestValidator

from tests.fakes.loopback import serve

ACCOUNT_SID = "AC" + "0" * 32
AUTH_TOKEN = "twilio-test-auth-token"
FROM = "+15550001111"


@dataclass
class FakeTwilioServer:
    sent: list[dict[str, str]] = field(default_factory=list)
    delay_s: float = 0.0
    attempts: int = 0  # message creates asked for, refused ones included
    closed_windows: set[str] = field(default_factory=set)  # numbers whose 24-hour window is closed: free-form refused
    _failures: list[tuple[int, int, str, dict[str, str]]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # media sid -> bytes, content type
    media_fetches: list[str] = field(default_factory=list)  # media sids handed over by the storage server
    _storage: web.AppRunner | None = None
    storage_port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeTwilioServer:
        app = web.Application()
        app.router.add_post("/2010-04-01/Accounts/{sid}/Messages.json", self._create)
        app.router.add_get("/2010-04-01/Accounts/{sid}.json", self._account)  # nod doctor's authenticated GET
        app.router.add_get("/_sent", self._count)  # for a benchmark running this server in another process
        app.router.add_get("/2010-04-01/Accounts/{sid}/Messages/{message}/Media/{media}", self._media)
        self._runner, self.port = await serve(app)
        storage = web.Application()
        storage.router.add_get("/media/{media}", self._stored_media)
        self._storage, self.storage_port = await serve(storage)
        return self

    async def stop(self) -> None:
        for runner in (self._runner, self._storage):
            if runner is not None:
                await runner.cleanup()

    def add_media(self, media_sid: str, data: bytes, content_type: str = "audio/ogg", message_sid: str = "MM1") -> str:
        """Keep a medium; returns its MediaUrl as Twilio's webhook gives it (api.twilio.com)."""
        self.media[media_sid] = (data, content_type)
        return f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{message_sid}/Media/{media_sid}"

    def _authorized(self, request: web.Request) -> bool:
        expected = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
        return request.match_info["sid"] == ACCOUNT_SID and request.headers.get("Authorization") == expected

    async def _account(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"code": 20003, "message": "Authenticate", "status": 401}, status=401)
        return web.json_response({"sid": ACCOUNT_SID, "status": "active", "friendly_name": "Nod tests"})

    async def _media(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"code": 20003, "message": "Authenticate", "status": 401}, status=401)
        if request.match_info["media"] not in self.media:
            return web.json_response({"code": 20404, "message": "Not found", "status": 404}, status=404)
        raise web.HTTPTemporaryRedirect(f"http://127.0.0.1:{self.storage_port}/media/{request.match_info['media']}")

    async def _stored_media(self, request: web.Request) -> web.Response:
        if "Authorization" in request.headers:  # S3: "Only one auth mechanism allowed"
            return web.Response(status=400, text="Only one auth mechanism allowed")
        found = self.media.get(request.match_info["media"])
        if found is None:
            return web.Response(status=404)
        self.media_fetches.append(request.match_info["media"])
        return web.Response(body=found[0], content_type=found[1])

    def fail(self, status: int, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        """The next create answers ``status`` with Twilio error ``code`` (and ``headers``, e.g. Retry-After)."""
        self._failures.append((status, code, message, headers or {}))

    def bodies(self, to: str | None = None) -> list[str]:
        """What was sent as text: a free-form body, or a template's one variable."""
        return [m["Body"] if "Body" in m else json.loads(m["ContentVariables"])["1"]
                for m in self.sent if to is None or m["To"] == f"whatsapp:{to}"]

    async def wait_for(self, count: int, timeout: float = 15.0) -> list[str]:
        """Until ``count`` messages were sent (woken by each one), or TimeoutError."""
        async def enough() -> None:
            while len(self.sent) < count:
                self._arrived.clear()
                await self._arrived.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.bodies()

    async def _count(self, request: web.Request) -> web.Response:
        return web.json_response(len(self.sent))

    async def _create(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"code": 20003, "message": "Authenticate", "status": 401}, status=401)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.attempts += 1
        if "ContentSid" not in form and form.get("To", "").removeprefix("whatsapp:") in self.closed_windows:
            return web.json_response({"code": 63016, "status": 400, "message": "Failed to send freeform message because "
                                      "you are outside the allowed window. If you want to send messages outside the "
                                      "window, use a Template."}, status=400)
        if self._failures:
            status, code, message, headers = self._failures.pop(0)
            return web.json_response({"code": code, "message": message, "status": status,
                                      "more_info": f"https://www.twilio.com/docs/errors/{code}"}, status=status,
                                     headers=headers)
        self.sent.append(form)
        self._arrived.set()
        sid = f"SM{next(self._ids):032d}"
        return web.json_response(_resource(sid, form), status=201)


def _resource(sid: str, form: dict[str, str]) -> dict[str, Any]:
    return {"sid": sid, "account_sid": ACCOUNT_SID, "to": form.get("To"), "from": form.get("From"),
            "body": form.get("Body"), "status": "queued", "direction": "outbound-api", "num_segments": "1",
            "num_media": "0", "api_version": "2010-04-01", "price": None, "error_code": None,
            "error_message": None, "date_created": "Thu, 03 Dec 2026 09:00:00 +0000",
            "uri": f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{sid}.json"}


def inbound_form(sid: str, number: str, body: str = "", **extra: str) -> dict[str, str]:
    """The form Twilio POSTs for an inbound WhatsApp message."""
    form = {"MessageSid": sid, "SmsMessageSid": sid, "AccountSid": ACCOUNT_SID, "From": f"whatsapp:{number}",
            "To": f"whatsapp:{FROM}", "Body": body, "NumMedia": "0", "ProfileName": "Maya",
            "WaId": number.lstrip("+"), "ApiVersion": "2010-04-01"}
    form.update(extra)
    return form


def sign(url: str, form: dict[str, str], token: str = AUTH_TOKEN) -> str:
    return RequestValidator(token).compute_signature(url, form)
