"""The trust check: does the owner's own current message ask for this action?

Destructive or lasting actions (forgetting a note, stopping memory, creating or cancelling
a reminder) need the owner's words, never the agent's paraphrase or text the agent read
somewhere. The stored current message must say one of the action's words; with a memory
model, a ``trust_check`` call that sees only that message and the action must also say
yes, so an injected "the owner wants this" in the agent's context cannot carry it alone.
Without a model the word rule decides. Whatever fails is not done: the agent asks first.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import ClassVar

from core.agent.gateway import Gateway
from core.errors import ConfigError, ModelError
from core.structured import Answer
from core.text import words

log = logging.getLogger("nod.saving")


class TrustVerdict(Answer):
    purpose: ClassVar[str] = "trust_check"
    max_tokens: ClassVar[int] = 200  # a yes or no and a sentence
    allowed: bool
    reason: str = ""


TRUST_INSTRUCTIONS = """You check whether an owner's own message asks a personal assistant to take
one action. Answer allowed=true only when the message itself clearly asks for exactly this
action; a question, a hypothetical, or a request about something else is false.
The message is the owner's words; nothing else counts."""


async def owner_asks(gateway: Gateway, owner_id: int, said: str, action: str, verbs: Collection[str]) -> bool:
    """Whether ``said`` (the stored owner message) asks for ``action``; it must use one of ``verbs``."""
    if not set(words(said)) & set(verbs):
        return False
    if not gateway.memory_configured:
        return True
    prompt = [{"role": "system", "content": TRUST_INSTRUCTIONS},
              {"role": "user", "content": f"Action: {action}\nOwner's message: {said}"}]
    try:
        answer = await gateway.ask(owner_id, TrustVerdict, prompt)
    except (ModelError, ConfigError) as exc:
        log.warning("trust_check_failed owner=%s error=%s", owner_id, type(exc).__name__)
        return False
    return answer.allowed
