"""A TCP proxy on loopback in front of a real server, that a test can cut and restore.

``cut()`` closes every connection through it and refuses new ones until ``restore()``:
what a PostgreSQL restart looks like from Nod's side (its connections die, connecting
fails for a while, then works again) — while the real server and the other tests' data
stay as they are. The server side sees its clients go away, so their sessions end and
their advisory locks are released, as on a real restart.
"""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()
        self.port = 0
        self.cut_now = False

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_now:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            pump = asyncio.create_task(self._pump(source, sink))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()
        self._writers.discard(sink)

    async def cut(self) -> None:
        """Every connection through the proxy dies; new ones are refused until ``restore``."""
        self.cut_now = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        if self._pumps:
            await asyncio.wait(set(self._pumps), timeout=5)

    def restore(self) -> None:
        self.cut_now = False

    async def stop(self) -> None:
        await self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
