"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1.

Tests drive it through the real ``openai.AsyncOpenAI`` client. Answers are queued per
model name and per purpose — the json_schema name of a structured call (also found in a
json_object call's prompt), or ``"chat"`` for a plain or tool-calling turn — the way
simonw/llm's MockModel is enqueued. Every request body is kept for assertions. An empty
queue answers with a fixed text so a test that forgot to script a call sees it plainly.

By default it also enforces what real servers enforce, with their own words:

- one system message, and only first (Qwen 3.5 and Mistral chat templates on vLLM and
  llama.cpp: "System message must be at the beginning.");
- tool-call arguments in the history are JSON objects (Ollama: "invalid tool call
  arguments"; vLLM 0.24/0.25 answers 400 as well);
- every tool call in the history has a tool message answering it, with string content.

``POST /v1/audio/transcriptions`` (multipart, as OpenAI and local Whisper servers take it)
answers from a queue per model too (``enqueue_transcript``); each upload is kept, with
its bytes, as ``transcriptions`` (also ``calls("transcribe")``).

``rejects_images`` plays a model without vision (OpenAI's 400 "Invalid content type. image_url is
only supported by certain models."). ``reasoning_required`` plays DeepSeek's thinking mode ("Missing `reasoning_content`
field" when an assistant tool-call message comes back without it), and
``rejects_temperature`` an OpenAI reasoning model; ``wants_completion_tokens`` one that
refuses ``max_tokens`` ("Use 'max_completion_tokens' instead").

``llama_cpp_python`` plays llama-cpp-python's server (``python -m llama_cpp.server``), with its
own words: a request its pydantic model refuses — ``response_format`` of type json_schema
(it takes ``text`` or ``json_object`` with an optional ``schema``), a message whose content
is not a string — is an HTTP 500 whose message is FastAPI's list of validation errors; and
tools sent without ``tool_choice`` are left out of the prompt (the answer is plain text).

An answer can also misbehave: ``runaway`` writes until ``max_tokens`` (7,803 tokens when none
is sent, as a small model did inside one JSON string), ``endless`` streams a body that never
ends (until the client hangs up, or 256 MiB).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

UNSCRIPTED = "(no scripted answer)"


@dataclass(frozen=True)
class Answer:
    content: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, JSON arguments text)
    delay_s: float = 0.0
    status: int = 200
    raw_body: str | None = None  # sent as is: a broken server
    tokens: tuple[int, int] = (100, 20)
    ignore_cancel: bool = False  # keep "working" after the client went away
    finish_reason: str | None = None  # None: "tool_calls" or "stop" as usual
    reasoning: tuple[str, str] | None = None  # (field, text): "reasoning_content" or "reasoning"
    refusal: str | None = None
    usage: bool = True  # False: the server sends no usage at all
    cached: int | None = None  # prompt_tokens_details.cached_tokens
    error_message: str = "scripted failure"
    hold: asyncio.Event | None = None  # answered only once the test sets it
    runaway: bool = False  # tokens of junk until max_tokens (or 7,803 tokens without it)
    endless: bool = False  # a body that never ends: a hostile or broken server


@dataclass(frozen=True)
class Heard:
    """A scripted transcription: its text, and what OpenAI's ``usage`` would say (None: no usage)."""

    text: str
    seconds: float | None = None
    delay_s: float = 0.0
    status: int = 200
    raw_body: str | None = None  # sent as is, as text/html: a proxy's page instead of the server


def text(content: str, **kw: Any) -> Answer:
    return Answer(content=content, **kw)


def tool(name: str, arguments: dict[str, Any] | str, **kw: Any) -> Answer:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Answer(tool_calls=((name, args),), **kw)


def structured(value: dict[str, Any], **kw: Any) -> Answer:
    return Answer(content=json.dumps(value), **kw)


@dataclass
class FakeModelServer:
    queues: dict[tuple[str, str], deque[Answer]] = field(default_factory=lambda: defaultdict(deque))
    requests: list[dict[str, Any]] = field(default_factory=list)
    runner: web.AppRunner | None = None
    port: int = 0
    sleeping: set[asyncio.Future[None]] = field(default_factory=set)
    system_first: bool = True
    strict_history: bool = True
    reasoning_required: bool = False
    rejects_temperature: bool = False
    wants_completion_tokens: bool = False
    llama_cpp_python: bool = False
    rejects_images: bool = False  # a model without vision, as OpenAI answers one sent an image part
    refused: list[str] = field(default_factory=list)  # the rule each refused request broke
    transcriptions: list[dict[str, Any]] = field(default_factory=list)
    heard: dict[str, deque[Heard]] = field(default_factory=lambda: defaultdict(deque))
    api_key: str | None = None  # set: GET /v1/models wants it as the bearer token, as OpenAI does
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, model: str, *answers: Answer, purpose: str = "chat") -> None:
        self.queues[(model, purpose)].extend(answers)

    def enqueue_transcript(self, model: str, *answers: Heard) -> None:
        self.heard[model].extend(answers)

    def calls(self, purpose: str = "chat") -> list[dict[str, Any]]:
        if purpose == "transcribe":
            return list(self.transcriptions)
        return [r for r in self.requests if purpose_of(r) == purpose]

    async def wait_for_calls(self, count: int, purpose: str = "chat", timeout: float = 15.0) -> list[dict[str, Any]]:
        """Until ``count`` requests of ``purpose`` arrived (woken by each arrival), or TimeoutError."""
        async def enough() -> None:
            while len(self.calls(purpose)) < count:
                self._arrived.clear()
                await self._arrived.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.calls(purpose)

    async def start(self) -> FakeModelServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_get("/v1/models", self._models)  # nod doctor's cheap authenticated GET
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def _models(self, request: web.Request) -> web.Response:
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
                                     status=401)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in sorted(
            {model for model, _ in self.queues})]})

    async def stop(self) -> None:
        for pending in self.sleeping:  # an ignore_cancel answer must not hold the test up
            pending.cancel()
        if self.runner is not None:
            await self.runner.cleanup()

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self._arrived.set()
        broken = self._broken_rule(body)
        if broken is not None:
            self.refused.append(broken)
            return web.json_response({"error": {"message": broken, "type": "BadRequestError", "code": 400}}, status=400)
        if self.llama_cpp_python:
            invalid = _llama_cpp_python_refusal(body)
            if invalid is not None:
                self.refused.append(invalid)
                return web.json_response({"error": {"message": invalid, "type": "internal_server_error", "param": None,
                                                    "code": None}}, status=500)
        queue = self.queues.get((body.get("model", ""), purpose_of(body)))
        answer = queue.popleft() if queue else Answer(content=UNSCRIPTED)
        if answer.hold is not None:
            await answer.hold.wait()
        if self.llama_cpp_python and body.get("tools") and "tool_choice" not in body and answer.tool_calls:
            self.refused.append("tools left out of the prompt: no tool_choice")
            answer = Answer(content="I would call a tool, but I was shown none.")
        if answer.delay_s:
            sleeping = asyncio.ensure_future(asyncio.sleep(answer.delay_s))
            self.sleeping.add(sleeping)
            try:
                await (asyncio.shield(sleeping) if answer.ignore_cancel else sleeping)
            except asyncio.CancelledError:
                if not answer.ignore_cancel or not sleeping.cancelled():
                    raise
                return web.Response(status=499)
            finally:
                self.sleeping.discard(sleeping)
        if answer.raw_body is not None:
            return web.Response(text=answer.raw_body, status=answer.status, content_type="application/json")
        if answer.endless:
            return await _endless(request)
        if answer.runaway:
            answer = _runaway(answer, body)
        if answer.status != 200:
            error = {"error": {"message": answer.error_message, "type": "server_error", "code": None}}
            return web.json_response(error, status=answer.status)
        return web.json_response(_completion(body.get("model", ""), answer))


    async def _transcribe(self, request: web.Request) -> web.StreamResponse:
        """OpenAI's transcription endpoint: a multipart form with ``file`` and ``model``."""
        form = await request.post()
        upload, model = form.get("file"), str(form.get("model", ""))
        if not isinstance(upload, web.FileField) or not model:
            return web.json_response({"error": {"message": "file and model are required", "code": 400}}, status=400)
        data = upload.file.read()
        self.transcriptions.append({"model": model, "filename": upload.filename, "content_type": upload.content_type,
                                    "data": data, "response_format": form.get("response_format")})
        self._arrived.set()
        queue = self.heard.get(model)
        answer = queue.popleft() if queue else Heard(UNSCRIPTED)
        if answer.delay_s:
            sleeping = asyncio.ensure_future(asyncio.sleep(answer.delay_s))
            self.sleeping.add(sleeping)  # cancelled by stop(), so a slow answer never holds a test up
            try:
                await sleeping
            finally:
                self.sleeping.discard(sleeping)
        if answer.status != 200:
            return web.json_response({"error": {"message": "scripted failure", "type": "server_error"}},
                                     status=answer.status)
        if answer.raw_body is not None:
            return web.Response(text=answer.raw_body, content_type="text/html")
        body: dict[str, Any] = {"text": answer.text}
        if answer.seconds is not None:
            body["usage"] = {"type": "duration", "seconds": answer.seconds}
        return web.json_response(body)

    def _broken_rule(self, body: dict[str, Any]) -> str | None:
        messages = body.get("messages", [])
        if self.rejects_temperature and "temperature" in body and body["temperature"] != 1:
            return (f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                    "Only the default (1) value is supported.")
        if self.wants_completion_tokens and "max_tokens" in body:
            return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.")
        if self.rejects_images and any(isinstance(m.get("content"), list) and any(
                p.get("type") == "image_url" for p in m["content"]) for m in messages):
            return "Invalid content type. image_url is only supported by certain models."
        if self.system_first and any(m.get("role") == "system" for m in messages[1:]):
            return "System message must be at the beginning."
        if self.strict_history:
            broken = _history_problem(messages)
            if broken is not None:
                return broken
        if self.reasoning_required and any(m.get("role") == "assistant" and m.get("tool_calls")
                                           and "reasoning_content" not in m for m in messages):
            return "Missing `reasoning_content` field in the assistant message at message index 1."
        return None


