"""A recording proxy between Nod and a real model server, and the table it prints.

Nod's real client talks to this loopback proxy, which forwards each request unchanged to the
real server (llama-cpp-python's or llama.cpp's ``llama-server``) and notes what kind of
request it was (its purpose: the json_schema name, or ``chat`` for the agent), the budget it
carried, the status the server answered, the finish reason and how long it took. Nothing of
Nod's own code is replaced: the proxy only watches the wire, the way a fake server would.
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from tests.fakes.model_server import purpose_of


@dataclass(frozen=True)
class Seen:
    server: str
    purpose: str
    status: int
    seconds: float
    max_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    json_mode: str | None
    tool_choice: str | None
    null_content: bool
    tools: bool


RECORDS: list[Seen] = []  # every request of the session, for the closing table
PARSED: dict[tuple[str, str], list[bool]] = defaultdict(list)  # (server, purpose) -> each answer parsed or not


@dataclass
class RecordingProxy:
    upstream: str  # e.g. http://127.0.0.1:8080/v1
    server: str
    seen: list[Seen] = field(default_factory=list)
    runner: web.AppRunner | None = None
    port: int = 0
    session: aiohttp.ClientSession | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> RecordingProxy:
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._forward)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self.runner is not None:
            await self.runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw)
        began = time.monotonic()
        assert self.session is not None
        async with self.session.post(f"{self.upstream}/chat/completions", data=raw,
                                     headers={"Content-Type": "application/json"}) as answer:
            data = await answer.read()
            status, content_type = answer.status, answer.headers.get("Content-Type", "application/json")
        seconds = time.monotonic() - began
        usage, finish = None, None
        try:
            decoded = json.loads(data)
            usage = (decoded.get("usage") or {}).get("completion_tokens")
            finish = (decoded.get("choices") or [{}])[0].get("finish_reason")
        except (ValueError, AttributeError, IndexError):
            pass
        seen = Seen(self.server, purpose_of(body), status, seconds, body.get("max_tokens") or body.get("max_completion_tokens"),
                    usage, finish, (body.get("response_format") or {}).get("type"), body.get("tool_choice"),
                    any(m.get("content") is None for m in body.get("messages", [])), bool(body.get("tools")))
        self.seen.append(seen)
        RECORDS.append(seen)
        return web.Response(body=data, status=status, content_type=content_type.split(";")[0])


def note_parsed(server: str, purpose: str, parsed: bool) -> None:
    PARSED[(server, purpose)].append(parsed)


def table(records: list[Seen] | None = None) -> str:
    """One row per server and request kind: requests, accepted (2xx), refusals of json_schema Nod learnt from, answers
    parsed, seconds p50/max, most tokens out against the budget sent."""
    rows = defaultdict(list)
    for seen in records if records is not None else RECORDS:
        rows[(seen.server, seen.purpose)].append(seen)
    lines = [f"{'server':<18} {'request kind':<20} {'calls':>5} {'accepted':>8} {'learnt':>6} {'parsed':>7} {'s p50':>7} "
             f"{'s max':>7} {'tokens out max/budget':>22}"]
    for (server, purpose), seen in sorted(rows.items()):
        accepted = sum(200 <= s.status < 300 for s in seen)
        learnt = sum(not 200 <= s.status < 300 and s.json_mode == "json_schema" for s in seen)
        parsed = PARSED.get((server, purpose), [])
        shown = f"{sum(parsed)}/{len(parsed)}" if parsed else "-"
        seconds = [s.seconds for s in seen]
        out = max((s.completion_tokens or 0) for s in seen)
        budget = max((s.max_tokens or 0) for s in seen)
        lines.append(f"{server:<18} {purpose:<20} {len(seen):>5} {accepted:>5}/{len(seen):<2} {learnt:>6} {shown:>7} "
                     f"{statistics.median(seconds):>7.2f} {max(seconds):>7.2f} {f'{out}/{budget}':>22}")
    return "\n".join(lines)
