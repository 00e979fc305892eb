"""WhatsApp's own markup for a model's Markdown, in messages of at most 1,600 characters.

WhatsApp shows ``*bold*``, ``_italic_``, ``~strike~``, ```` `code` ````, fenced
```` ``` ```` monospace blocks and ``> `` quotes, and no links as markup: Markdown's
``**bold**`` would show its asterisks, so the reply is written from core's one reading of
the Markdown (``core.markdown``) in these marks instead, a link as "text (URL)" (the URL
alone when it is its own text), a list as "- " lines, a heading as a bold line. WhatsApp
has no escape character, so text is written as it is. A cut inside a code block closes
the fence and the next message opens it again.
"""

from __future__ import annotations

from core.markdown.parsing import appended, read
from core.markdown.pieces import QUOTE_LINES, Mark, Style, verbatim
from core.markdown.splitting import split

WHATSAPP_LIMIT = 1_600  # characters per Twilio message body
_FENCE = Mark("```\n", "\n```")


def _fence(language: str) -> Mark:
    return _FENCE  # WhatsApp's monospace block has no language


WHATSAPP = Style(
    bold=Mark("*", "*"), italic=Mark("_", "_"), strike=Mark("~", "~"), code=Mark("`", "`"),
    code_block=_fence, quote=QUOTE_LINES, bullet="- ",
)


def whatsapp_parts(markdown: str, after: str = "", limit: int = WHATSAPP_LIMIT) -> list[str]:
    """The reply in WhatsApp's markup, then ``after`` as written (the numbered choices), in messages that fit."""
    return split(appended(read(markdown, WHATSAPP), after), limit, verbatim)
