"""Getting into the memory page: one-time sign-in links, signed session cookies, CSRF tokens.

``/settings`` (or ``nod page``) makes a link ``PUBLIC_URL/settings/memory?t=…`` that works
once and for 15 minutes; opening it starts a 30-day session whose cookie is a random id
signed with ``NOD_SECRET_KEY``. Only SHA-256 hashes of link tokens and session ids are
stored, so the database alone opens nothing; a signature that does not verify is refused
before the database is asked. Every state-changing request also carries a CSRF token
derived from the session (HMAC), which a page on another site cannot read. ``/settings
logout`` and ``nod page --revoke`` end every session of the owner.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from core.clock import Clock
from core.ports import PageSessions

LINK_LIFETIME = timedelta(minutes=15)
SESSION_LIFETIME = timedelta(days=30)
PAGE_PATH = "/settings/memory"



@dataclass(frozen=True)
class PageConfig:
    public_url: str
    secret_key: str

    @property
    def secure(self) -> bool:
        """The cookie is Secure when the page is served over https."""
        return self.public_url.lower().startswith("https://")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class PageAccess:
    def __init__(self, config: PageConfig, store: PageSessions, clock: Clock) -> None:
        self._config = config
        self._store = store
        self._clock = clock
        self._key = hashlib.sha256(b"nod-page\x00" + config.secret_key.encode()).digest()

    @property
    def secure(self) -> bool:
        return self._config.secure

    async def link(self, owner_id: int) -> str:
        """A sign-in link for the owner: one use, 15 minutes."""
        token = secrets.token_urlsafe(32)
        now = self._clock.now()
        await self._store.add_link(_hash(token), owner_id, now, now + LINK_LIFETIME)
        return f"{self._config.public_url.rstrip('/')}{PAGE_PATH}?t={token}"

    async def sign_in(self, token: str) -> tuple[int, str] | None:
        """The owner and a new session cookie value for a link token, or None when it is spent."""
        if not token or len(token) > 200:
            return None
        now = self._clock.now()
        owner_id = await self._store.take_link(_hash(token), now)
        if owner_id is None:
            return None
        session = secrets.token_urlsafe(32)
        await self._store.add_session(_hash(session), owner_id, now, now + SESSION_LIFETIME)
        return owner_id, f"{session}.{self._sign(session)}"

    async def owner_of(self, cookie: str | None) -> int | None:
        """The owner whose open session the cookie names; None for a forged, expired or revoked one."""
        session = self._verified(cookie)
        if session is None:
            return None
        return await self._store.session_owner(_hash(session), self._clock.now())

    def session_hash(self, cookie: str | None) -> str | None:
        """The stored form of the cookie's session (a signed one only): what a Gmail consent is bound to."""
        session = self._verified(cookie)
        return _hash(session) if session is not None else None

    def csrf_token(self, cookie: str) -> str:
        session = self._verified(cookie) or ""
        return _b64(hmac.new(self._key, b"csrf\x00" + session.encode(), hashlib.sha256).digest())

    def csrf_ok(self, cookie: str | None, token: str | None) -> bool:
        if not cookie or not token or self._verified(cookie) is None:
            return False
        return hmac.compare_digest(token.encode("utf-8", "replace"), self.csrf_token(cookie).encode())

    async def revoke(self, owner_id: int) -> int:
        return await self._store.revoke_sessions(owner_id, self._clock.now())

    def _sign(self, session: str) -> str:
        return _b64(hmac.new(self._key, b"session\x00" + session.encode(), hashlib.sha256).digest())

    def _verified(self, cookie: str | None) -> str | None:
        if not cookie or len(cookie) > 200:
            return None
        session, _, signature = cookie.partition(".")
        if not session or not hmac.compare_digest(signature.encode("utf-8", "replace"), self._sign(session).encode()):
            return None
        return session
