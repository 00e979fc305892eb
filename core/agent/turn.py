"""One agent turn: context, evidence, the tool loop with a step cap, the reply check.

The turn is a function of its dependencies (pi-mono's agentLoop): the gateway, stores,
tools, the evidence and reply-check slots and the clock are passed in. It always ends
with a text for the owner — the model's checked answer, a check-in question when the
spending limit is used up, or one plain sentence when the model is missing or failing —
and never with an exception an adapter would have to understand. Cancellation (``/stop``,
a newer message) is the one thing that passes through, by design.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.agent.chat import ChatMessage, ChatReply
from core.agent.framing import OUT_OF_STEPS_NOTE, unframed
from core.agent.gateway import Gateway
from core.agent.prompt import TurnInputs, turn_messages
from core.agent.spending import Spending
from core.agent.turn_context import TurnContext, TurnOrigin
from core.agent.window import RecentWindow
from core.attachments.preparing import NONE, Attachments
from core.clock import Clock
from core.errors import AnswerCut, ModelDeclined, ModelError, ModelRefused, ModelTimeout
from core.memory.render import render_index
from core.message import StoredMessage
from core.ports import Conversation, MemoryRepository, Messages, Owners, UnitOfWork
from core.replies import Reply
from core.tools.offer_choices import offered_choices
from core.tools.registry import TOOL_SPECS, Toolbox
from core.tools.tool import ToolOutcome

log = logging.getLogger("nod.agent.turn")
MAX_STEPS = 8
RELATED_COUNT = 6  # older owner messages sharing words with the request
NO_MODEL = (
    "I can't answer yet: no model is configured. The operator sets NOD_AGENT_MODEL (and "
    "OPENAI_API_KEY, or OPENAI_BASE_URL for a local server) and restarts Nod."
)
OUT_OF_STEPS = OUT_OF_STEPS_NOTE
EMPTY_ANSWER = "I couldn't put an answer together just now. Could you ask again?"
CUT_NOTE = "\n\n[My answer was cut off here: it ran past the model's length limit. Ask me to go on.]"
CUT_EMPTY = "My answer ran past the model's length limit before I could finish it. Could you ask for less at once?"


class EvidenceSource(Protocol):
    """The evidence packet for a request (core.evidence.selection), or None."""

    async def packet(self, ctx: TurnContext, request: StoredMessage) -> str | None: ...


class ReplyCheck(Protocol):
    """Checks a draft's personal claims before delivery (core.evidence.reply_check)."""

    async def check(
        self, ctx: TurnContext, request: StoredMessage, draft: str, reads: Sequence[ToolOutcome]
    ) -> str: ...


class NoEvidence:
    async def packet(self, ctx: TurnContext, request: StoredMessage) -> str | None:
        return None


class NoCheck:
    async def check(
        self, ctx: TurnContext, request: StoredMessage, draft: str, reads: Sequence[ToolOutcome]
    ) -> str:
        return draft


@dataclass(frozen=True)
class TurnDeps:
    gateway: Gateway
    spending: Spending
    messages: Messages
    owners: Owners
    memory: MemoryRepository
    conversation: Conversation
    tools: Toolbox
    clock: Clock
    uow: UnitOfWork  # what must commit together: a reply stored with its request settled, a transcript with its note
    evidence: EvidenceSource = NoEvidence()
    check: ReplyCheck = NoCheck()
    max_steps: int = MAX_STEPS
    window: RecentWindow = RecentWindow()


@dataclass(frozen=True)
class TurnOutcome:
    """What the owner receives. A ``notice`` (an apology, "no model") is Nod speaking about
    itself, not conversation: it is delivered but never stored as something Nod said, so it
    cannot come back in later prompts or evidence as if it were part of the talk."""

    text: str
    steps: int = 0
    reads: tuple[ToolOutcome, ...] = ()
    choices: tuple[str, ...] = ()
    notice: bool = False

    @property
    def reply(self) -> Reply:
        return Reply(self.text, self.choices)


def model_failure_sentence(error: ModelError) -> str:
    if isinstance(error, ModelTimeout):
        return "The model took too long to answer. Please try again."
    if isinstance(error, ModelDeclined):
        return "The model declined to answer that. You could put it another way."
    if isinstance(error, ModelRefused):
        return "The model server refused the request; the operator should check Nod's model settings."
    return "I couldn't get an answer from the model just now. Please try again in a moment."


def _replayable(arguments: str) -> str:
    """The call's arguments as sent back in the history: ``{}`` unless they are a JSON object.

    Ollama ("invalid tool call arguments") and vLLM answer 400 to a history holding
    arguments that do not parse, so the rest of the turn would fail; the tool's result
    already tells the model what was wrong with them.
    """
    try:
        return arguments if isinstance(json.loads(arguments), dict) else "{}"
    except ValueError:
        return "{}"


