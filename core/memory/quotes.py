"""Does a saved quote still match its source message? One strict comparison for all.

Both sides are put in Unicode NFC and their runs of whitespace folded to one space;
nothing looser (no case folding, no punctuation stripping), because a quote is the
owner's exact words and it proves a note only while those words are still there.
"""

from __future__ import annotations

import unicodedata


def normalized(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def quote_matches(quote: str, source_text: str) -> bool:
    wanted = normalized(quote)
    return bool(wanted) and wanted in normalized(source_text)
