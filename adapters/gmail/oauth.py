"""Google's OAuth 2.0 web-server flow through Google's own libraries (``core.ports.GoogleAccounts``).

``google-auth-oauthlib`` makes the consent URL and exchanges the code, ``google-auth`` refreshes
the access token; both are synchronous, so each short request runs in a worker thread, and
revocation is one aiohttp POST. Every failure becomes a ``MailError`` whose sentence holds no
token, since the libraries' own messages can quote the token response. More: docs/memory.md.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import google.auth.exceptions
import google.auth.transport.requests
import requests
from google.oauth2.credentials import Credentials
from google_auth_oauthlib.flow import Flow
from oauthlib.oauth2 import InsecureTransportError, OAuth2Error

from core.errors import MailAccessLost, MailError
from core.gmail.values import SCOPE, Consent, Grant

log = logging.getLogger("nod.gmail.oauth")
TIMEOUT_S = 20.0
AUTH_URI = "https://accounts.google.com/o/oauth2/auth"
TOKEN_URI = "https://oauth2.googleapis.com/token"
REVOKE_URI = "https://oauth2.googleapis.com/revoke"


@dataclass(frozen=True)
class GoogleClient:
    """The operator's OAuth client (type Web application) and where Google's endpoints are."""

    client_id: str
    client_secret: str = field(repr=False)
    redirect_uri: str
    base_url: str | None = None  # GOOGLE_OAUTH_BASE_URL: a test server for all three endpoints

    def uri(self, which: str) -> str:
        if self.base_url:
            base = self.base_url.rstrip("/")
            return {"auth": f"{base}/o/oauth2/auth", "token": f"{base}/token", "revoke": f"{base}/revoke"}[which]
        return {"auth": AUTH_URI, "token": TOKEN_URI, "revoke": REVOKE_URI}[which]

    def config(self) -> dict[str, Any]:
        """The client in Google's client-secrets format, as ``Flow.from_client_config`` reads it."""
        return {"web": {"client_id": self.client_id, "client_secret": self.client_secret,
                        "auth_uri": self.uri("auth"), "token_uri": self.uri("token"),
                        "redirect_uris": [self.redirect_uri]}}


class _Request(google.auth.transport.requests.Request):
    """google-auth's requests transport with Nod's deadline instead of its two minutes."""

    def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                 timeout: float | None = None, **kwargs: Any) -> Any:
        return super().__call__(url, method=method, body=body, headers=headers, timeout=TIMEOUT_S, **kwargs)


class GoogleOAuth:
    def __init__(self, client: GoogleClient) -> None:
        self._client = client

    def _flow(self, state: str | None = None, code_verifier: str | None = None) -> Flow:
        return Flow.from_client_config(self._client.config(), scopes=[SCOPE], redirect_uri=self._client.redirect_uri,
                                       state=state, code_verifier=code_verifier)

    def consent(self, state: str) -> Consent:
        flow = self._flow(state)
        url, _ = flow.authorization_url(access_type="offline", prompt="consent", state=state)
        return Consent(url, flow.code_verifier)

    async def exchange(self, code: str, code_verifier: str | None) -> Grant:
        return await asyncio.to_thread(self._exchange, code, code_verifier)

    def _exchange(self, code: str, code_verifier: str | None) -> Grant:
        flow = self._flow(code_verifier=code_verifier)
        try:
            token: Any = flow.fetch_token(code=code, timeout=TIMEOUT_S)
        except Warning as changed:  # oauthlib: Google granted other scopes than asked (a box unticked)
            token = getattr(changed, "token", {})
        except InsecureTransportError as exc:
            raise MailError("Google's token endpoint must be https (a plain-http test server needs "
                            "OAUTHLIB_INSECURE_TRANSPORT=1).") from exc
        except OAuth2Error as exc:
            log.warning("gmail_exchange_refused error=%s", exc.error)
            raise MailError(f"Google did not accept the sign-in ({exc.error}); connect Gmail again.") from exc
        except requests.RequestException as exc:
            raise MailError("Google's token endpoint could not be reached.") from exc
        refresh = token.get("refresh_token")
        if not refresh:
            raise MailError("Google granted no lasting access; remove Nod under your Google Account's third-party "
                            "access, then connect Gmail again.")
        scopes = token.get("scope") or []
        return Grant(str(refresh), tuple(scopes.split() if isinstance(scopes, str) else scopes))

    async def access_token(self, refresh_token: str) -> str:
        return await asyncio.to_thread(self._refresh, refresh_token)

    def _refresh(self, refresh_token: str) -> str:
        credentials = Credentials(None, refresh_token=refresh_token, token_uri=self._client.uri("token"),
                                  client_id=self._client.client_id, client_secret=self._client.client_secret,
                                  scopes=[SCOPE])
        with requests.Session() as session:
            try:
                credentials.refresh(_Request(session))
            except google.auth.exceptions.RefreshError as exc:
                answer = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], dict) else {}
                error = str(answer.get("error", ""))
                log.warning("gmail_refresh_refused error=%s", error or "unknown")
                if error == "invalid_grant":
                    raise MailAccessLost("Google says the Gmail access expired or was revoked.") from exc
                if error in ("invalid_client", "unauthorized_client"):
                    raise MailError("Google refused Nod's OAuth client (GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET)") from exc
                raise MailError("Google's token endpoint did not refresh the access") from exc
            except google.auth.exceptions.TransportError as exc:
                raise MailError("Google's token endpoint could not be reached") from exc
        if not credentials.token:
            raise MailError("Google's token endpoint gave no access token")
        return str(credentials.token)

    async def revoke(self, refresh_token: str) -> bool:
        """Ask Google to revoke the grant; True once Google no longer accepts the token."""
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as http:
                async with http.post(self._client.uri("revoke"), data={"token": refresh_token}) as response:
                    if response.status == 200:
                        return True
                    answer = await response.json(content_type=None) if response.content_length != 0 else {}
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise MailError("Google's revoke endpoint could not be reached") from exc
        error = answer.get("error") if isinstance(answer, dict) else None
        log.warning("gmail_revoke_refused status=%s error=%s", response.status, error)
        return error == "invalid_token"  # already revoked or expired: Google no longer accepts it
