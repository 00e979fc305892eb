"""How many tokens each kind of model call may answer with: its ``max_tokens``.

Every call carries a budget, because a model that runs away would otherwise write until the
deadline and, on a one-slot local server, hold up the next call too; each is what the largest
legitimate answer of its purpose needs, with room to spare. The README's "Model servers"
section lists them: change both together. Why, measured: docs/turn.md (Budgets).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

AGENT_MAX_TOKENS = 2_000  # a chat answer (about 1,500 words) or a round of tool calls
MEMORY_MAX_TOKENS: Mapping[str, int] = MappingProxyType({
    "evidence_selection": 1_500,  # up to 100 note paths for totals and five searches; or up to 100 ranked ids
    "reply_check": 2_500,  # a revised reply: the agent's answer with its verdict around it
    "memory_learn": 2_000,  # a handful of notes, each with kind, dates, ids and a quote
    "trust_check": 200,  # a yes or no and a sentence
    "reflect": 3_000,  # operations over a batch of 40 messages, each quoted
    "digest": 800,  # eight short lines
    "skill_rewrite": 2_500,  # a 6,000-character body, its description and the JSON around them
    "writing_style": 400,  # at most 500 characters
})
DEFAULT_MEMORY_MAX_TOKENS = 1_000  # a purpose missing above (a new one) still gets a bound
REASONING_ALLOWANCE = 8_000  # a server that wants max_completion_tokens counts hidden reasoning in it too


MIN_TOKENS = 16  # however small the scale, a yes or no still fits


def memory_max_tokens(purpose: str, scale: float = 1.0) -> int:
    return scaled(MEMORY_MAX_TOKENS.get(purpose, DEFAULT_MEMORY_MAX_TOKENS), scale)


def scaled(tokens: int, scale: float) -> int:
    return max(MIN_TOKENS, round(tokens * scale))
