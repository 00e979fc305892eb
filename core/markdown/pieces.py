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
    """Markup around a span: ``<b>``/``</b>``, ``*``/``*``, or nothing at all for plain text."""

    open: str
    close: str


NO_MARK = Mark("", "")


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
    returns the mark around the link's text, or None for "text (URL)". ``quote`` None means
    each quoted line starts with ``quote_prefix`` instead. Headings are written bold.
    """

    bold: Mark
    italic: Mark
    strike: Mark
    code: Mark
    code_block: Callable[[str], Mark]
    quote: Mark | None = None
    quote_prefix: str = "> "
    bullet: str = "• "
    rule: str = "———"
    link: Callable[[str], Mark | None] = no_link
    escape: Callable[[str], str] = verbatim
