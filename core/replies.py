"""Splitting a reply for channels with a message-size limit (Telegram 4,096, WhatsApp 1,600).

Cuts fall on the last paragraph break that fits, else the last sentence end, else the last
space, and only as a last resort inside a word; no part is empty, nothing is lost except
the whitespace at a cut, and the parts joined back read as the original.
"""

from __future__ import annotations

import re

TELEGRAM_LIMIT = 4_096
WHATSAPP_LIMIT = 1_600
_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*\s")


def _cut_at(text: str, limit: int) -> int:
    window = text[:limit]
    paragraph = window.rfind("\n\n")
    if paragraph > limit // 3:
        return paragraph
    sentences = [m.end() for m in _SENTENCE_END.finditer(window)]
    if sentences and sentences[-1] > limit // 3:
        return sentences[-1]
    line = window.rfind("\n")
    if line > limit // 3:
        return line
    space = window.rfind(" ")
    return space if space > 0 else limit


def split_reply(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut where a reader expects it."""
    if limit < 1:
        raise ValueError("limit must be positive")
    parts: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_at(rest, limit)
        head = rest[:cut].rstrip()
        if head:
            parts.append(head)
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts
