"""Connecting and disconnecting Gmail: Google's OAuth 2.0 web-server flow, with CSRF bound state.

``start`` makes a random ``state`` and stores only its SHA-256, with the owner, the page
session that asked (the page's Connect button) or none (``nod gmail connect`` in a
terminal: the state is then a one-time record), and the PKCE verifier, sealed. The consent
asks for ``gmail.readonly`` and nothing else. ``finish`` takes the state exactly once
within 15 minutes, and only from the same page session when one asked, so a forged or
replayed callback — another site's link, another owner's browser — connects nothing; then
it exchanges the code, keeps the refresh token encrypted (``TokenCipher``) and starts the
first run. ``disconnect`` revokes the token at Google and deletes it, whatever Google says.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from core.clock import Clock
from core.errors import InvalidInput, MailError, NotFound
from core.gmail.cipher import TokenCipher
from core.gmail.runs import StyleRuns
from core.gmail.values import SCOPE, PendingConsent
from core.owner import Owner
from core.ports import GmailConnections, GoogleAccounts

log = logging.getLogger("nod.gmail")
CONSENT_LIFETIME = timedelta(minutes=15)
REFUSED = ("This Gmail connection was not started here or has expired; "
           "press Connect Gmail on the memory page (or run nod gmail connect) again.")
_GOOGLE_ERRORS = {"access_denied": "you declined on Google's consent screen"}


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


@dataclass(frozen=True)
class Disconnected:
    revoked: bool  # Google confirmed the revocation; the token is deleted here either way


class GmailLink:
    def __init__(self, accounts: GoogleAccounts, connections: GmailConnections, cipher: TokenCipher, runs: StyleRuns,
                 clock: Clock) -> None:
        self._accounts = accounts
        self._connections = connections
        self._cipher = cipher
        self._runs = runs
        self._clock = clock

    @property
    def runs(self) -> StyleRuns:
        return self._runs

    async def start(self, owner_id: int, session_hash: str | None) -> str:
        """Google's consent URL for the owner; ``session_hash`` binds it to the page session that asked."""
        state = secrets.token_urlsafe(32)
        consent = self._accounts.consent(state)
        sealed = self._cipher.seal(consent.code_verifier) if consent.code_verifier else None
        now = self._clock.now()
        await self._connections.add_consent(_hash(state), PendingConsent(owner_id, session_hash, sealed), now,
                                            now + CONSENT_LIFETIME)
        return consent.url

    async def finish(self, state: str | None, code: str | None, error: str | None, session_hash: str | None) -> int:
        """Complete a consent: the owner connected; InvalidInput with a sentence when refused."""
        if not state or len(state) > 200:
            raise InvalidInput(REFUSED)
        # used up, whatever follows, but only from the session it is bound to
        pending = await self._connections.take_consent(_hash(state), self._clock.now(), session_hash)
        if pending is None:
            log.info("gmail_consent_refused")
            raise InvalidInput(REFUSED)
        if error is not None or not code:
            why = _GOOGLE_ERRORS.get(error or "", "Google sent no authorisation")
            raise InvalidInput(f"Gmail was not connected: {why}.")
        verifier = self._cipher.open(pending.sealed_verifier) if pending.sealed_verifier else None
        grant = await self._accounts.exchange(code, verifier)
        if SCOPE not in grant.scopes:
            await self._revoke_quietly(grant.refresh_token)
            raise InvalidInput("Gmail was not connected: reading your mail was not allowed on Google's consent screen.")
        await self._connections.connect(pending.owner_id, self._cipher.seal(grant.refresh_token), self._clock.now())
        log.info("gmail_connected owner=%s", pending.owner_id)
        self._runs.request(pending.owner_id)
        return pending.owner_id

    async def refresh(self, owner_id: int) -> None:
        """Start a run now (the page's Refresh button); NotFound when Gmail is not connected."""
        if await self._connections.get(owner_id) is None:
            raise NotFound("Gmail is not connected.")
        self._runs.request(owner_id)

    async def disconnect(self, owner_id: int) -> Disconnected:
        found = await self._connections.get(owner_id)
        if found is None:
            raise NotFound("Gmail is not connected.")
        await self._runs.cancel(owner_id)
        revoked = False
        try:
            revoked = await self._accounts.revoke(self._cipher.open(found.sealed_token))
        except MailError as exc:
            log.warning("gmail_revoke_failed owner=%s error=%s", owner_id, type(exc).__name__)
        await self._connections.delete(owner_id)
        log.info("gmail_disconnected owner=%s revoked=%s", owner_id, revoked)
        return Disconnected(revoked)

    async def status(self, owner: Owner) -> dict[str, Any]:
        """What the page shows of the connection: counts and one sentence, nothing from a mail."""
        found = await self._connections.get(owner.id)
        if found is None:
            return {"configured": True, "connected": False, "running": False, "reconnect": False}
        when = found.last_run_at.astimezone(owner.zone).isoformat(timespec="minutes") if found.last_run_at else None
        return {"configured": True, "connected": True, "running": self._runs.running(owner.id),
                "reconnect": found.reconnect, "last_run_at": when, "sampled": found.sampled,
                "skipped": found.skipped, "outcome": found.outcome,
                "connected_at": found.connected_at.astimezone(owner.zone).isoformat(timespec="minutes")}

    async def _revoke_quietly(self, refresh_token: str) -> None:
        try:
            await self._accounts.revoke(refresh_token)
        except MailError as exc:
            log.warning("gmail_revoke_failed error=%s", type(exc).__name__)


NOT_CONFIGURED: dict[str, Any] = {"configured": False, "connected": False, "running": False, "reconnect": False}
