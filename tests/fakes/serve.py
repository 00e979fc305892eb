"""Run the fake model and Twilio servers in a process of their own (for benchmarks).

``python -m tests.fakes.serve`` prints ``MODEL_PORT TWILIO_PORT`` on one line and serves
until killed, so a load generator and the fakes do not share one CPU's event loop.
"""

from __future__ import annotations

import asyncio

from tests.fakes.model_server import FakeModelServer
from tests.fakes.twilio_server import FakeTwilioServer


async def main() -> None:
    model, twilio = await FakeModelServer().start(), await FakeTwilioServer().start()
    print(model.port, twilio.port, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
