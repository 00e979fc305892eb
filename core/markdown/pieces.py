"""The pieces a reply is written in, and the style that says how a channel writes them.

A written reply is a flat stream: visible ``Text`` (escaped only when the part is put
together, so a cut never falls inside an entity such as ``&amp;``), ``Open``/``Close`` of a
``Mark`` (literal markup, well nested), and ``Break`` between blocks, where a message
may end. Keeping text and markup apart is what lets the splitter measure, cut and reopen
without parsing its own output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    """Markup around a span: ``<b>``/``</b>``, ``*``/``*``, or nothing at all for plain text.

    ``line`` starts every further line inside the mark: a list item's indentation, a
    WhatsApp quote's "> ". ``reopen`` is written instead of ``open`` when a message cut
    inside the mark continues it (an item goes on indented, without a second bullet).
    """

    open: str
    close: str
    line: str = ""
    reopen: str | None = None

    @property
    def again(self) -> str:
        return self.open if self.reopen is None else self.reopen


NO_MARK = Mark("", "")
QUOTE_LINES = Mark("> ", "", line="> ")  # a quote as plain text writes it: every line starts with "> "


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Open:
    mark: Mark


@dataclass(frozen=True)
class Close:
    mark: Mark


@dataclass(frozen=True)
class Break:
    """Between two blocks: ``sep`` is written when both land in one message, dropped at a cut."""

    sep: str


Piece = Text | Open | Close | Break


def verbatim(text: str) -> str:
    return text


def no_link(href: str) -> Mark | None:
    return None


@dataclass(frozen=True)
class Style:
    """How one channel writes each Markdown element.

    ``code_block`` gets the fence's language ("" when none). ``link`` gets the URL and
    returns the mark around the link's text, or None for "text (URL)". ``quote`` is a pair
    of tags, or a line prefix (``QUOTE_LINES``). Headings are written bold.
    """

    bold: Mark
    italic: Mark
    strike: Mark
    code: Mark
    code_block: Callable[[str], Mark]
    quote: Mark
    bullet: str = "• "
    rule: str = "———"
    link: Callable[[str], Mark | None] = no_link
    escape: Callable[[str], str] = verbatim
