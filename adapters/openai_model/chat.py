"""``ChatModel`` over ``openai.AsyncOpenAI`` Chat Completions, portable across servers.

Only Chat Completions with function tools and ``response_format`` are used, which every
OpenAI-compatible server implements; what differs between OpenAI, Ollama, vLLM, llama.cpp and
llama-cpp-python (structured output, reasoning, refusals, budgets, images, temperature) is handled
here and learnt from a server's first refusal, once per model. Each difference, with the error
text that taught it: docs/turn.md ("The OpenAI adapter").
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import openai
from openai import AsyncOpenAI

from adapters.openai_model.transport import INVALID_REQUEST, BoundedTransport
from core.agent.budgets import REASONING_ALLOWANCE
from core.agent.chat import ChatMessage, ChatReply, ChatRequest, Reasoning, ToolCall
from core.errors import AnswerCut, ModelError, ModelRefused, ModelTimeout, ModelUnavailable, UnreadableAnswer
from core.secrets import find_secret

log = logging.getLogger("nod.openai")
JsonMode = Literal["json_schema", "json_object"]
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)
# what servers say when a model takes no images: OpenAI ("image_url is only supported by certain models"),
# vLLM ("… is not a multimodal model"), llama.cpp's server ("image input is not supported … mmproj"), Ollama
_IMAGE_WORDS = ("image", "vision", "multimodal", "multi-modal", "mmproj")
_SHORT = 300


def _tools(request: ChatRequest) -> list[dict[str, Any]]:
    """Function tools; their schemas are strict-ready, but ``strict`` is not sent on tools: OpenAI then
    forbids parallel calls, and the tools' own checks answer a malformed call anyway."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
            for t in request.tools]


def _has_images(messages: Sequence[ChatMessage]) -> bool:
    return any(isinstance(m.get("content"), list) and any(isinstance(p, dict) and p.get("type") == "image_url"
                                                           for p in m["content"]) for m in messages)


def _stringed(message: ChatMessage, images: bool = True) -> dict[str, Any]:
    """The message with string content: llama-cpp-python refuses ``null`` (an assistant's tool-call message).
    An owner's message with images keeps its content parts, or (``images`` False) becomes its text alone."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list) and out.get("role") == "user":
        if not images:
            out["content"] = "\n\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
        return out
    if not isinstance(out.get("content"), str):
        out["content"] = "" if out.get("content") is None else json.dumps(out["content"], ensure_ascii=False)
    return out


_QUOTED = re.compile(r"""(?<!\w)'[^']*'(?!\w)|"[^"]*"|`[^`]*`""")  # an apostrophe (model's) opens no quote
_NAME = re.compile(r"^['\"`][A-Za-z_][\w.\-/]{0,38}['\"`]$")
_INPUT_VALUE = re.compile(r"input_value=.*?(?=, input_type=|\]|$)")
_WORD = re.compile(r"\w+")


_VALIDATION_ITEM = re.compile(r"""'loc': \(([^)]*)\), 'msg': (?:"([^"]*)"|'([^']*)')""")


def _validation_summary(text: str) -> str | None:
    """FastAPI's and pydantic's list of errors (llama-cpp-python's 500, vLLM's 400) as "where: what" sentences,
    e.g. "body.response_format.type: Input should be 'text' or 'json_object'"; None when it is not one. Pydantic
    reports every branch of a union; a branch whose ``role`` did not match is not the one meant, so it is left out."""
    items = []
    for loc, double, single in _VALIDATION_ITEM.findall(text):
        parts = tuple(part.strip().strip("'\"") for part in loc.split(",") if part.strip())
        items.append((parts, double or single))
    if not items:
        return None
    other_branches = {parts[:-1] for parts, said in items if parts[-1] == "role" and said.startswith("Input should be")}
    meant = [(p, said) for p, said in items if not any(p[:len(b)] == b for b in other_branches)] or items
    head = text.split(":", 1)[0] if "validation error" in text.split(":", 1)[0] else f"{len(items)} validation error(s)"
    return f"{head}: " + "; ".join(f"{'.'.join(p)}: {said}" for p, said in meant)


