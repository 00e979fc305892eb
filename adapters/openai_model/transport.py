"""The HTTP transport under the openai SDK: a bounded read of each answer, and no retry of a refused request.

The SDK cannot be told either, so both are done where the bytes arrive; every transport shares
one TLS context. Details: docs/turn.md, "The OpenAI adapter's transport".
"""

from __future__ import annotations

import re
import ssl
from functools import cache

import httpx

MAX_BODY_BYTES = 1_048_576  # 1 MiB: hundreds of times the largest answer Nod asks for
BODY_CUT = "x-nod-body-cut"
INVALID_REQUEST = "x-nod-invalid-request"
# What request-validation failures say: pydantic (llama-cpp-python, vLLM), FastAPI, llama.cpp, OpenAI
_VALIDATION = re.compile(r"validation error|Input should be|Field required|Extra inputs are not permitted|"
                         r"unprocessable|invalid_request_error|Unsupported (?:parameter|value)|"
                         r"must be (?:a string|an? )|image input is not supported|not a multimodal model", re.I)


def refused_request(status: int, body: bytes) -> bool:
    """A request the server will refuse again if sent again unchanged."""
    if 400 <= status < 500:
        return status not in (408, 409, 429)
    return status >= 500 and bool(_VALIDATION.search(body[:20_000].decode("utf-8", "replace")))


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default (certificates required, host names checked; ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` when set, else certifi's bundle), made once per process: safe to share."""
    return httpx.create_ssl_context()


class BoundedTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncHTTPTransport`` with the body read bounded and refusals marked (see the module docstring)."""

    def __init__(self, limit: int = MAX_BODY_BYTES, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner or httpx.AsyncHTTPTransport(verify=tls_context())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"  # the cap counts the bytes a reader would hold
        response = await self._inner.handle_async_request(request)
        chunks: list[bytes] = []
        size = 0
        cut = False
        try:
            async for chunk in response.aiter_bytes():  # decoded, should a server compress anyway
                chunks.append(chunk)
                size += len(chunk)
                if size > self._limit:
                    cut = True
                    break
        finally:
            await response.aclose()
        body = b"".join(chunks)[: self._limit]
        headers = httpx.Headers(response.headers)
        for name in ("content-length", "content-encoding", "transfer-encoding"):  # the body below is whole and plain
            headers.pop(name, None)
        if cut:
            headers[BODY_CUT] = str(self._limit)
            headers["content-type"] = "text/plain"
            headers["x-should-retry"] = "false"
        elif refused_request(response.status_code, body):
            headers[INVALID_REQUEST] = "1"
            headers["x-should-retry"] = "false"
        return httpx.Response(response.status_code, headers=headers, content=body, request=request,
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()
