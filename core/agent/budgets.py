"""How many tokens a model call may answer with: its ``max_tokens``, scaled by one setting.

Every call carries a budget, because a model that runs away would otherwise write until the
deadline and, on a one-slot local server, hold up the next call too. The agent's is here; each
memory-model answer kind declares its own beside its schema (``Answer.max_tokens``). The
README's "Model servers" section lists them all (a test keeps it equal). Why: docs/turn.md.
"""

from __future__ import annotations

AGENT_MAX_TOKENS = 2_000  # a chat answer (about 1,500 words) or a round of tool calls
REASONING_ALLOWANCE = 8_000  # a server that wants max_completion_tokens counts hidden reasoning in it too
MIN_TOKENS = 16  # however small the scale, a yes or no still fits


def scaled(tokens: int, scale: float) -> int:
    return max(MIN_TOKENS, round(tokens * scale))