def _llama_cpp_python_refusal(body: dict[str, Any]) -> str | None:
    """What llama-cpp-python's request model refuses, as FastAPI's RequestValidationError prints it."""
    errors = []
    kind = (body.get("response_format") or {}).get("type")
    if kind is not None and kind not in ("text", "json_object"):
        errors.append(f"{{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                      f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}', "
                      f"'ctx': {{'expected': \"'text' or 'json_object'\"}}}}")
    for n, message in enumerate(body.get("messages", [])):
        if not isinstance(message.get("content"), str):  # pydantic tries every branch of the message union
            role = message.get("role")
            for branch in ("system", "user", "assistant", "tool", "function"):
                where = f"('body', 'messages', {n}, 'ChatCompletionRequest{branch.title()}Message'"
                if branch != role:
                    errors.append(f"{{'type': 'literal_error', 'loc': {where}, 'role'), 'msg': \"Input should be "
                                  f"'{branch}'\", 'input': '{role}', 'ctx': {{'expected': \"'{branch}'\"}}}}")
                else:
                    errors.append(f"{{'type': 'string_type', 'loc': {where}, 'content'), "
                                  f"'msg': 'Input should be a valid string', 'input': {message.get('content')!r}}}")
    if not errors:
        return None
    return f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}:\n  " + "\n  ".join(errors)


