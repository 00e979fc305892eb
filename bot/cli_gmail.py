"""``nod gmail connect|disconnect|refresh --owner NAME``: the Gmail writing style from a terminal.

``connect`` prints Google's consent URL for the owner, bound to a one-time record (no page
session in a terminal); Google sends the browser back to ``NOD_PUBLIC_URL/oauth/google/callback``,
which ``nod run`` serves, and the first run starts there. ``disconnect`` revokes the token
at Google and deletes it. ``refresh`` runs once now, here, and prints what it did.
"""

from __future__ import annotations

import sys

from bot.wiring import Services
from core.errors import ConfigError
from core.gmail.link import CONSENT_LIFETIME, GmailLink


def _gmail(svc: Services) -> GmailLink:
    if svc.gmail is None:
        raise ConfigError(svc.gmail_off)
    return svc.gmail


async def connect(svc: Services, owner_name: str) -> str:
    link = _gmail(svc)
    owner = await svc.owners.by_name(owner_name)
    url = await link.start(owner.id, None)
    minutes = int(CONSENT_LIFETIME.total_seconds() // 60)
    sys.stderr.write(f"Open this link within {minutes} minutes as {owner.name} and allow Nod to read Gmail (read-only); "
                     "`nod run` must be serving NOD_PUBLIC_URL for Google to come back to.\n")
    return url


async def disconnect(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    done = await _gmail(svc).disconnect(owner.id)
    if done.revoked:
        return f"Gmail disconnected for {owner.name}: Google revoked Nod's access and the token is deleted."
    return (f"Gmail disconnected for {owner.name}: the token is deleted, but Google did not confirm the revocation; "
            "remove Nod under the Google Account's third-party access.")


async def refresh(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    link = _gmail(svc)
    await link.refresh(owner.id)
    report = await link.runs.wait(owner.id)
    if report is None:
        return f"{owner.name}: the writing-style run failed; see the log."
    return f"{owner.name}: {report.sampled} sent emails read, {report.skipped} left out. {report.outcome}"