def _raw_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    if message is None and isinstance(body, dict) and isinstance(body.get("detail"), list):  # FastAPI's own 422
        message = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', ()))}: {d.get('msg', '')}"
                            for d in body["detail"] if isinstance(d, dict))
    text = " ".join(str(message or exc.message or "").split())
    return _validation_summary(text) or text


def _said_words(messages: Sequence[ChatMessage]) -> set[tuple[str, ...]]:
    """Every run of three words of the conversation's messages (not Nod's system prompt)."""
    runs: set[tuple[str, ...]] = set()
    for message in messages:
        if message.get("role") == "system" or not isinstance(message.get("content"), str):
            continue
        found = [w.lower() for w in _WORD.findall(message["content"])]
        runs.update(tuple(found[i:i + 3]) for i in range(len(found) - 2))
    return runs


def _without_said(text: str, said: set[tuple[str, ...]]) -> str:
    """``text`` with every run of three or more words that the conversation holds replaced by "…"."""
    spans = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
    hidden = [False] * len(spans)
    for i in range(len(spans) - 2):
        if tuple(w for _, _, w in spans[i:i + 3]) in said:
            hidden[i:i + 3] = [True] * 3
    out, last, n = [], 0, 0
    while n < len(spans):
        if not hidden[n]:
            n += 1
            continue
        start = spans[n][0]
        while n < len(spans) and hidden[n]:
            n += 1
        out += [text[last:start], "…"]
        last = spans[n - 1][1]
    return "".join(out) + text[last:]


def _unquoted(text: str, messages: Sequence[ChatMessage] = ()) -> str:
    """The server's words without what they quote of the request: servers repeat it in their
    errors (vLLM's 400s the messages; pydantic's ``input_value=…``), and the request holds the
    owner's words. A quoted name (`reasoning_content`, 'temperature') stays; any other quoted
    text, any input value and any run of three words of the conversation becomes "…"; the
    brackets of the server's own structure ("[type=literal_error]") stay."""
    text = _INPUT_VALUE.sub("input_value=…", text)
    text = _QUOTED.sub(lambda m: m.group() if _NAME.match(m.group()) else "…", text)
    return _without_said(text, _said_words(messages)) if messages else text


def server_message(exc: openai.APIStatusError, messages: Sequence[ChatMessage] = ()) -> str:
    """The server's own words about an error, a few hundred characters, without what they quote of
    the request; nothing when they look like they hold a secret."""
    text = _unquoted(_raw_message(exc), messages)
    if len(text) > _SHORT:
        text = text[:_SHORT - 1].rstrip() + "…"
    return "" if find_secret(text) else text.strip()


def _refused_as_invalid(exc: openai.APIStatusError) -> bool:
    return exc.response is not None and exc.response.headers.get(INVALID_REQUEST) == "1"


def model_error(exc: openai.OpenAIError) -> ModelError:
    """The SDK's failure as the core's: unavailable (worth trying later), refused or unreadable."""
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout("The model server did not answer in time.")
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailable("The model server could not be reached.")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if _refused_as_invalid(exc):
            return ModelRefused(f"The model server refused the request (HTTP {code}).")
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


IMAGE_TOKENS = 1_000  # about what a 2,048-pixel image costs at OpenAI's high detail (765-1,105)


def _estimate(request: ChatRequest, text: str) -> tuple[int, int]:
    """Tokens when the server reported none: about four characters a token, an image as IMAGE_TOKENS."""
    sent, images = 0, 0
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, list):
            sent += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, dict))
            images += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
        else:
            sent += len(str(content or ""))
    return sent // 4 + 1 + images * IMAGE_TOKENS, len(text) // 4 + 1


def _refusal_text(exc: openai.APIStatusError) -> str:
    """What a refusal says, lowercased, for learning what the server does not take."""
    return _raw_message(exc).lower()