def _runaway(answer: Answer, body: dict[str, Any]) -> Answer:
    """A model that does not stop: junk until the budget, cut there ("length"), or 7,803 tokens."""
    budget = body.get("max_tokens") or body.get("max_completion_tokens")
    tokens = min(int(budget), 7_803) if budget else 7_803
    junk = '{"notes": [{"path": "about/x", "text": "' + "la " * tokens
    finish = "length" if budget and tokens >= int(budget) else "stop"
    return Answer(content=junk, tokens=(answer.tokens[0], tokens), finish_reason=finish)


ENDLESS_CAP = 256 * 1024 * 1024


async def _endless(request: web.Request) -> web.StreamResponse:
    """A 200 whose JSON body never ends, 64 KiB at a time, until the client hangs up (or 256 MiB)."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    await response.prepare(request)
    await response.write(b'{"id": "x", "object": "chat.completion", "choices": [{"message": {"content": "')
    chunk = b"a" * 65_536
    try:
        for _ in range(ENDLESS_CAP // len(chunk)):
            await response.write(chunk)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response


def _history_problem(messages: list[dict[str, Any]]) -> str | None:
    open_calls: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            try:
                arguments = json.loads(call["function"]["arguments"])
            except (ValueError, KeyError, TypeError):
                return "invalid tool call arguments"
            if not isinstance(arguments, dict):
                return "invalid tool call arguments"
            open_calls.add(call.get("id", ""))
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in open_calls or not isinstance(message.get("content"), str):
                return "tool message must answer a tool call with string content"
            open_calls.discard(message["tool_call_id"])
    return None


def purpose_of(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    if fmt.get("type") == "json_object":
        for message in body.get("messages", []):
            found = re.search(r"JSON object named (\w+)", str(message.get("content", "")))
            if found:
                return found.group(1)
    return "chat"


def _completion(model: str, answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.reasoning is not None:
        message[answer.reasoning[0]] = answer.reasoning[1]
    if answer.refusal is not None:
        message["refusal"] = answer.refusal
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(answer.tool_calls)
        ]
    finish = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
    body: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if answer.usage:
        body["usage"] = {"prompt_tokens": answer.tokens[0], "completion_tokens": answer.tokens[1],
                         "total_tokens": sum(answer.tokens)}
        if answer.cached is not None:
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": answer.cached}
    return body
