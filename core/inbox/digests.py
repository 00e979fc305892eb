"""The digests behind ``/memory`` and ``/context``: written by the memory model, or plain.

No agent turn runs. With a memory model and spending capacity, one ``digest`` call (it
counts in usage like every call) summarises the notes — the model sees only the owner's
saved notes (and, for ``/context``, the learned skills' names), never the conversation —
and the count of notes is added by the server, not the model. Without a model, past the
spending limit, or when the call fails, the owner gets the plain digest, so the command
always answers.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from core.agent.gateway import Gateway
from core.agent.spending import Spending
from core.errors import ConfigError, ModelError
from core.evidence.selection import bounded_input
from core.memory.digest import context_digest, memory_digest
from core.memory.render import index_lines, skill_lines
from core.memory.values import MemoryDocument
from core.owner import Owner
from core.ports import MemoryRepository
from core.structured import Answer

log = logging.getLogger("nod.inbox.digests")
MAX_SUMMARY_CHARS = 1_200


class Digest(Answer):
    purpose: ClassVar[str] = "digest"
    max_tokens: ClassVar[int] = 800  # eight short lines
    summary: str
INSTRUCTIONS = """You write a short digest, for the owner, of what their assistant Nod \
remembers about them. Use only the notes given; add nothing, guess nothing. Speak to the \
owner as "you", in the language of the notes, in at most eight short lines of plain text \
(no Markdown). Group related notes; say "you mentioned once" for notes marked (tentative). \
Answer with JSON {"summary": "..."}."""


class Digests:
    def __init__(self, gateway: Gateway, spending: Spending, memory: MemoryRepository) -> None:
        self._gateway = gateway
        self._spending = spending
        self._memory = memory

    async def memory(self, owner: Owner) -> str:
        doc = (await self._memory.load(owner.id)).document
        if not doc.entries:
            return memory_digest(doc)
        written = await self._written(owner, {"notes": index_lines(doc)})
        return f"{written}\n\n{_count(doc)}" if written else memory_digest(doc)

    async def context(self, owner: Owner) -> str:
        doc = (await self._memory.load(owner.id)).document
        if not doc.entries and not doc.skills:
            return context_digest(doc)
        written = await self._written(owner, {"notes": index_lines(doc), "learned_skills": skill_lines(doc)})
        if not written:
            return context_digest(doc)
        return f"What I see at the start of every turn, in short:\n{written}\n\n{_count(doc)}"

    async def _written(self, owner: Owner, payload: dict[str, list[str]]) -> str | None:
        if not self._gateway.memory_configured or not await self._spending.allows_optional_calls(owner):
            return None
        messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": bounded_input(payload)}]
        try:
            answer = await self._gateway.ask(owner.id, Digest, messages)
        except (ModelError, ConfigError) as exc:
            log.info("digest_plain owner=%s error=%s", owner.id, type(exc).__name__)
            return None
        return answer.summary.strip()[:MAX_SUMMARY_CHARS] or None


def _count(doc: MemoryDocument) -> str:
    notes = len(doc.entries)
    skills = f" and {len(doc.skills)} learned skill{'s' if len(doc.skills) != 1 else ''}" if doc.skills else ""
    return f"({notes} note{'s' if notes != 1 else ''}{skills} saved.)"