class OpenAIChatModel:
    """One server's client, and what it has learnt about each model on it (a refused parameter is not sent again)."""

    def __init__(self, client: AsyncOpenAI, json_mode: JsonMode = "json_schema", strict: bool = True,
                 vision: str = "auto") -> None:
        self._client = client
        self._json_mode = json_mode
        self._strict = strict
        self._vision = vision  # NOD_AGENT_VISION: on, off, or auto (a refusal of an image is learnt)
        self._no_vision: set[str] = set()  # models whose server refused an image
        self._no_temperature: set[str] = set()  # models that refused one
        self._json_object: set[str] = set()  # models whose server refused json_schema
        self._completion_tokens: set[str] = set()  # models that want max_completion_tokens

    def json_mode(self, model: str) -> JsonMode:
        return "json_object" if model in self._json_object else self._json_mode

    def sees_images(self, model: str) -> bool:
        return self._vision != "off" and model not in self._no_vision

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        images = self.sees_images(request.model)
        messages = [_stringed(m, images) for m in request.messages]
        arguments: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            arguments["tools"] = _tools(request)
            arguments["tool_choice"] = "auto"  # llama-cpp-python leaves the tools out of the prompt without it
        if request.temperature is not None and request.model not in self._no_temperature:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            if request.model in self._completion_tokens:
                arguments["max_completion_tokens"] = request.max_tokens + REASONING_ALLOWANCE
            else:
                arguments["max_tokens"] = request.max_tokens
        if request.schema is None:
            return arguments
        if self.json_mode(request.model) == "json_schema":
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
        # llama-cpp-python and llama-server make a grammar of ``schema``; other servers ignore the key
        arguments["response_format"] = {"type": "json_object", "schema": dict(request.schema.schema)}
        return arguments

    async def complete(self, request: ChatRequest) -> ChatReply:
        try:
            response = await self._create(request)
        except openai.OpenAIError as exc:
            self._log_failure(request, exc)
            raise model_error(exc) from exc
        if isinstance(response, str):  # the transport cut the body (x-nod-body-cut), so the SDK left it unparsed
            log.warning("model_answer_too_large model=%s bytes=%s", request.model, len(response.encode()))
            raise AnswerCut("The model server's answer was larger than Nod reads; it was cut off.")
        if not getattr(response, "choices", None):
            raise UnreadableAnswer("The model server answered with no choices.")
        reply = self._reply(request, response, response.choices[0])
        if not self.sees_images(request.model) and _has_images(request.messages):
            return replace(reply, images_dropped=True)  # answered from the words alone: the turn says so
        return reply

    async def _create(self, request: ChatRequest) -> Any:
        """The call, asked again (at most once per lesson) after a refusal that taught what this model does not take."""
        for _ in range(4):
            arguments = self._arguments(request)
            try:
                return await self._client.chat.completions.create(**arguments)
            except openai.APIStatusError as exc:
                if not self._learnt(request.model, arguments, exc):
                    raise
        raise ModelRefused("The model server kept refusing the request.")

    def _learnt(self, model: str, arguments: dict[str, Any], exc: openai.APIStatusError) -> bool:
        """Whether the refusal named something this model does not take, now remembered."""
        if not (isinstance(exc, openai.BadRequestError) or exc.status_code == 422 or _refused_as_invalid(exc)):
            return False
        said = _refusal_text(exc)
        if self._vision == "auto" and _has_images(arguments["messages"]) and any(w in said for w in _IMAGE_WORDS):
            log.info("model_rejects_images model=%s; sending the words alone from now on", model)
            self._no_vision.add(model)
            return True
        if "temperature" in arguments and "temperature" in said:
            log.info("model_rejects_temperature model=%s; asking without it from now on", model)
            self._no_temperature.add(model)
            return True
        if "max_tokens" in arguments and "max_completion_tokens" in said:
            log.info("model_wants_max_completion_tokens model=%s; sending that from now on", model)
            self._completion_tokens.add(model)
            return True
        response_format = arguments.get("response_format") or {}
        if response_format.get("type") == "json_schema" and any(w in said for w in ("response_format", "json_schema")):
            log.info("model_rejects_json_schema model=%s; asking json_object with the schema from now on", model)
            self._json_object.add(model)
            return True
        return False

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
                        server_message(exc, request.messages))
        else:
            log.warning("model_call_failed model=%s error=%s", request.model, type(exc).__name__)

    async def close(self) -> None:
        await self._client.close()


def build_client(base_url: str | None, api_key: str | None, timeout_s: float) -> AsyncOpenAI:
    """The SDK client over the bounded transport; a local server without a key gets a placeholder the SDK insists on."""
    http = openai.DefaultAsyncHttpxClient(transport=BoundedTransport(), timeout=timeout_s)
    return AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=2,
                       http_client=http)