def _assistant_calls(reply: ChatReply) -> ChatMessage:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text,  # a string even when empty: llama-cpp-python answers 500 to null
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _replayable(c.arguments)}}
            for c in reply.tool_calls
        ],
    }
    if reply.reasoning is not None:  # DeepSeek's thinking mode requires it back ("Missing `reasoning_content`")
        message[reply.reasoning.field] = reply.reasoning.text
    return message


def _final_text(reply: ChatReply, owner_id: int) -> str:
    """The answer's text without any of the prompt's framing it copied; one cut off at the length limit
    says so instead of passing for whole."""
    text = unframed(reply.text)
    if text != reply.text.strip():
        log.info("turn_answer_unframed owner=%s chars_removed=%s", owner_id, len(reply.text.strip()) - len(text))
    if not reply.cut_off:
        return text
    log.warning("turn_answer_cut owner=%s chars=%s", owner_id, len(reply.text))
    return text + CUT_NOTE if text else ""


async def _inputs(deps: TurnDeps, ctx: TurnContext, request: StoredMessage, attachments: Attachments) -> TurnInputs:
    recent = await deps.window.messages(deps.messages, ctx.thread_id, request)
    oldest = min((m.id for m in recent), default=request.id)
    related = await deps.conversation.related(ctx.thread_id, request.text, oldest, RELATED_COUNT)
    packet = await deps.evidence.packet(ctx, request)
    return TurnInputs(ctx.owner, deps.clock.now(), render_index(ctx.document), related, recent, request, packet,
                      attachments)


async def _loop(deps: TurnDeps, ctx: TurnContext, messages: list[ChatMessage]) -> tuple[ChatReply, int, list[ToolOutcome]]:
    """Model steps until an answer without tool calls; a cut-off step's calls are never run
    (their arguments may be cut too), so it ends the loop as a cut answer."""
    reads: list[ToolOutcome] = []
    for step in range(1, deps.max_steps + 1):
        reply = await deps.gateway.agent_step(ctx.owner.id, messages, TOOL_SPECS)
        if not reply.tool_calls or reply.cut_off:
            return reply, step, reads
        messages.append(_assistant_calls(reply))
        for call in reply.tool_calls:
            outcome = await deps.tools.run(ctx, call)
            reads.append(outcome)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content()})
    log.info("turn_step_cap owner=%s steps=%s", ctx.owner.id, deps.max_steps)
    messages.append({"role": "user", "content": OUT_OF_STEPS})  # one system message only, and it leads
    reply = await deps.gateway.agent_step(ctx.owner.id, messages, ())
    return reply, deps.max_steps + 1, reads


async def run_turn(deps: TurnDeps, ctx: TurnContext, request: StoredMessage,
                   attachments: Attachments = NONE) -> TurnOutcome:
    """Answer ``request`` (with the photos and documents read for it); the returned text is what the owner should receive."""
    if not deps.gateway.agent_configured:
        return TurnOutcome(NO_MODEL, notice=True)
    if ctx.origin is TurnOrigin.OWNER_MESSAGE:
        raised = await deps.spending.answer(ctx.owner, request.text)
        if raised is not None:
            return TurnOutcome(raised)
    capacity = ctx.state.capacity
    if capacity.exhausted:
        log.info("spending_checkin owner=%s spent=%.4f limit=%s", ctx.owner.id, capacity.spent_usd, capacity.limit_usd)
        return TurnOutcome(await deps.spending.ask(ctx.owner, capacity))
    messages = turn_messages(await _inputs(deps, ctx, request, attachments))
    try:
        reply, steps, reads = await _loop(deps, ctx, messages)
    except ModelError as exc:
        log.warning("turn_model_failed owner=%s error=%s", ctx.owner.id, type(exc).__name__)
        return TurnOutcome(CUT_EMPTY if isinstance(exc, AnswerCut) else model_failure_sentence(exc), notice=True)
    draft = _final_text(reply, ctx.owner.id)
    if not draft.strip():
        return TurnOutcome(CUT_EMPTY if reply.cut_off else EMPTY_ANSWER, steps, tuple(reads), notice=True)
    return await _checked(deps, ctx, request, Reply(draft, offered_choices(reads)), steps, tuple(reads))


async def _checked(
    deps: TurnDeps, ctx: TurnContext, request: StoredMessage, draft: Reply, steps: int, reads: tuple[ToolOutcome, ...]
) -> TurnOutcome:
    """The check reads a task card's full text form; a revision is delivered as plain text."""
    shown = draft.text_form()
    checked = await deps.check.check(ctx, request, shown, reads)
    if checked != shown:
        return TurnOutcome(checked, steps, reads)
    return TurnOutcome(draft.text, steps, reads, draft.choices)
