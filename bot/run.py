"""``nod run``: the web server, the configured channels and the hourly maintenance, until a signal.

SIGINT and SIGTERM set one event; everything shuts down in reverse order of starting,
and the database is closed last. Once the channels run, messages a stopped process left
unanswered are taken up, and again every minute, for a worker that died beside this one;
reminders and scheduled tasks fire as they fall due.
"""

from __future__ import annotations

import asyncio
import errno
import faulthandler
import fcntl
import gc
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from aiohttp import web

from adapters.storage.database import sqlite_file
from adapters.storage.search_index.derived import DerivedIndex
from adapters.web.app import PathOnlyAccessLog, build_app
from adapters.web.page import PageServices
from bot.channels import Channels, channels
from bot.settings import Settings
from bot.summary import start_summary
from bot.wiring import Services, services
from core.errors import ConfigError, StorageError
from core.maintenance.tick import next_tick

log = logging.getLogger("nod.run")
RECOVER_EVERY_S = 60.0


async def _maintenance_loop(svc: Services, stop: asyncio.Event) -> None:
    """Every hour at minute 7 UTC until stopped; a late wake-up runs one tick (coalesced)."""
    while not stop.is_set():
        delay = (next_tick(svc.clock.now()) - svc.clock.now()).total_seconds()
        try:
            await asyncio.wait_for(stop.wait(), timeout=max(delay, 0.0))
            return
        except TimeoutError:
            pass
        try:
            await svc.maintenance.run()
        except Exception:  # noqa: BLE001 - the loop outlives a failed tick
            log.exception("maintenance_tick_failed")


def page_services(svc: Services) -> PageServices | None:
    """What the memory page needs, when it is on."""
    if svc.page is None:
        return None
    return PageServices(svc.page, svc.edits, svc.memory, svc.owners, svc.messages, svc.clock, svc.page.secure,
                        svc.gmail, svc.gmail_off, svc.schedules)


async def _repeat(stop: asyncio.Event, what: str, step: Callable[[], Awaitable[float]]) -> None:
    """``step`` until stopped, each time waiting the seconds it answers (or a second after a failure):
    the loop outlives a failed step, since the database may be back later."""
    failing = False  # a database that stays unwritable is said once, not every second
    while not stop.is_set():
        wait_s = 1.0
        try:
            wait_s = await step()
            if failing:
                log.info("%s_resumed", what)
            failing = False
        except StorageError as exc:  # the database's own sentence (unwritable, gone, refused): no traceback
            if not failing:
                log.warning("%s_failed error=%s", what, exc)
            failing = True
        except Exception:  # noqa: BLE001 - logged; the next step tries again
            log.exception("%s_failed", what)
        try:
            await asyncio.wait_for(stop.wait(), timeout=wait_s)
        except TimeoutError:
            pass


async def _warm(index: DerivedIndex) -> None:
    """The derived index brought up to date in the background; said when done (its reads are over)."""
    await index.warm()
    log.debug("search_index_warm_done")


async def _recovery_loop(running: Channels, stop: asyncio.Event) -> None:
    """Answer what a dead process left unanswered: at start, then every minute."""
    async def sweep() -> float:
        taken = await running.front.recover(running.names)
        if taken:
            log.info("recovery taken=%s", taken)
        return RECOVER_EVERY_S
    await _repeat(stop, "recovery", sweep)


async def _schedule_loop(svc: Services, running: Channels, stop: asyncio.Event) -> None:
    """Reminders and scheduled tasks: fire what is due, then sleep until the next is (at most 1 s)."""
    scheduler = svc.scheduler(running.sink)

    async def tick() -> float:
        await scheduler.tick()
        return await scheduler.wait_s()
    try:
        await _repeat(stop, "schedule_tick", tick)
    finally:
        await asyncio.shield(scheduler.close())


@contextmanager
def _only_server(database_url: str) -> Iterator[None]:
    """One ``nod run`` per SQLite file: a second one would answer the same messages again.

    An exclusive ``flock`` on ``nod.db.run.lock`` (the kernel drops it when the process dies,
    ``kill -9`` included); PostgreSQL workers coordinate through the database instead.
    ``nod chat`` and the one-shot commands do not take it.
    """
    path = sqlite_file(database_url)
    if path is None:
        yield
        return
    with open(path.with_name(path.name + ".run.lock"), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"Another nod run is serving {path}; one process serves a SQLite file "
                              "(several workers need PostgreSQL).") from None
        yield


async def _listen(site: web.TCPSite, settings: Settings) -> None:
    """Start listening; a port taken by another program is one sentence, not the socket's tuple."""
    try:
        await site.start()
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise ConfigError(f"Port {settings.port} on {settings.host} is in use; set NOD_PORT to a free port "
                          "or stop the program using it.") from None


async def run_server(settings: Settings) -> None:
    # a fatal signal (SIGBUS from a database file mapped and then taken away) leaves its stack
    # on standard error instead of ending the process without a line
    faulthandler.enable()
    with _only_server(settings.database_url):
        await _serve(settings)


async def _serve(settings: Settings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with services(settings) as svc, channels(settings, svc) as running:
        runner = web.AppRunner(build_app(svc.health.problem, running.webhooks, page_services(svc)), handle_signals=False,
                               access_log_class=PathOnlyAccessLog)
        await runner.setup()
        site = web.TCPSite(runner, settings.host, settings.port)
        warming = asyncio.create_task(_warm(svc.search_index)) if svc.search_index else None
        hourly = asyncio.create_task(_maintenance_loop(svc, stop))
        recovering: asyncio.Task[None] | None = None
        scheduling: asyncio.Task[None] | None = None
        try:
            await _listen(site, settings)
            await running.start()
            recovering = asyncio.create_task(_recovery_loop(running, stop))
            scheduling = asyncio.create_task(_schedule_loop(svc, running, stop))
            # startup's objects (modules, SQLAlchemy, the SDKs) leave the collector's full passes:
            # measured, a full collection over them paused the loop 130-200 ms under load
            gc.freeze()
            log.info("started host=%s port=%s", settings.host, settings.port)
            index = svc.search_index.directory if svc.search_index else None
            print(start_summary(settings, index), flush=True)
            print(f"Nod is listening on http://{settings.host}:{settings.port}", flush=True)
            await stop.wait()
            log.info("stopping")
        finally:
            background = [task for task in (hourly, recovering, scheduling) if task is not None]
            for task in background:
                task.cancel()
            if svc.search_index is not None:  # a warm-up stops after its batch: cancelled, a statement is cut mid-way
                await svc.search_index.close()
            # wait for them: a task still holding a connection when the engine closes hangs the exit
            await asyncio.gather(*background, *([warming] if warming else []), return_exceptions=True)
            await runner.cleanup()
