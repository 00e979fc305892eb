"""A WhatsApp identity as an operator writes it: +<digits>, as Twilio's ``whatsapp:`` address carries it. No SDK import."""

from __future__ import annotations

from core.errors import InvalidInput


def parse_identity(raw: str) -> str:
    number = raw.removeprefix("whatsapp:").replace(" ", "")
    if not number.startswith("+") or not number[1:].isdigit():
        raise InvalidInput(f"A WhatsApp number is +<digits>, not {raw!r}.")
    return number
