"""A Telegram identity as an operator writes it: the owner's numeric user id. No SDK import, so the CLI stays quick."""

from __future__ import annotations

from core.errors import InvalidInput


def parse_identity(raw: str) -> str:
    if not raw.strip().isdigit():
        raise InvalidInput(f"A Telegram id is the owner's numeric user id (ask @userinfobot), not {raw!r}.")
    return raw.strip()
