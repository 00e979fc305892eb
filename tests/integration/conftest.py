"""Fixtures for the integration tests: the scripted model server and a wired Nod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.integration.harness import Harness, make_harness


@pytest.fixture
async def server() -> AsyncIterator[FakeModelServer]:
    fake = await FakeModelServer().start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def nod(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[Harness]:
    async for harness in make_harness(tmp_path, server):
        yield harness
