"""Telegram's HTML parse mode, as the Bot API applies it to a message's text.

It follows tdlib's ``parse_html``: only Telegram's tags (``b strong i em u ins s strike del
a code pre blockquote tg-spoiler span tg-emoji``; ``span`` only with class "tg-spoiler"),
every end tag matching the innermost open one, none left open, entities ``&lt; &gt;
&amp; &quot;`` and numeric ones decoded (any other ``&`` is a character). The result is
the visible text and its entities with UTF-16 offsets, as a Message carries them; a
failure is the sentence Telegram answers after "Bad Request: can't parse entities: ".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ALLOWED = frozenset({"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre",
                     "blockquote", "tg-spoiler", "span", "tg-emoji"})
KINDS = {"b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline", "ins": "underline",
         "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough", "a": "text_link", "code": "code",
         "pre": "pre", "blockquote": "blockquote", "tg-spoiler": "spoiler", "span": "spoiler", "tg-emoji": "custom_emoji"}
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#x[0-9a-fA-F]{1,6}|lt|gt|amp|quot);")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_START = re.compile(r"<([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>\"']+))?)*)\s*>")
_END = re.compile(r"</([a-zA-Z][a-zA-Z0-9-]*)\s*>")
_ATTRIBUTE = re.compile(r"([a-zA-Z-]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>\"']+)))?")


class EntityError(ValueError):
    """The HTML was refused; the message is Telegram's sentence."""


@dataclass
class _Open:
    tag: str
    attributes: dict[str, str]
    start: int  # UTF-16 offset in the visible text


@dataclass
class Parsed:
    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _unescape(raw: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in _NAMED:
            return _NAMED[name]
        return chr(int(name[2:], 16) if name.startswith("#x") else int(name[1:]))
    return _ENTITY.sub(one, raw)


def parse_html(markup: str) -> Parsed:
    """The visible text and entities of ``markup``, or EntityError as Telegram words it."""
    text: list[str] = []
    size = 0  # UTF-16 length of the text so far
    stack: list[_Open] = []
    entities: list[dict[str, Any]] = []
    position = 0
    while position < len(markup):
        lt = markup.find("<", position)
        chunk = _unescape(markup[position:] if lt < 0 else markup[position:lt])
        text.append(chunk)
        size += _utf16(chunk)
        if lt < 0:
            break
        offset = len(markup[:lt].encode())
        end = _END.match(markup, lt)
        if end:
            name = end.group(1).lower()
            if not stack:
                raise EntityError(f"Unexpected end tag at byte offset {offset}")
            if stack[-1].tag != name:
                raise EntityError(f'Unmatched end tag at byte offset {offset}, expected "</{stack[-1].tag}>", '
                                  f'found "</{name}>"')
            entities.extend(_entity(stack.pop(), size, stack))
            position = end.end()
            continue
        start = _START.match(markup, lt)
        if not start:
            name = re.match(r"<([^\s>]*)", markup[lt:])
            raise EntityError(f'Unsupported start tag "{name.group(1) if name else ""}" at byte offset {offset}')
        name = start.group(1).lower()
        if name not in ALLOWED:
            raise EntityError(f'Unsupported start tag "{name}" at byte offset {offset}')
        attributes = {m.group(1).lower(): next((g for g in m.groups()[1:] if g is not None), "")
                      for m in _ATTRIBUTE.finditer(start.group(2))}
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise EntityError('Tag "span" must have class "tg-spoiler"')
        stack.append(_Open(name, {k: _unescape(v) for k, v in attributes.items()}, size))
        position = start.end()
    if stack:
        raise EntityError(f'Can\'t find end tag corresponding to start tag "{stack[-1].tag}"')
    return Parsed("".join(text), sorted(entities, key=lambda e: (e["offset"], -e["length"])))


def _entity(opened: _Open, end: int, outer: list[_Open]) -> list[dict[str, Any]]:
    kind = KINDS[opened.tag]
    if kind == "code" and outer and outer[-1].tag == "pre":  # <pre><code class="language-x">: the pre's language
        language = opened.attributes.get("class", "").removeprefix("language-")
        if language:
            outer[-1].attributes["language"] = language
        return []
    length = end - opened.start
    if length <= 0:
        return []  # Telegram drops an empty entity
    entity: dict[str, Any] = {"type": kind, "offset": opened.start, "length": length}
    if kind == "text_link":
        entity["url"] = opened.attributes.get("href", "")
    if kind == "pre" and "language" in opened.attributes:
        entity["language"] = opened.attributes["language"]
    return [entity]
