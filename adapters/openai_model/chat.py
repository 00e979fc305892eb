"""``ChatModel`` over ``openai.AsyncOpenAI`` Chat Completions, portable across servers.

Only Chat Completions with function tools and ``response_format`` are used: every
OpenAI-compatible server implements them. A server without json_schema support gets
``json_object`` with the schema written into the prompt (``NOD_JSON_MODE=json_object``).
The SDK's own retries (connection errors, 408, 409, 429 and 5xx, with backoff and
``Retry-After``) are kept: a completion changes nothing on the server, so repeating it is
safe. Everything the SDK raises becomes a ``core.errors.ModelError``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

import openai
from openai import AsyncOpenAI

from core.agent.model import ChatReply, ChatRequest, ToolCall
from core.errors import ModelError, ModelRefused, ModelTimeout, ModelUnavailable, UnreadableAnswer

log = logging.getLogger("nod.openai")
JsonMode = Literal["json_schema", "json_object"]


def _tools(request: ChatRequest) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
        for t in request.tools
    ]


def _error(exc: openai.OpenAIError) -> ModelError:
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout("The model server did not answer in time.")
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailable("The model server could not be reached.")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code in (408, 409, 429) or code >= 500:
            return ModelUnavailable(f"The model server is busy or failing (HTTP {code}).")
        return ModelRefused(f"The model server refused the request (HTTP {code}).")
    if isinstance(exc, openai.APIResponseValidationError):
        return UnreadableAnswer("The model server's answer could not be read.")
    return ModelUnavailable(f"The model call failed ({type(exc).__name__}).")


class OpenAIChatModel:
    def __init__(self, client: AsyncOpenAI, json_mode: JsonMode = "json_schema") -> None:
        self._client = client
        self._json_mode = json_mode

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        messages = [dict(m) for m in request.messages]
        arguments: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            arguments["tools"] = _tools(request)
        if request.schema is not None:
            if self._json_mode == "json_schema":
                arguments["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema.name, "schema": dict(request.schema.schema)},
                }
            else:
                hint = (
                    f"Answer with one JSON object named {request.schema.name} matching this JSON Schema:\n"
                    + json.dumps(request.schema.schema)
                )
                arguments["messages"] = [{"role": "system", "content": hint}, *messages]
                arguments["response_format"] = {"type": "json_object"}
        return arguments

    async def complete(self, request: ChatRequest) -> ChatReply:
        try:
            response = await self._client.chat.completions.create(**self._arguments(request))
        except openai.OpenAIError as exc:
            log.warning("model_call_failed model=%s error=%s", request.model, type(exc).__name__)
            raise _error(exc) from exc
        if not response.choices:
            raise UnreadableAnswer("The model server answered with no choices.")
        message = response.choices[0].message
        calls = tuple(
            ToolCall(c.id, c.function.name, c.function.arguments or "{}")
            for c in (message.tool_calls or [])
            if c.type == "function"
        )
        usage = response.usage
        return ChatReply(
            text=message.content or "",
            tool_calls=calls,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            model=response.model or request.model,
        )


    async def close(self) -> None:
        await self._client.close()


def build_client(base_url: str | None, api_key: str | None, timeout_s: float) -> AsyncOpenAI:
    """The SDK client; a local server without a key gets a placeholder the SDK insists on."""
    return AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=2)
