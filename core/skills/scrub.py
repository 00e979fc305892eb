"""Before a skill draft reaches the memory model: known secret values out, by the server.

Two kinds are removed. The values Nod itself holds as secrets (API keys, tokens — the
operator's settings, handed in by the composition root), wherever they appear; and
anything the secrets detector recognises, token by token: card numbers, provider keys,
bearer tokens, passwords stated as such and links that carry a login, each replaced by a
placeholder naming what it was. The model is then told to replace names, contacts,
numbers and message content with placeholders too; as a model it can miss one, so the
server checks its result again (``refuse_secrets``) before anything is saved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.secrets import find_secret, secret_spans

_TOKEN = re.compile(r"\S+")
_RUN = re.compile(r"(?<!\d)\d(?:(?:[^\w\n]|_){0,5}\d)+(?!\d)")  # a run of digits and separators
_PLACEHOLDER = {"card number": "<card number>", "private key": "<private key>", "key or token": "<key>",
                "bearer token": "<token>", "password": "<password>", "link with a login": "<login link>"}


def scrub(draft: str, known: Iterable[str] = ()) -> str:
    """``draft`` with every known secret value and every recognised secret replaced by a placeholder."""
    for value in sorted({v for v in known if len(v) >= 6}, key=len, reverse=True):
        draft = draft.replace(value, "<secret>")
    draft = _RUN.sub(lambda m: _PLACEHOLDER[kind] if (kind := find_secret(m.group())) else m.group(), draft)
    return "\n".join(_scrub_line(line) for line in draft.splitlines())


def _scrub_line(line: str) -> str:
    for start, end, found in reversed(secret_spans(line)):  # the detector's own places: a card read out, a password's value
        line = line[:start] + _PLACEHOLDER[found] + line[end:]
    for _ in range(5):  # a line may hold several kinds: a password and a login link
        kind = find_secret(line)
        if kind is None:
            return line
        cleaned = _TOKEN.sub(lambda m: _PLACEHOLDER[k] if (k := find_secret(m.group())) else m.group(), line)
        if cleaned == line:
            return line  # what is left is refused after the rewrite, not guessed at here
        line = cleaned
    return line
