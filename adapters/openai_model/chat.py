"""``ChatModel`` over ``openai.AsyncOpenAI`` Chat Completions, portable across servers.

Only Chat Completions with function tools and ``response_format`` are used: every
OpenAI-compatible server implements them (OpenAI, Ollama, vLLM, llama.cpp). What differs
between them is handled here, from their own sources and issue trackers:

- Structured output is ``json_schema`` with ``strict: true`` (``NOD_JSON_STRICT``; Ollama
  and llama.cpp ignore it). A server without json_schema gets ``json_object``, the schema
  added to the one leading system message — a second system message breaks Qwen 3.5 and
  Mistral templates ("System message must be at the beginning.").
- A thinking model's reasoning (``reasoning_content`` or ``reasoning``, read from the
  SDK's extra fields) rides along on the reply so the turn can send it back; a
  ``<think>…</think>`` block a server left in the content is cut off.
- ``finish_reason`` and ``refusal`` are read: a refusal rides on the reply (the gateway
  records it "refused" and raises ModelDeclined, never retried); a cut-off answer is marked so nobody takes it for a whole one.
- A missing ``usage`` is estimated (about four characters a token) and marked, so the
  spending limit still sees it; cached prompt tokens are counted for their lower price.
- A model that refuses ``temperature`` (OpenAI's reasoning models: "Only the default (1)
  value is supported") is asked again without it, and remembered.

The SDK's own retries (connection errors, 408, 409, 429 and 5xx, with backoff and
``Retry-After``) are kept: a completion changes nothing on the server. Everything the SDK
raises becomes a ``core.errors.ModelError``; its status and a short form of the server's
own message are logged — that sentence is what an operator needs ("auto tool choice
requires --enable-auto-tool-choice") — unless it looks like it quotes a secret.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Literal

import openai
from openai import AsyncOpenAI

from core.agent.model import ChatReply, ChatRequest, Reasoning, ToolCall
from core.errors import ModelError, ModelRefused, ModelTimeout, ModelUnavailable, UnreadableAnswer
from core.secrets import find_secret

log = logging.getLogger("nod.openai")
JsonMode = Literal["json_schema", "json_object"]
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)
_SHORT = 200


def _tools(request: ChatRequest) -> list[dict[str, Any]]:
    """Function tools; their schemas are strict-ready, but ``strict`` is not sent on tools: OpenAI then
    forbids parallel calls, and the tools' own checks answer a malformed call anyway."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
            for t in request.tools]


_QUOTED = re.compile(r"""'[^']*'|"[^"]*"|`[^`]*`""")


def _raw_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    return " ".join(str(message or exc.message or "").split())


