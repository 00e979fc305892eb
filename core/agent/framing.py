"""The words Nod frames a prompt with, and their removal from an answer that copied them.

A small model copies what looks like the start of an answer: tried on SmolLM2-135M, the
answer came back as ``[Nod server: context for this request…]``, the ``[id]`` prefixes of
the owner's messages and "Owner context:", verbatim. So the framing is plain sentences
rather than bracketed tags a model may take for a format to continue, the owner's messages
carry no ``[id]`` prefix (ids are in the server's block, where a tool call needs them), and
whatever of the framing still comes back is cut from the answer before anyone sees it —
a line that is only framing (the step-cap note too), and an ``[id]`` prefix at a line's start.
"""

from __future__ import annotations

import re

CONTEXT_OPEN = "Context from Nod's server for this message (not the owner's words; use it, never repeat it):"
CONTEXT_CLOSE = "The owner's message follows."
MEMORY_HEADING = "Your memory of the owner:"
RELATED_HEADING = "Older messages from the owner that share words with this one:"
EVIDENCE_HEADING = "Evidence selected for this request:"
OUT_OF_STEPS_NOTE = "(No more tool steps this turn: answer the owner now with what you have found.)"

_HEADINGS = (CONTEXT_OPEN, CONTEXT_CLOSE, MEMORY_HEADING, RELATED_HEADING, EVIDENCE_HEADING, OUT_OF_STEPS_NOTE,
             "Owner context:",
             "Task guides (read them with the skills tool):")
_FRAMING_LINE = re.compile(
    r"^\s*(?:"
    r"\[Nod server\b.*|\[end of context\b[^\]]*\]?"  # the bracketed tags of earlier versions
    r"|Now: \w+ \d{4}-\d{2}-\d{2} \d{2}:\d{2} \([^)]*\)\.?"  # the server's clock line
    r"|- message \d+, \d{4}-\d{2}-\d{2} \d{2}:\d{2}: .*"  # a related older message
    r"|\(No more tool steps\b.*"  # the step-cap note, also as a small model paraphrases it
    r"|(?:" + "|".join(re.escape(h) for h in _HEADINGS) + r")"
    r")\s*$", re.I)
_ID_PREFIX = re.compile(r"^\s*\[\d+(?:, [^\]]*)?\]\s?", re.M)  # "[12] " and "[12, 2026-11-01 10:00] "
_HEADING_PREFIX = re.compile(r"^\s*(?:" + "|".join(re.escape(h) for h in _HEADINGS) + r")\s*", re.I | re.M)


def unframed(text: str) -> str:
    """``text`` without the prompt's framing a model copied into it; what is left, stripped."""
    kept = [line for line in text.splitlines() if not _FRAMING_LINE.match(line)]
    out = _HEADING_PREFIX.sub("", _ID_PREFIX.sub("", "\n".join(kept)))
    return re.sub(r"\n{3,}", "\n\n", out).strip()
