"""Model Markdown to Telegram HTML that cannot break: everything escaped, three marks kept.

Models write Markdown; Telegram's MarkdownV2 needs a dozen characters escaped and rejects
a message for one stray mark, so Nod sends HTML instead: the text is escaped first, then
fenced code, inline code and **bold** become tags — only in pairs, so an unmatched mark
stays a plain character. If Telegram still rejects the markup, the sink resends the
plain text.
"""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.S)


def to_html(text: str) -> str:
    escaped = html.escape(text, quote=False)
    pieces: list[str] = []
    last = 0
    for fence in _FENCE.finditer(escaped):  # no other mark applies inside code
        pieces.append(_inline(escaped[last:fence.start()]))
        pieces.append(f"<pre>{fence.group(1)}</pre>")
        last = fence.end()
    pieces.append(_inline(escaped[last:]))
    return "".join(pieces)


def _inline(text: str) -> str:
    parts = _CODE.split(text)  # odd indexes are code spans
    out = []
    for index, part in enumerate(parts):
        out.append(f"<code>{part}</code>" if index % 2 else _BOLD.sub(r"<b>\1</b>", part))
    return "".join(out)
