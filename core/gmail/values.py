"""Values of the Gmail connection: a mail as read, a consent in progress, a grant, a connection's state.

Pure values; the refresh token appears here only encrypted (``Connection.sealed_token``)
or in ``Grant`` on its way from Google to the cipher, never in a log line or a ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

SCOPE = "https://www.googleapis.com/auth/gmail.readonly"
CALLBACK_PATH = "/oauth/google/callback"


@dataclass(frozen=True)
class MailMessage:
    """One sent mail as the adapter decoded it: its headers and its plain text (quoted part included).

    ``calendar`` is true when the mail carried a calendar part (an invitation or a reply to
    one): such mail is written by the calendar, not by the owner.
    """

    headers: tuple[tuple[str, str], ...]
    text: str
    calendar: bool = False

    def header(self, name: str) -> str:
        """The first header of that name (any case), or ""."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), "")


@dataclass(frozen=True)
class Consent:
    """Google's consent URL for one state, and the PKCE verifier its code exchange will need."""

    url: str
    code_verifier: str | None = field(repr=False)


@dataclass(frozen=True)
class Grant:
    """What Google granted: a refresh token (kept only encrypted) and the scopes it covers."""

    refresh_token: str = field(repr=False)
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class PendingConsent:
    """A consent Nod started: for which owner, bound to which page session (None: a terminal's one-time record)."""

    owner_id: int
    session_hash: str | None
    sealed_verifier: str | None = field(repr=False)


@dataclass(frozen=True)
class Connection:
    """An owner's Gmail connection as stored: the sealed refresh token and the last run's counts.

    ``outcome`` is one sentence for the page about the last run (never email content);
    ``reconnect`` is set when Google refused the grant, until the owner connects again.
    """

    owner_id: int
    sealed_token: str = field(repr=False)
    connected_at: datetime
    last_run_at: datetime | None = None
    last_ok: bool = False
    sampled: int = 0
    skipped: int = 0
    outcome: str | None = None
    reconnect: bool = False


@dataclass(frozen=True)
class RunReport:
    """What one writing-style run did, in counts and one sentence."""

    ok: bool
    outcome: str
    sampled: int = 0
    skipped: int = 0
    saved: bool = False
    reconnect: bool = False
