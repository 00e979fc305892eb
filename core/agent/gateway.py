"""The model gateway: every model call goes through here, timed, bounded and recorded.

Two roles, configured apart: the agent (runs each turn, with tools) and the memory model
(structured JSON answers named by purpose); beside them, the transcription model that
turns a voice note into text (purpose ``transcribe``, priced per minute of audio). Each call runs as its own task and the
gateway waits on it with a deadline, so a deadline or a ``/stop`` ends the wait at once
even when the provider ignores cancellation; the abandoned call is cancelled and its
late result dropped. Every call — answered, failed, timed out or stopped — becomes one
usage row, so the spending check sees what was really spent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from core.agent.budgets import AGENT_MAX_TOKENS, scaled
from core.agent.chat import ChatMessage, ChatReply, ChatRequest, JsonSchema, ToolSpec
from core.agent.slots import waiting_elsewhere
from core.agent.usage import PriceTable, UsageRecord
from core.clock import Clock
from core.errors import (
    AnswerCut,
    ConfigError,
    ModelDeclined,
    ModelError,
    ModelRefused,
    ModelTimeout,
    ModelUnavailable,
    UnreadableAnswer,
)
from core.ports import ChatModel, Transcriber, UsageLedger
from core.structured import Answer, json_object_in, parse_answer, strict_schema
from core.voice import Audio, Transcript, audio_seconds

log = logging.getLogger("nod.gateway")
T = TypeVar("T")
MEMORY_TEMPERATURE = 0.2  # notes and checks want the likeliest answer; Ollama's /v1 would use 1.0
A = TypeVar("A", bound=Answer)
R = TypeVar("R")
AGENT = "agent"
TRANSCRIBE = "transcribe"


@dataclass(frozen=True)
class ModelRoles:
    agent_model: str | None
    memory_model: str | None
    memory_deadline_s: float = 20.0
    agent_deadline_s: float = 120.0
    transcribe_model: str | None = None
    transcribe_deadline_s: float = 120.0
    max_tokens_scale: float = 1.0  # NOD_MAX_TOKENS_SCALE: every purpose's budget times this
    agent_vision: str = "auto"  # NOD_AGENT_VISION: on, off, or auto (learnt from the server's first refusal)


def _outcome(error: BaseException) -> str:
    if isinstance(error, AnswerCut):
        return "cut"
    if isinstance(error, ModelTimeout):
        return "timeout"
    if isinstance(error, ModelUnavailable):
        return "unavailable"
    if isinstance(error, ModelRefused):
        return "refused"
    if isinstance(error, UnreadableAnswer):
        return "unreadable"
    return "error"


def _drop_late_result(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log "never retrieved"


def _as_is(reply: ChatReply) -> ChatReply:
    return reply


def _read(answer: type[A], reply: ChatReply, owner_id: int) -> A:
    if reply.cut_off:  # the same request would stop at the same limit: not asked again
        log.warning("model_answer_cut owner=%s purpose=%s", owner_id, answer.purpose)
        raise AnswerCut("The memory model's answer was cut off before it ended.")
    try:
        return parse_answer(answer, json_object_in(reply.text))
    except UnreadableAnswer:
        log.warning("model_answer_unreadable owner=%s purpose=%s chars=%s", owner_id, answer.purpose, len(reply.text))
        raise


class Gateway:
    def __init__(
        self,
        roles: ModelRoles,
        agent: ChatModel | None,
        memory: ChatModel | None,
        usage: UsageLedger,
        prices: PriceTable,
        clock: Clock,
        transcriber: Transcriber | None = None,
    ) -> None:
        self.roles = roles
        self._agent = agent if roles.agent_model else None
        self._memory = memory if roles.memory_model else None
        self._transcriber = transcriber if roles.transcribe_model else None
        self._usage = usage
        self._prices = prices
        self._clock = clock
        self._blind = False  # the agent's server refused an image: no more are fetched for it

    async def close(self) -> None:
        """Close the model clients: an HTTP pool left to the garbage collector fails loudly later."""
        for model in {id(m): m for m in (self._agent, self._memory, self._transcriber) if m is not None}.values():
            await model.close()

    @property
    def agent_configured(self) -> bool:
        return self._agent is not None

    @property
    def memory_configured(self) -> bool:
        return self._memory is not None

    @property
    def sees_images(self) -> bool:
        """Whether the agent model is shown images: not when NOD_AGENT_VISION is off or its server refused one."""
        return self._agent is not None and self.roles.agent_vision != "off" and not self._blind

    @property
    def transcribe_configured(self) -> bool:
        return self._transcriber is not None

    async def agent_step(self, owner_id: int, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> ChatReply:
        if self._agent is None:
            raise ConfigError("No agent model is configured (NOD_AGENT_MODEL).")
        request = ChatRequest(str(self.roles.agent_model), messages, tools, max_tokens=scaled(AGENT_MAX_TOKENS, self.roles.max_tokens_scale))
        reply = await self._call(owner_id, AGENT, self._agent, request, self.roles.agent_deadline_s, _as_is)
        if reply.images_dropped and not self._blind:
            log.info("agent_model_blind model=%s; no images are fetched for it from now on", request.model)
            self._blind = True
        return reply

    async def ask(self, owner_id: int, answer: type[A], messages: Sequence[ChatMessage]) -> A:
        """One structured memory-model call; the answer as ``answer`` (its schema is what was asked)."""
        if self._memory is None:
            raise ConfigError("No memory model is configured (NOD_MEMORY_MODEL).")
        purpose = answer.purpose
        request = ChatRequest(str(self.roles.memory_model), messages, schema=JsonSchema(purpose, strict_schema(answer)),
                              temperature=MEMORY_TEMPERATURE, max_tokens=scaled(answer.max_tokens, self.roles.max_tokens_scale))
        return await self._call(owner_id, purpose, self._memory, request, self.roles.memory_deadline_s,
                                lambda reply: _read(answer, reply, owner_id))

    async def transcribe(self, owner_id: int, audio: Audio) -> Transcript:
        """The voice note's words; one ``transcribe`` usage row, priced by the audio's minutes."""
        if self._transcriber is None:
            raise ConfigError("No transcription model is configured (NOD_TRANSCRIBE_MODEL).")
        model = str(self.roles.transcribe_model)
        began = time.monotonic()

        async def failed(outcome: str) -> None:
            await self._record_audio(owner_id, model, audio, None, began, outcome)

        transcript = await self._awaited(self._transcriber.transcribe(model, audio), self.roles.transcribe_deadline_s,
                                         TRANSCRIBE, failed)
        await self._record_audio(owner_id, model, audio, transcript, began, "ok")
        return transcript

    async def _call(self, owner_id: int, purpose: str, model: ChatModel, request: ChatRequest, deadline_s: float,
                    read: Callable[[ChatReply], T]) -> T:
        """The call, bounded by ``deadline_s``, its answer read by ``read``; one usage row whatever happens."""
        began = time.monotonic()

        async def failed(outcome: str) -> None:
            await self._record(owner_id, purpose, request.model, None, began, outcome)

        reply = await self._awaited(model.complete(request), deadline_s, purpose, failed)
        try:
            if reply.refusal:
                log.warning("model_declined owner=%s purpose=%s chars=%s", owner_id, purpose, len(reply.refusal))
                raise ModelDeclined("The model declined to answer this request.")
            value = read(reply)
        except ModelError as exc:  # answered, but not with what was asked: counted, and said so
            await self._record(owner_id, purpose, request.model, reply, began, _outcome(exc))
            raise
        await self._record(owner_id, purpose, request.model, reply, began, "cut" if reply.cut_off else "ok")
        return value

    async def _awaited(self, work: Awaitable[R], deadline_s: float, purpose: str,
                       failed: Callable[[str], Awaitable[None]]) -> R:
        """``work`` run as its own task and waited for up to ``deadline_s``; a failure is recorded by ``failed``."""
        task = asyncio.ensure_future(work)
        try:
            async with waiting_elsewhere():  # another turn may work while this one waits
                done, _ = await asyncio.wait({task}, timeout=deadline_s)
        except asyncio.CancelledError:  # /stop or a newer message: stop waiting now
            task.cancel()
            task.add_done_callback(_drop_late_result)
            await failed("stopped")
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_drop_late_result)
            await failed("timeout")
            raise ModelTimeout(f"The model did not answer within {deadline_s:g} seconds.")
        try:
            return task.result()
        except ModelError as exc:
            await failed(_outcome(exc))
            raise
        except Exception as exc:  # an adapter bug must not escape as a crash
            log.exception("model_adapter_failed purpose=%s", purpose)
            await failed("error")
            raise ModelUnavailable("The model call failed unexpectedly.") from exc

    async def _record_audio(self, owner_id: int, model: str, audio: Audio, transcript: Transcript | None,
                            began: float, outcome: str) -> None:
        seconds, estimated = audio_seconds(audio, transcript) if transcript is not None else (0.0, False)
        await self._keep(UsageRecord(
            owner_id=owner_id, purpose=TRANSCRIBE, model=(transcript.model if transcript and transcript.model else model),
            tokens_in=transcript.tokens_in if transcript else 0, tokens_out=transcript.tokens_out if transcript else 0,
            cost_usd=self._prices.audio_cost(model, seconds), estimated=estimated,
            duration_ms=int((time.monotonic() - began) * 1000), outcome=outcome, created_at=self._clock.now()))

    async def _record(
        self, owner_id: int, purpose: str, model: str, reply: ChatReply | None, began: float, outcome: str
    ) -> None:
        tokens_in = reply.tokens_in if reply else 0
        tokens_out = reply.tokens_out if reply else 0
        cached = reply.cached_tokens if reply else 0
        row = UsageRecord(
            owner_id=owner_id,
            purpose=purpose,
            model=(reply.model if reply and reply.model else model),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=self._prices.cost(model, tokens_in, tokens_out, cached),
            cached_tokens=cached,
            estimated=reply is not None and not reply.usage_reported,
            duration_ms=int((time.monotonic() - began) * 1000),
            outcome=outcome,
            created_at=self._clock.now(),
        )
        await self._keep(row)

    async def _keep(self, row: UsageRecord) -> None:
        try:
            await asyncio.shield(self._usage.record(row))
        except Exception:  # noqa: BLE001 - losing a usage row must not lose the answer
            log.exception("usage_record_failed owner=%s purpose=%s", row.owner_id, row.purpose)
