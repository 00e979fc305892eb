"""The reply check (the ReplyCheck slot): the memory model checks a draft's personal claims.

It runs only when this turn selected evidence, a memory model is configured and spending
allows. Its only output is text — it cannot run tools, authorise actions or save notes —
and any failure delivers the draft unchanged; the same draft is checked once per turn. What
it sees and may change: docs/memory.md (How evidence works).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import ClassVar, Literal

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext
from core.errors import ConfigError, ModelError
from core.evidence.selection import Selector, bounded_input
from core.memory.render import index_lines
from core.message import StoredMessage
from core.structured import Answer
from core.tools.registry import READ_TOOL_NAMES
from core.tools.tool import ToolOutcome

log = logging.getLogger("nod.evidence")
MAX_READS_CHARS = 80_000


class ReplyVerdict(Answer):
    purpose: ClassVar[str] = "reply_check"
    max_tokens: ClassVar[int] = 2_500  # a revised reply: the agent's answer with its verdict around it
    verdict: Literal["keep", "revise"]
    text: str = ""
INSTRUCTIONS = """Check a personal assistant's draft reply before it is sent. Compare its personal
claims about the owner with the saved notes, the selected evidence and the reads made
during the turn. If a claim is wrong or a relevant saved fact should shape the advice,
return verdict "revise" with the corrected reply; otherwise "keep". Keep plans apart from
completed events, possessions apart from purchases, and an earlier assistant statement
apart from a verified correction. A fact missing from the evidence is not unknown if a
saved note states it. Change nothing else: no new actions, no links, no tool use."""


def _reads(reads: Sequence[ToolOutcome]) -> tuple[list[str], int]:
    kept, used, omitted = [], 0, 0
    for read in reads:
        if read.name not in READ_TOOL_NAMES:
            continue
        body = read.content()
        if used + len(body) > MAX_READS_CHARS:
            omitted += 1
            continue
        kept.append(body)
        used += len(body)
    return kept, omitted


class ReplyChecker:
    def __init__(self, gateway: Gateway, selector: Selector) -> None:
        self._gateway = gateway
        self._selector = selector

    async def check(self, ctx: TurnContext, request: StoredMessage, draft: str, reads: Sequence[ToolOutcome]) -> str:
        state = self._selector.state(ctx.owner.id, ctx.origin)
        if state is None or state.request_id != request.id or not state.packet or not self._gateway.memory_configured:
            return draft
        key = int.from_bytes(hashlib.sha256(draft.encode()).digest()[:8], "big")
        if key in state.checked:
            return state.checked[key]
        if not ctx.may_spend:
            return draft
        doc = ctx.document
        kept, omitted = _reads(reads)
        payload = {"request": request.text, "draft": draft, "saved_notes": index_lines(doc), "evidence": state.packet,
                   "reads": kept, "reads_omitted": omitted}
        if request.media is not None:  # the draft may describe a file this check is not shown
            payload["attachment"] = (f"The owner sent {request.media.label} with this request, which you cannot see: "
                                     "keep what the draft says the file shows or contains.")
        result = draft
        try:
            answer = await self._gateway.ask(ctx.owner.id, ReplyVerdict, [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": bounded_input(payload)}])
            if answer.verdict == "revise" and answer.text.strip():
                result = answer.text.strip()
                log.info("reply_revised owner=%s", ctx.owner.id)
        except (ModelError, ConfigError) as exc:
            log.info("reply_check_skipped owner=%s error=%s", ctx.owner.id, type(exc).__name__)
        state.checked[key] = result
        return result