def _unquoted(text: str) -> str:
    """Quoted words kept when they are one name (`reasoning_content`, 'temperature'), anything
    longer dropped, and nothing from the first bracket on: servers quote the request in their
    errors (vLLM's 400s repeat the messages), and the request holds the owner's words."""
    head = re.split(r"[{\[]", text, maxsplit=1)[0]
    return _QUOTED.sub(lambda m: m.group() if len(m.group()) <= 40 and " " not in m.group() else "…", head)


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words about an error, short and without what they quote of the request;
    nothing when they look like they hold a secret."""
    text = _unquoted(_raw_message(exc))[:_SHORT].strip()
    return "" if find_secret(text) else text


def model_error(exc: openai.OpenAIError) -> ModelError:
    """The SDK's failure as the core's: unavailable (worth trying later), refused or unreadable."""
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


def _reasoning(message: Any) -> Reasoning | None:
    extra = getattr(message, "model_extra", None) or {}
    for field in ("reasoning_content", "reasoning"):
        value = extra.get(field)
        if isinstance(value, str) and value:
            return Reasoning(field, value)
    return None


def _estimate(request: ChatRequest, text: str) -> tuple[int, int]:
    """Tokens when the server reported none: about four characters a token."""
    sent = sum(len(str(m.get("content") or "")) for m in request.messages)
    return sent // 4 + 1, len(text) // 4 + 1


class OpenAIChatModel:
    def __init__(self, client: AsyncOpenAI, json_mode: JsonMode = "json_schema", strict: bool = True) -> None:
        self._client = client
        self._json_mode = json_mode
        self._strict = strict
        self._no_temperature: set[str] = set()  # models that refused one

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        messages = [dict(m) for m in request.messages]
        arguments: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            arguments["tools"] = _tools(request)
        if request.temperature is not None and request.model not in self._no_temperature:
            arguments["temperature"] = request.temperature
        if request.schema is None:
            return arguments
        if self._json_mode == "json_schema":
            schema: dict[str, Any] = {"name": request.schema.name, "schema": dict(request.schema.schema)}
            if self._strict:
                schema["strict"] = True
            arguments["response_format"] = {"type": "json_schema", "json_schema": schema}
            return arguments
        hint = (f"Answer with one JSON object named {request.schema.name} matching this JSON Schema:\n"
                + json.dumps(request.schema.schema))
        if messages and messages[0].get("role") == "system":  # one leading system message, never two
            messages[0] = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{hint}"}
        else:
            messages.insert(0, {"role": "system", "content": hint})
        arguments["response_format"] = {"type": "json_object"}
        return arguments

    async def complete(self, request: ChatRequest) -> ChatReply:
        arguments = self._arguments(request)
        try:
            response = await self._create(request, arguments)
        except openai.OpenAIError as exc:
            self._log_failure(request, exc)
            raise model_error(exc) from exc
        if not response.choices:
            raise UnreadableAnswer("The model server answered with no choices.")
        return self._reply(request, response, response.choices[0])

    async def _create(self, request: ChatRequest, arguments: dict[str, Any]) -> Any:
        try:
            return await self._client.chat.completions.create(**arguments)
        except openai.BadRequestError as exc:
            if "temperature" in arguments and "temperature" in _raw_message(exc).lower():
                log.info("model_rejects_temperature model=%s; asking without it from now on", request.model)
                self._no_temperature.add(request.model)
                return await self._client.chat.completions.create(**{k: v for k, v in arguments.items() if k != "temperature"})
            raise

    def _reply(self, request: ChatRequest, response: Any, choice: Any) -> ChatReply:
        message = choice.message
        calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments or "{}")
                      for c in (message.tool_calls or []) if c.type == "function")
        text = _THINK.sub("", message.content or "")  # a server without a reasoning parser leaves it in
        usage = response.usage
        if usage is None:
            tokens_in, tokens_out = _estimate(request, text)
            cached = 0
        else:
            tokens_in, tokens_out = usage.prompt_tokens, usage.completion_tokens
            details = getattr(usage, "prompt_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", 0) or 0)
        if choice.finish_reason not in (None, "stop", "tool_calls"):
            log.info("model_finished model=%s finish_reason=%s", request.model, choice.finish_reason)
        return ChatReply(text=text, tool_calls=calls, tokens_in=tokens_in, tokens_out=tokens_out,
                         model=response.model or request.model, finish_reason=choice.finish_reason,
                         reasoning=_reasoning(message), cached_tokens=cached, usage_reported=usage is not None,
                         refusal=getattr(message, "refusal", None) or None)

    def _log_failure(self, request: ChatRequest, exc: openai.OpenAIError) -> None:
        if isinstance(exc, openai.APIStatusError):
            log.warning("model_call_failed model=%s status=%s message=%r", request.model, exc.status_code,
                        server_message(exc))
        else:
            log.warning("model_call_failed model=%s error=%s", request.model, type(exc).__name__)

    async def close(self) -> None:
        await self._client.close()


def build_client(base_url: str | None, api_key: str | None, timeout_s: float) -> AsyncOpenAI:
    """The SDK client; a local server without a key gets a placeholder the SDK insists on."""
    return AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=2)
