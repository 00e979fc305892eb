"""Sending WhatsApp messages through Twilio's REST API with the twilio client (async).

A reply is written in WhatsApp's markup with its choices numbered under it, in parts cut
between blocks, each send bounded in time. A send is tried again when Twilio is busy, times
out or cannot be reached, since a lost reply is worse than a rare duplicate; a 4xx with an
error code is final and its code travels in ``DeliveryFailed`` so the router can tell the
owner elsewhere. The policy: docs/reliability.md (Channel sends are retried).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from twilio.base.exceptions import TwilioException, TwilioRestException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.http.response import Response
from twilio.rest import Client

from adapters.whatsapp.formatting import WHATSAPP_LIMIT, whatsapp_parts
from core.errors import DeliveryFailed
from core.owner import Identity, Owner
from core.replies import Reply, choice_lines

log = logging.getLogger("nod.whatsapp")
SEND_TIMEOUT_S = 15.0
OUTSIDE_WINDOW = 63016
ATTEMPTS = 4
BACKOFF_S = (0.5, 2.0, 5.0)
MAX_RETRY_AFTER_S = 60.0


class TwilioBusy(Exception):
    """Twilio answered 429 or 5xx: worth another try, after ``retry_after`` seconds if it said so."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"Twilio answered HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def _retry_after(headers: Any) -> float | None:
    value = (headers or {}).get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: the backoff decides
        return None


class RetryAwareHttpClient(AsyncTwilioHttpClient):
    """twilio's async HTTP client, raising ``TwilioBusy`` on 429 and 5xx with the Retry-After
    header, which the twilio client's own exception does not keep."""

    async def request(self, *args: Any, **kwargs: Any) -> Response:
        response = await super().request(*args, **kwargs)
        if response.status_code == 429 or response.status_code >= 500:
            raise TwilioBusy(response.status_code, _retry_after(response.headers))
        return response


def build_client(account_sid: str, auth_token: str, api_base_url: str | None) -> Client:
    """A twilio client on the async HTTP client; ``api_base_url`` replaces api.twilio.com."""
    client = Client(account_sid, auth_token, http_client=RetryAwareHttpClient(), environment={})
    if api_base_url:
        client.api.base_url = api_base_url.rstrip("/")
    return client


class TwilioSender:
    def __init__(self, client: Client, from_number: str, timeout_s: float = SEND_TIMEOUT_S,
                 backoff_s: tuple[float, ...] = BACKOFF_S, max_retry_after_s: float = MAX_RETRY_AFTER_S,
                 template_sid: str | None = None) -> None:
        self._client = client
        self._template = template_sid  # TWILIO_REMINDER_CONTENT_SID: one variable, the text
        self._from = from_number if from_number.startswith("whatsapp:") else f"whatsapp:{from_number}"
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s  # public, as timeout_s: tests shorten the real pauses
        self.max_retry_after_s = max_retry_after_s

    def _pause(self, state: RetryCallState) -> float:
        """Twilio's Retry-After when it gave one (capped), else the backoff for this attempt."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, TwilioBusy) and error.retry_after is not None:
            return min(error.retry_after, self.max_retry_after_s)
        return self.backoff_s[min(state.attempt_number - 1, len(self.backoff_s) - 1)]

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning("twilio_send_retry error=%s attempt=%s", error, state.attempt_number)

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        if reply.approved_form:
            await self._send_template(to.external_id, reply.text)
            return
        await self.send(to.external_id, reply.text, reply.choices)

    async def _send_template(self, number: str, text: str) -> None:
        """The operator's approved template with the text as its variable: allowed outside the window."""
        if self._template is None:
            raise DeliveryFailed("WhatsApp's 24-hour window is closed and no reminder template is configured",
                                 code=str(OUTSIDE_WINDOW))
        # a template's variable may hold no newline or tab (Meta refuses them): one line
        await self._send_part(number, " ".join(text.split())[:WHATSAPP_LIMIT], template=self._template)

    async def send(self, number: str, text: str, choices: tuple[str, ...] = ()) -> None:
        for part in whatsapp_parts(text, choice_lines(choices), WHATSAPP_LIMIT) or ["…"]:
            await self._send_part(number, part)

    async def _create(self, number: str, part: str, template: str | None = None) -> Any:
        """One create, tried again on 429, 5xx, a timeout or no connection (the module doc)."""
        retrying = AsyncRetrying(stop=stop_after_attempt(ATTEMPTS), wait=self._pause, reraise=True,
                                 retry=retry_if_exception_type((TwilioBusy, TimeoutError, OSError, aiohttp.ClientError)),
                                 before_sleep=self._log_retry)
        content = ({"content_sid": template, "content_variables": json.dumps({"1": part})} if template is not None
                   else {"body": part})
        async for attempt in retrying:
            with attempt:
                return await asyncio.wait_for(
                    self._client.messages.create_async(from_=self._from, to=f"whatsapp:{number}", **content),
                    self.timeout_s)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _send_part(self, number: str, part: str, template: str | None = None) -> None:
        try:
            message = await self._create(number, part, template)
        except TwilioBusy as exc:
            log.warning("twilio_send_failed code=%s attempts=%s", exc.status, ATTEMPTS)
            raise DeliveryFailed(f"Twilio stayed busy (HTTP {exc.status})", code=str(exc.status)) from exc
        except TwilioRestException as exc:
            log.warning("twilio_send_failed code=%s status=%s", exc.code, exc.status)
            reason = ("WhatsApp only accepts my replies within 24 hours of your last message there"
                      if exc.code == OUTSIDE_WINDOW else f"Twilio refused the WhatsApp message (error {exc.code})")
            raise DeliveryFailed(reason, code=str(exc.code)) from exc
        except TimeoutError as exc:
            log.warning("twilio_send_failed code=timeout after_s=%s", self.timeout_s)
            raise DeliveryFailed("Twilio did not answer in time", code="timeout") from exc
        except (TwilioException, OSError, aiohttp.ClientError) as exc:
            log.warning("twilio_send_failed code=unreachable error=%s", type(exc).__name__)
            raise DeliveryFailed("Twilio could not be reached", code="unreachable") from exc
        log.info("twilio_sent sid=%s status=%s", message.sid, message.status)

    async def close(self) -> None:
        http = self._client.http_client
        if isinstance(http, AsyncTwilioHttpClient):
            await http.close()
