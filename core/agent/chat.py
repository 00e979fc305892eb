"""The chat-model port: what the core needs from any OpenAI-compatible model server.

The core speaks the Chat Completions message format (a list of role/content dicts, tool
calls with JSON arguments) because every server Nod supports — OpenAI, Ollama, vLLM,
llama.cpp — speaks it; what stays outside is the SDK, its errors and its retries. An
adapter maps its failures onto ``core.errors.ModelError`` and its subclasses, so a turn
never sees an SDK exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ChatMessage = Mapping[str, Any]  # "content" is a string, or (an owner's message with images) OpenAI's content parts


@dataclass(frozen=True)
class ToolSpec:
    """One function tool: its name, what it is for, and its JSON Schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text the model wrote; parsed by the tool runner, not trusted


@dataclass(frozen=True)
class JsonSchema:
    """Structured output: the answer must be a JSON object matching ``schema``.

    ``name`` is the purpose (``memory_learn``, ``reply_check``, …, DESIGN.md) so a
    server's logs and a scripted test server can tell the calls apart.
    """

    name: str
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Reasoning:
    """What a thinking model said it thought, under the field its server used.

    Some servers require it back on the assistant's tool-call message of later requests
    (DeepSeek: "Missing `reasoning_content` field"); it is sent back that way only, never
    stored and never shown to the owner.
    """

    field: str  # "reasoning_content" (DeepSeek, llama.cpp, vLLM) or "reasoning" (Ollama, vLLM)
    text: str


@dataclass(frozen=True)
class ChatReply:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""
    finish_reason: str | None = None  # "stop", "length" (cut off), "tool_calls", "content_filter", or a server's own
    reasoning: Reasoning | None = None
    cached_tokens: int = 0  # of tokens_in, read from the provider's prompt cache (priced lower)
    usage_reported: bool = True  # False: the server sent no usage; the tokens are estimated
    refusal: str | None = None  # the model declined (OpenAI's ``refusal``): not an answer
    images_dropped: bool = False  # the request's images were left out: the model does not take them

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = ()
    schema: JsonSchema | None = None
    temperature: float | None = None  # None: the server's default; memory calls ask for a low one
    max_tokens: int | None = None  # the answer's budget, sized for its purpose (core.agent.budgets)


