"""A reply as channels receive it, and splitting it for message-size limits.

A ``Reply`` is the checked text plus the choices the agent offered (a task card). Telegram
shows the choices as inline buttons; a channel without buttons, the stored conversation
and the reply check all use its text form, the choices numbered under the text.

Splitting, for channels with a size limit (each adapter knows its own):

Cuts fall on the last paragraph break that fits, else the last sentence end, else the last
space, and only as a last resort inside a word; no part is empty, nothing is lost except
the whitespace at a cut, and the parts joined back read as the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*\s")
MAX_CHOICES = 6
MAX_CHOICE_CHARS = 40


@dataclass(frozen=True)
class Reply:
    text: str
    choices: tuple[str, ...] = ()

    def text_form(self) -> str:
        """The text with the choices listed under it: what a reader without buttons sees."""
        if not self.choices:
            return self.text
        listed = "\n".join(f"{n}. {choice}" for n, choice in enumerate(self.choices, start=1))
        return f"{self.text.rstrip()}\n\n{listed}"


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
