"""A fake Google OAuth 2.0 server and Gmail API on 127.0.0.1, spoken to by Google's own libraries.

OAuth, as Google's web-server flow: ``GET /o/oauth2/auth`` checks the client, redirect URI,
scope and PKCE challenge and "consents" at once — a 302 to the redirect URI with a code and
the state it was given (or ``error=access_denied`` when told to decline); ``POST /token``
exchanges a code once (client secret, redirect URI and PKCE verifier checked) for an
access and a refresh token, and refreshes; ``POST /revoke`` revokes a refresh token and
every access token made from it. Refused requests get Google's own error bodies
(``invalid_grant`` "Token has been expired or revoked.").

Gmail, as its REST API: ``GET /gmail/v1/users/me/messages`` with ``q`` and ``maxResults``
lists the mailbox's sent mail; ``.../messages/{id}?format=full`` answers one message with
base64url parts. A request without a live access token gets 401 UNAUTHENTICATED. Every
request's path and query is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode

from aiohttp import web

from tests.fakes.loopback import serve

CLIENT_ID = "nod-test.apps.googleusercontent.com"
CLIENT_SECRET = "google-test-client-secret"
SCOPE = "https://www.googleapis.com/auth/gmail.readonly"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def mail(body: str, subject: str = "Hello", to: str = "Ana Silva <ana.silva@example.org>",
         headers: dict[str, str] | None = None, html: str | None = None, calendar: bool = False) -> dict[str, Any]:
    """One sent message as ``messages.get?format=full`` answers it (id filled in by the server)."""
    all_headers = {"From": "Maya Costa <maya.costa@example.com>", "To": to, "Subject": subject,
                   "Date": "Tue, 1 Dec 2026 10:00:00 +0000", **(headers or {})}
    parts: list[dict[str, Any]] = [{"partId": "0", "mimeType": "text/plain", "filename": "", "headers": [],
                                    "body": {"size": len(body), "data": _b64(body)}}]
    if html is not None:
        parts.append({"partId": "1", "mimeType": "text/html", "filename": "", "body": {"data": _b64(html)}})
    if calendar:
        parts.append({"partId": "2", "mimeType": "text/calendar", "filename": "invite.ics",
                      "body": {"attachmentId": "att1", "size": 300}})
    return {"labelIds": ["SENT"], "snippet": body[:100],
            "payload": {"partId": "", "mimeType": "multipart/alternative", "filename": "",
                        "headers": [{"name": k, "value": v} for k, v in all_headers.items()],
                        "body": {"size": 0}, "parts": parts}}


def _client_of(request: web.Request, form: dict[str, Any]) -> tuple[str, str]:
    """The client's credentials as Google takes them: HTTP Basic (requests-oauthlib) or in the form (google-auth)."""
    basic = request.headers.get("Authorization", "")
    if basic.startswith("Basic "):
        client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        return unquote_plus(client_id), unquote_plus(secret)
    return str(form.get("client_id", "")), str(form.get("client_secret", ""))


@dataclass
class Grant:
    refresh_token: str
    scope: str
    revoked: bool = False


@dataclass
class FakeGoogleServer:
    sent_mail: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # method, path, query or form
    decline: bool = False  # the owner says no on the consent screen
    granted_scope: str = SCOPE  # what the owner leaves ticked
    grants: dict[str, Grant] = field(default_factory=dict)  # by refresh token
    access: dict[str, str] = field(default_factory=dict)  # access token -> refresh token
    _codes: dict[str, dict[str, str]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeGoogleServer:
        app = web.Application()
        app.router.add_get("/o/oauth2/auth", self._consent)
        app.router.add_post("/token", self._token)
        app.router.add_post("/revoke", self._revoke)
        app.router.add_get("/gmail/v1/users/me/messages", self._list)
        app.router.add_get("/gmail/v1/users/me/messages/{id}", self._get)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def send(self, *messages: dict[str, Any]) -> None:
        """Put mails in the Sent folder, newest first as Gmail lists them."""
        for message in messages:
            self.sent_mail.insert(0, {**message, "id": f"m{next(self._ids)}", "threadId": "t1"})

    def revoke_all(self) -> None:
        """The owner removes Nod under their Google Account's third-party access."""
        for grant in self.grants.values():
            grant.revoked = True

    def calls(self, path: str) -> list[tuple[str, str, dict[str, str]]]:
        return [r for r in self.requests if r[1] == path or (path.endswith("/") and r[1].startswith(path))]

    async def wait_for(self, path: str, count: int = 1, timeout: float = 15.0) -> None:
        async def enough() -> None:
            while len(self.calls(path)) < count:
                self._arrived.clear()
                await self._arrived.wait()
        await asyncio.wait_for(enough(), timeout)

    def _seen(self, request: web.Request, values: dict[str, str]) -> None:
        self.requests.append((request.method, request.path, values))
        self._arrived.set()

    async def _consent(self, request: web.Request) -> web.StreamResponse:
        q = dict(request.query)
        self._seen(request, q)
        if q.get("client_id") != CLIENT_ID or q.get("response_type") != "code" or not q.get("redirect_uri"):
            return web.Response(status=400, text="Error 400: invalid_request")
        if q.get("scope") != SCOPE or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return web.Response(status=400, text="Error 400: invalid_scope or missing PKCE")
        if self.decline:
            back = {"error": "access_denied", "state": q.get("state", "")}
        else:
            code = "4/" + secrets.token_urlsafe(16)
            self._codes[code] = {"redirect_uri": q["redirect_uri"], "challenge": q["code_challenge"]}
            back = {"code": code, "scope": self.granted_scope, "state": q.get("state", "")}
        raise web.HTTPFound(f"{q['redirect_uri']}?{urlencode(back)}")

    def _error(self, status: int, error: str, description: str) -> web.Response:
        return web.json_response({"error": error, "error_description": description}, status=status)

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self._seen(request, {k: str(v) for k, v in form.items()})
        if _client_of(request, form) != (CLIENT_ID, CLIENT_SECRET):
            return self._error(401, "invalid_client", "Unauthorized")
        if form.get("grant_type") == "authorization_code":
            issued = self._codes.pop(str(form.get("code", "")), None)
            verifier = str(form.get("code_verifier", ""))
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
            if issued is None or issued["redirect_uri"] != form.get("redirect_uri") or issued["challenge"] != challenge:
                return self._error(400, "invalid_grant", "Malformed auth code.")
            refresh = "1//" + secrets.token_urlsafe(24)
            self.grants[refresh] = Grant(refresh, self.granted_scope)
            return web.json_response({**self._access_for(refresh), "refresh_token": refresh})
        if form.get("grant_type") == "refresh_token":
            grant = self.grants.get(str(form.get("refresh_token", "")))
            if grant is None or grant.revoked:
                return self._error(400, "invalid_grant", "Token has been expired or revoked.")
            return web.json_response(self._access_for(grant.refresh_token))
        return self._error(400, "unsupported_grant_type", "Invalid grant_type.")

    def _access_for(self, refresh: str) -> dict[str, Any]:
        token = "ya29." + secrets.token_urlsafe(24)
        self.access[token] = refresh
        return {"access_token": token, "expires_in": 3599, "scope": self.grants[refresh].scope, "token_type": "Bearer"}

    async def _revoke(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in dict(await request.post()).items()}
        form.update(request.query)
        self._seen(request, form)
        grant = self.grants.get(form.get("token", ""))
        if grant is None or grant.revoked:
            return web.json_response({"error": "invalid_token", "error_description": "Token expired or revoked"},
                                     status=400)
        grant.revoked = True
        return web.json_response({})

    def _authorised(self, request: web.Request) -> bool:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        refresh = self.access.get(token)
        return refresh is not None and not self.grants[refresh].revoked

    def _unauthenticated(self) -> web.Response:
        return web.json_response({"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                                             "status": "UNAUTHENTICATED"}}, status=401)

    async def _list(self, request: web.Request) -> web.Response:
        self._seen(request, dict(request.query))
        if not self._authorised(request):
            return self._unauthenticated()
        if request.query.get("q") != "in:sent":  # this fake holds only the Sent folder
            return web.json_response({"resultSizeEstimate": 0})
        limit = int(request.query.get("maxResults", "100"))
        listed = [{"id": m["id"], "threadId": m["threadId"]} for m in self.sent_mail[:limit]]
        return web.json_response({"messages": listed, "resultSizeEstimate": len(listed)})

    async def _get(self, request: web.Request) -> web.Response:
        self._seen(request, dict(request.query))
        if not self._authorised(request):
            return self._unauthenticated()
        found = next((m for m in self.sent_mail if m["id"] == request.match_info["id"]), None)
        if found is None:
            return web.json_response({"error": {"code": 404, "message": "Requested entity was not found.",
                                                "status": "NOT_FOUND"}}, status=404)
        return web.json_response(found)
