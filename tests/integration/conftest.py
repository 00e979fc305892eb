"""Fixtures for the integration tests: the scripted model server and a wired Nod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.twilio_server import FakeTwilioServer
from tests.integration.harness import Harness, make_harness
from tests.integration.live import Live, make_live


@pytest.fixture
async def nod(tmp_path: Path, server: FakeModelServer) -> AsyncIterator[Harness]:
    async for harness in make_harness(tmp_path, server):
        yield harness


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegramServer]:
    fake = await FakeTelegramServer().start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def twilio() -> AsyncIterator[FakeTwilioServer]:
    fake = await FakeTwilioServer().start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def live(tmp_path: Path, server: FakeModelServer, telegram: FakeTelegramServer,
               twilio: FakeTwilioServer) -> AsyncIterator[Live]:
    async for running in make_live(tmp_path, server, telegram, twilio):
        yield running
