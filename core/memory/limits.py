"""The memory document's limits, each checked with an error that says which one broke.

Limits come from the specification: five areas, ``area/slug`` addresses, 4,000-character
texts, one-line abstracts, 400-character support quotes and a 256 KiB document.
"""

from __future__ import annotations

import re

from core.errors import MemoryLimitError
from core.memory.values import AREAS
from core.text import storable

MAX_TEXT = 4_000
MAX_ABSTRACT = 200
MAX_QUOTE = 400
MAX_SLUG = 64
MAX_DOCUMENT_BYTES = 256 * 1024

_SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")


def check_area(area: str) -> str:
    if area not in AREAS:
        raise MemoryLimitError(
            f"Unknown memory area {area!r}; the areas are {', '.join(AREAS)}."
        )
    return area


def check_slug(slug: str) -> str:
    if not slug or len(slug) > MAX_SLUG or not _SLUG.fullmatch(slug):
        raise MemoryLimitError(
            f"The short name {slug[:80]!r} (the part after the area, as in people/sister) must be 1 to "
            f"{MAX_SLUG} lowercase letters, digits and dashes, starting with a letter or digit."
        )
    return slug


def split_path(path: str) -> tuple[str, str]:
    """``area/slug`` → (area, slug), both checked."""
    area, sep, slug = path.strip().partition("/")
    if not sep:
        raise MemoryLimitError(f"A memory path is area/slug, not {path[:80]!r}.")
    return check_area(area), check_slug(slug)


def check_text(text: str) -> str:
    text = storable(text).strip()
    if not text:
        raise MemoryLimitError("A memory entry needs a text.")
    if len(text) > MAX_TEXT:
        raise MemoryLimitError(
            f"A memory entry holds at most {MAX_TEXT:,} characters; this one has {len(text):,}."
        )
    return text


def check_abstract(abstract: str | None) -> str | None:
    if abstract is None:
        return None
    abstract = storable(abstract).strip()
    if not abstract:
        return None
    if "\n" in abstract or "\r" in abstract:
        raise MemoryLimitError("An abstract is one line.")
    if len(abstract) > MAX_ABSTRACT:
        raise MemoryLimitError(
            f"An abstract holds at most {MAX_ABSTRACT} characters; this one has {len(abstract)}."
        )
    return abstract


def fit_quote(quote: str | None) -> str | None:
    """A support quote over the limit is omitted: the fact stays, the quote goes."""
    if quote is None:
        return None
    quote = quote.strip()
    if not quote or len(quote) > MAX_QUOTE:
        return None
    return quote
