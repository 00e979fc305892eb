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
from typing import Any, Protocol

Message = Mapping[str, Any]


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
class ChatReply:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    schema: JsonSchema | None = None


class ChatModel(Protocol):
    async def complete(self, request: ChatRequest) -> ChatReply:
        """One model call; raises ModelError (or a subclass) when there is no usable reply."""
        ...

    async def close(self) -> None:
        """Release the connections (the process is shutting down)."""
        ...
