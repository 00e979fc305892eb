"""Telegram's HTML for a model's Markdown, in messages of at most 4,096 characters.

Models write Markdown; Telegram's MarkdownV2 needs a dozen characters escaped and rejects
a message for one stray mark, so Nod sends HTML instead, written from core's one reading
of the Markdown (``core.markdown``) in Telegram's tags: ``<b> <i> <s> <code> <pre>
<blockquote> <a>``. Everything else is escaped text: ``& < >`` always, quotes inside an
``href`` too. Links become tags only for schemes Telegram opens (http, https, tg,
mailto); any other is written as "text (URL)". If Telegram still rejects a part, the
sink resends that part's visible text (``visible_text``), which is what the reader would
have seen without the formatting.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from core.markdown.parsing import read
from core.markdown.pieces import Mark, Style
from core.markdown.splitting import joined, split

TELEGRAM_LIMIT = 4_096  # characters per message; measured on the HTML, which is never shorter than the text shown
LINK_SCHEMES = frozenset({"http", "https", "tg", "mailto"})
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _pre(language: str) -> Mark:
    if _LANGUAGE.fullmatch(language):
        return Mark(f'<pre><code class="language-{html.escape(language)}">', "</code></pre>")
    return Mark("<pre>", "</pre>")


def _anchor(href: str) -> Mark | None:
    scheme, colon, _ = href.partition(":")
    if not colon or scheme.lower() not in LINK_SCHEMES:
        return None
    return Mark(f'<a href="{html.escape(href, quote=True)}">', "</a>")


TELEGRAM_HTML = Style(
    bold=Mark("<b>", "</b>"), italic=Mark("<i>", "</i>"), strike=Mark("<s>", "</s>"),
    code=Mark("<code>", "</code>"), code_block=_pre, quote=Mark("<blockquote>", "</blockquote>"),
    bullet="• ", link=_anchor, escape=_escape,
)


def to_html(markdown: str) -> str:
    """The whole reply as one HTML text (no size limit)."""
    return joined(read(markdown, TELEGRAM_HTML), _escape)


def html_parts(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """The reply as HTML messages of at most ``limit`` characters, each with its tags balanced."""
    return split(read(markdown, TELEGRAM_HTML), limit, _escape)


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)


def visible_text(part: str) -> str:
    """The text a reader sees in an HTML part: tags dropped, entities read back."""
    parser = _Visible()
    parser.feed(part)
    parser.close()
    return "".join(parser.chunks)
