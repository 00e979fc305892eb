"""The derived tantivy index: caught up from the database, read-only beside a writer, rebuilt."""

from __future__ import annotations

import asyncio
import base64
import fcntl
import json
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tantivy
from sqlalchemy import event, insert
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_

from adapters.storage import id_horizon
from adapters.storage.database import create_engine
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.owner_store import OwnerStore
from adapters.storage.schema import messages
from adapters.storage.search_index.derived import DerivedIndex, sqlite_file
from adapters.storage.search_index.documents import schema_of_documents
from adapters.storage.search_index.index_directory import FORMAT, SETTINGS, WRITER_LOCK, IndexDirectory
from adapters.storage.thread_reads import ThreadReads
from bot.wiring import history_search
from core.clock import SystemClock
from core.history.scope import Scope
from core.message import Message, Role
from core.owner import Owner
from tests.tool_calls import history_args

T0 = datetime(2025, 3, 1, tzinfo=UTC)


async def _setup(tmp_path: Path) -> tuple[AsyncEngine, Owner, MessageStore, Path]:
    db = tmp_path / "nod.db"
    engine = create_engine(f"sqlite+aiosqlite:///{db}")
    await migrate(engine)
    owner = await OwnerStore(engine).add("ana", "UTC", (), T0)
    store = MessageStore(engine, SystemClock())
    return engine, owner, store, db


async def _say(store: MessageStore, owner: Owner, n: int, text: str) -> int:
    stored = await store.append(Message(owner.id, Role.OWNER, text, "t", T0 + timedelta(minutes=n)))
    return stored.message.id


async def test_a_search_answers_the_newest_messages_from_the_database_and_the_index_catches_up_behind(
        tmp_path: Path) -> None:
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=0.0)
    assert index is not None and index.watermark == 0
    search = history_search(engine, store, index)
    first = await _say(store, owner, 1, "We sailed to the Berlengas islands")
    thread = await store.active_thread(owner.id)
    view = await index.view(thread, first)
    assert view is not None and view[1] == 0  # nothing indexed yet: all of it from the tail
    assert [r["id"] for r in (await search.search(owner, history_args({"query": "island"})))["results"]] == [first]
    await index.caught_up()  # the catch-up the search started, in the background
    assert index.watermark == first
    second = await _say(store, owner, 2, "The island ferry was late")
    answer = await search.search(owner, history_args({"query": "islands ferry"}))
    assert [r["id"] for r in answer["results"]] == [second, first] and answer["totalMatches"] == 2
    view = await index.view(thread, second)
    assert view is not None and view[1] == first  # the index up to first, the database after it
    await index.caught_up()
    assert index.watermark == second and index.reader.count(("island",), Scope(thread_id=1, snapshot=second)) == 2
    await index.close()
    await engine.dispose()


async def test_a_second_process_reads_when_caught_up_and_falls_back_when_behind(tmp_path: Path) -> None:
    engine, owner, store, db = await _setup(tmp_path)
    writer = DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine)
    first = await _say(store, owner, 1, "Lunch at the harbour")
    assert writer is not None and await writer.ready_for(first)
    reader = DerivedIndex(db.with_name("nod.db.search"), engine)  # the writer lock is taken
    assert await reader.ready_for(first)
    later = await _say(store, owner, 2, "Dinner at the harbour too")
    assert not await reader.ready_for(later)  # cannot write: FTS5 answers instead, exactly
    answer = await history_search(engine, store, reader).search(owner, history_args({"query": "harbour"}))
    assert sorted(r["id"] for r in answer["results"]) == [first, later] and answer["totalMatches"] == 2
    await engine.dispose()


async def test_an_index_of_another_format_is_rebuilt_from_the_database(tmp_path: Path) -> None:
    engine, owner, store, db = await _setup(tmp_path)
    folder = db.with_name("nod.db.search")
    folder.mkdir()
    (folder / "nod-format.json").write_text(json.dumps({"format": -1}))
    (folder / "stale-file").write_text("left by an older Nod")
    message = await _say(store, owner, 1, "Remember the blue door")
    index = DerivedIndex(folder, engine)
    assert (folder / "stale-file").exists()  # opened on first use, not when made
    assert index.watermark == 0 and not (folder / "stale-file").exists()
    assert [r["id"] for r in (await history_search(engine, store, index).search(owner, history_args({"query": "door"})))["results"]] == [message]
    await index.close()  # its background catch-up, still pending, would open a connection after dispose
    await engine.dispose()


@pytest.mark.parametrize("meta", ['{"segments": [', "", "\x00" * 64], ids=["cut short", "empty", "zeros"])
async def test_an_index_tantivy_cannot_open_is_made_anew_unless_another_process_writes_it(
        tmp_path: Path, meta: str) -> None:
    """A meta file cut short (a full disk, a power cut on a file system that lies about
    syncs) or overwritten left the index unopenable for good: every search fell back to the
    database and logged a warning. Nothing in it is lost by rebuilding it."""
    engine, owner, store, db = await _setup(tmp_path)
    message = await _say(store, owner, 1, "Remember the blue door")
    folder = db.with_name("nod.db.search")
    built = DerivedIndex(folder, engine, catch_up_every=None)
    assert await built.ready_for(message)
    await built.close()
    (folder / "meta.json").write_text(meta)
    with open(folder / WRITER_LOCK, "a") as held:  # another process writing here: its files are kept
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        blocked = DerivedIndex(folder, engine, catch_up_every=None)
        found = await history_search(engine, store, blocked).search(owner, history_args({"query": "door"}))
        assert [r["id"] for r in found["results"]] == [message]  # the database answered
        assert (folder / "meta.json").read_text() == meta
    lock = (folder / WRITER_LOCK).stat().st_ino
    index = DerivedIndex(folder, engine, catch_up_every=None)
    assert index.watermark == 0 and json.loads((folder / "meta.json").read_text())["index_settings"]
    assert (folder / WRITER_LOCK).stat().st_ino == lock  # the same lock file: never split in two
    assert json.loads((folder / "nod-format.json").read_text())["format"] == FORMAT
    assert await index.ready_for(message) and index.watermark == message
    found = await history_search(engine, store, index).search(owner, history_args({"query": "door"}))
    assert [r["id"] for r in found["results"]] == [message]
    await index.close()
    await engine.dispose()


async def test_a_new_index_stores_documents_in_small_blocks_and_never_replaces_a_meta_file(tmp_path: Path) -> None:
    engine, owner, store, db = await _setup(tmp_path)
    message = await _say(store, owner, 1, "Remember the blue door")
    index = DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine)
    assert index is not None and await index.ready_for(message)
    meta = json.loads((index.directory / "meta.json").read_text())
    assert meta["index_settings"] == {**meta["index_settings"], **SETTINGS} and meta["segments"]  # kept by commits
    assert not list(index.directory.glob("meta.*.nod"))
    assert [r["id"] for r in (await history_search(engine, store, index).search(owner, history_args({"query": "door"})))["results"]] == [message]
    await index.close()
    other = tmp_path / "other"  # a meta file already there (another process made the index first)
    other.mkdir()
    (other / "nod-format.json").write_text(json.dumps({"format": FORMAT, "database": None}))
    tantivy.Index(schema_of_documents(), path=str(other), reuse=False)  # tantivy's defaults
    before = (other / "meta.json").read_text()
    IndexDirectory(other).open(schema_of_documents())
    assert (other / "meta.json").read_text() == before and json.loads(before)["index_settings"] != SETTINGS
    await engine.dispose()


def test_the_small_blocks_are_best_effort_and_never_replace_a_meta_file_made_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = schema_of_documents()
    raced = tmp_path / "raced"  # another process links its meta file after this one looked
    link, made = os.link, []

    def the_other_process_first(staged: Any, meta: Any) -> None:
        tantivy.Index(schema, path=str(raced), reuse=False)  # its meta file, tantivy's defaults
        made.append((raced / "meta.json").read_text())
        link(staged, meta)

    monkeypatch.setattr(os, "link", the_other_process_first)
    IndexDirectory(raced).open(schema)
    assert made and (raced / "meta.json").read_text() == made[0] and not list(raced.glob("meta.*.nod"))
    assert json.loads(made[0])["index_settings"] != SETTINGS
    stray = tmp_path / "stray"  # a process died between writing its staged file and removing it
    stray.mkdir()
    IndexDirectory(stray).mark(None)
    (stray / "meta.1234.nod").write_text("{}")
    IndexDirectory(stray).open(schema)
    assert not list(stray.glob("meta.*.nod"))

    def no_links(*_: Any) -> None:
        raise PermissionError(1, "Operation not permitted")  # SMB, vfat, some FUSE mounts

    monkeypatch.setattr(os, "link", no_links)
    plain = tmp_path / "no-links"
    IndexDirectory(plain).open(schema)  # tantivy's defaults, and an index that opens
    assert json.loads((plain / "meta.json").read_text())["index_settings"] != SETTINGS


async def test_a_directory_that_is_not_a_nod_index_is_never_emptied(tmp_path: Path, caplog: Any) -> None:
    engine, owner, store, _ = await _setup(tmp_path)
    folder = tmp_path / "papers"  # NOD_SEARCH_INDEX_DIR set to the wrong place
    (folder / "drafts").mkdir(parents=True)
    (folder / "thesis.tex").write_text("three years of work")
    (folder / "drafts" / "intro.tex").write_text("and more")
    message = await _say(store, owner, 1, "Remember the blue door")
    index = DerivedIndex(folder, engine)
    search = history_search(engine, store, index)
    for _ in range(2):  # the database answers, every time, and the refusal is logged once
        assert [r["id"] for r in (await search.search(owner, history_args({"query": "door"})))["results"]] == [message]
    await index.warm()
    assert (folder / "thesis.tex").read_text() == "three years of work"
    assert sorted(p.name for p in folder.rglob("*")) == ["drafts", "intro.tex", "thesis.tex"]
    refusals = [r for r in caplog.records if "search_index_refused" in r.getMessage()]
    assert len(refusals) == 1 and str(folder) in refusals[0].getMessage()
    await engine.dispose()


async def test_a_marker_left_half_written_by_a_crash_still_reads_as_nod_s(tmp_path: Path) -> None:
    engine, owner, store, _ = await _setup(tmp_path)
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "nod-format.json.new").write_text('{"form')  # died before the rename
    message = await _say(store, owner, 1, "Remember the blue door")
    index = DerivedIndex(folder, engine)
    assert [r["id"] for r in (await history_search(engine, store, index).search(owner, history_args({"query": "door"})))["results"]] == [message]
    await index.caught_up()
    assert index.watermark == message and json.loads((folder / "nod-format.json").read_text())["format"]
    await engine.dispose()


async def test_closing_lets_a_running_catch_up_finish_its_batch_and_the_next_process_resumes(tmp_path: Path) -> None:
    """Cancelled mid-statement, aiosqlite's thread would answer a loop already closed and a
    half-written batch would be rolled back; close() stops between batches instead."""
    engine, owner, store, db = await _setup(tmp_path)
    ids = [await _say(store, owner, n, f"note {n} about the harbour") for n in range(40)]
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None, batch=5)
    loop, first_batch, reads = asyncio.get_running_loop(), asyncio.Event(), []

    def reading_the_next_batch(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if "AS context" in statement and "WITH edited" not in statement:  # index_feed.GAP, not EDITED
            reads.append(statement)
            if len(reads) == 2:  # the catch-up reads its second batch: the first is in the index
                loop.call_soon_threadsafe(first_batch.set)

    event.listen(engine.sync_engine, "before_cursor_execute", reading_the_next_batch)
    warming = asyncio.create_task(index.warm())
    await asyncio.wait_for(first_batch.wait(), 10)  # the catch-up is under way
    await index.close()
    event.remove(engine.sync_engine, "before_cursor_execute", reading_the_next_batch)
    assert warming.done() and not warming.cancelled()
    stopped_at = index.watermark
    assert stopped_at in ids[4:-1:5]  # a whole number of batches, nothing half-added, and not all of them
    assert index.reader.count(("harbour",), Scope(thread_id=1, snapshot=ids[-1])) == ids.index(stopped_at) + 1
    resumed = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None, batch=5)
    assert await resumed.ready_for(ids[-1]) and resumed.watermark == ids[-1]
    assert resumed.reader.count(("harbour",), Scope(thread_id=1, snapshot=ids[-1])) == 40
    await resumed.close()
    await engine.dispose()


async def test_a_thread_busier_than_the_tail_catches_up_first_and_an_import_goes_to_the_database(
        tmp_path: Path) -> None:
    """Several workers appending to one thread outrun the once-a-second catch-up; one commit
    then is cheaper than the database's ranking. A gap past INLINE_GAP (an import) is not
    waited for."""
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None,
                         inline_gap=100, tail_limit=64)  # a smaller thread makes the same point
    first = await _say(store, owner, 0, "the harbour at dawn")
    assert await index.ready_for(first)
    thread = await store.active_thread(owner.id)
    busy = [await _say(store, owner, n, f"harbour note {n}") for n in range(1, 71)]  # past TAIL_LIMIT
    view = await index.view(thread, busy[-1])
    assert view is not None and view[1] == busy[-1] and index.watermark == busy[-1]
    imported = [await _say(store, owner, n, f"imported {n}") for n in range(71, 201)]
    assert await index.view(thread, imported[-1]) is None and index.watermark == busy[-1]
    await index.close()
    await engine.dispose()


async def test_a_catch_up_landing_while_the_index_is_checked_is_not_read_as_a_changed_database(
        tmp_path: Path, caplog: Any) -> None:
    """The check reads the row at the watermark, then compares it with the index's; a
    background catch-up committing in between moved the watermark, and the index was
    rebuilt from scratch (seen at a million messages with three workers)."""
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None)
    first = await _say(store, owner, 0, "the harbour at dawn")
    assert await index.ready_for(first)
    second = await _say(store, owner, 1, "the harbour at dusk")
    landed = []

    def catch_up_lands(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        """As the search's check reads the database, another task's catch-up commits (its own
        check and catch-up run to the end, awaited here, before the search's statement goes on)."""
        if "AS instance" in statement and not landed:
            landed.append(statement)
            assert await_(index.ready_for(second))

    event.listen(engine.sync_engine, "before_cursor_execute", catch_up_lands)
    thread = await store.active_thread(owner.id)
    assert await index.view(thread, second) is not None
    assert landed and index.watermark == second
    assert not [r for r in caplog.records if "search_index_rebuild" in r.getMessage()]
    assert index.reader.count(("harbour",), Scope(thread_id=thread, snapshot=second)) == 2
    await index.close()
    await engine.dispose()


async def test_two_searches_that_find_the_database_changed_rebuild_the_index_once(tmp_path: Path, caplog: Any) -> None:
    """Both read the changed row before either takes the lock; the second used to empty the
    index the first had just rebuilt and caught up."""
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None)
    ids = [await _say(store, owner, n, f"harbour note {n}") for n in range(3)]
    assert await index.ready_for(ids[-1])
    async with engine.begin() as conn:  # the row at the watermark is not what the index holds (a restore)
        await conn.execute(messages.update().where(messages.c.id == ids[-1]).values(text="harbour rewritten"))
    thread = await store.active_thread(owner.id)
    caplog.set_level(logging.INFO, logger="nod.history.index")
    await asyncio.gather(index.view(thread, ids[-1]), index.view(thread, ids[-1]))
    assert len([r for r in caplog.records if "search_index_rebuild" in r.getMessage()]) == 1
    assert await index.ready_for(ids[-1]) and index.reader.count(("harbour",), Scope(thread, ids[-1])) == 3
    await index.close()
    await engine.dispose()


async def test_nothing_reopens_the_writer_after_close_so_the_next_process_can_write(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """...and a search that runs on after close() says nothing: `nod run` stopping with one
    sentence (a refused token) must not print a warm-up's 'index not used' beside it."""
    caplog.set_level(logging.INFO, logger="nod.history.index")
    engine, owner, store, db = await _setup(tmp_path)
    await _say(store, owner, 0, "the harbour at dawn")
    closing = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None)
    await closing.close()  # stopping before its warm-up had opened the writer
    later = await _say(store, owner, 1, "the harbour at dusk")
    await closing.warm()  # that warm-up, or a search still running in the old process
    assert not await closing.ready_for(later)
    assert not [r for r in caplog.records if "search_index_not_used" in r.getMessage()]
    successor = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None)
    assert await successor.ready_for(later) and successor.watermark == later  # it holds the writer lock
    await successor.close()
    await engine.dispose()


async def test_a_later_page_on_an_index_behind_the_first_page_s_split_catches_up_instead_of_falling_back(
        tmp_path: Path) -> None:
    """Workers behind a load balancer: page one answered by a worker whose index held more;
    this one catches up to the cursor's split rather than page on in another order."""
    engine, owner, store, db = await _setup(tmp_path)
    ids = [await _say(store, owner, n, f"harbour note {n}") for n in range(30)]
    ahead = DerivedIndex(tmp_path / "worker-a", engine, catch_up_every=None)
    assert await ahead.ready_for(ids[-1])
    first = await history_search(engine, store, ahead).search(owner, history_args({"query": "harbour", "limit": 10}))
    behind = DerivedIndex(tmp_path / "worker-b", engine, catch_up_every=None)  # its own, empty index
    thread = await store.active_thread(owner.id)
    assert (await behind.view(thread, ids[-1], split=ids[-1])) is not None and behind.watermark == ids[-1]
    second = await history_search(engine, store, behind).search(
        owner, history_args({"query": "harbour", "limit": 10, "cursor": first["nextCursor"]}))
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}
    await ahead.close()
    await behind.close()
    await engine.dispose()


async def test_a_half_full_tail_ends_the_background_catch_up_s_pause(tmp_path: Path) -> None:
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=3600.0)
    first = await _say(store, owner, 0, "the harbour at dawn")
    assert await index.ready_for(first)
    thread = await store.active_thread(owner.id)
    one = await _say(store, owner, 1, "one harbour note")
    assert await index.view(thread, one) is not None
    await index.caught_up()  # the first background catch-up runs at once; the next waits an hour
    assert index.watermark == one
    busy = [await _say(store, owner, n, f"harbour note {n}") for n in range(2, 140)]  # past half the tail
    assert await index.view(thread, busy[-1]) is not None
    async with asyncio.timeout(10):
        await index.caught_up()  # would wait an hour without the wake-up
    assert index.watermark == busy[-1]
    await index.close()
    await engine.dispose()


class _Tantivy:
    """tantivy's index as opened (DerivedIndex's ``wrap_tantivy`` hook), its writer wrapped by
    ``writer_as``: a failure or a moment tantivy gives no way to cause from outside."""

    def __init__(self, real: Any, writer_as: Any) -> None:
        self._real, self._writer_as = real, writer_as

    def writer(self, **options: Any) -> Any:
        return self._writer_as(self._real.writer(**options))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _Writer:
    """tantivy's writer, passed through."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


async def test_closing_never_raises_when_tantivy_fails_to_let_go_of_its_writer(tmp_path: Path, caplog: Any) -> None:
    """nod run closes the index in a finally before stopping its web server: a raise there
    skipped the rest of the shutdown."""
    engine, owner, store, db = await _setup(tmp_path)
    writers: list[Any] = []

    class MergeThreadsPanicked(_Writer):  # tantivy's writer whose merge threads panicked
        def __init__(self, real: Any) -> None:
            super().__init__(real)
            writers.append(real)

        def wait_merging_threads(self) -> None:
            raise RuntimeError("merge thread panicked")

    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None,
                         wrap_tantivy=lambda opened: _Tantivy(opened, MergeThreadsPanicked))
    assert await index.ready_for(await _say(store, owner, 0, "the harbour at dawn"))
    await index.close()
    assert any("search_index_failed" in r.getMessage() for r in caplog.records)
    [real] = writers
    real.wait_merging_threads()
    await engine.dispose()


async def test_a_search_cancelled_while_its_catch_up_commits_leaves_no_message_indexed_twice(
        tmp_path: Path) -> None:
    """A new message cancels the turn, and with it the search; its catch-up was committing.
    Cut short there, the batch stayed committed behind an unmoved watermark and the next
    catch-up added it again (found in review)."""
    engine, owner, store, db = await _setup(tmp_path)
    loop = asyncio.get_running_loop()
    cancel_on_commit: list[asyncio.Task[Any]] = []

    class CancelsTheSearchAsItCommits(_Writer):  # the cancel lands while the commit returns
        def commit(self) -> Any:
            done = self.real.commit()
            searches = list(cancel_on_commit)
            cancel_on_commit.clear()  # before the cancel: the test may run on as soon as it lands
            for search in searches:
                loop.call_soon_threadsafe(search.cancel)
            return done

    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None, tail_limit=8,
                         wrap_tantivy=lambda opened: _Tantivy(opened, CancelsTheSearchAsItCommits))
    assert await index.ready_for(await _say(store, owner, 0, "the harbour at dawn"))
    thread = await store.active_thread(owner.id)
    busy = [await _say(store, owner, n, f"harbour note {n}") for n in range(1, 20)]  # past the tail: caught up first
    searching = asyncio.create_task(index.view(thread, busy[-1]))
    cancel_on_commit.append(searching)
    with pytest.raises(asyncio.CancelledError):
        await searching
    assert not cancel_on_commit  # cancelled by the commit, not before it
    assert await index.view(thread, busy[-1]) is not None  # the next search catches up from the watermark
    assert index.watermark == busy[-1]
    assert index.reader.count(("harbour",), Scope(thread, busy[-1])) == 20
    await index.close()
    await engine.dispose()


def test_only_a_sqlite_file_gets_a_derived_index() -> None:
    assert sqlite_file("sqlite+aiosqlite:///nod.db") == Path("nod.db")
    assert sqlite_file("sqlite+aiosqlite:////var/lib/nod/nod.db?mode=rwc") == Path("/var/lib/nod/nod.db")
    assert sqlite_file("sqlite+aiosqlite:///:memory:") is None
    assert sqlite_file("postgresql+asyncpg://u@h/db") is None


async def test_on_postgresql_a_message_committed_after_a_newer_one_is_never_passed_by(
        postgres_url: str, tmp_path: Path) -> None:
    """Ids commit out of order on PostgreSQL: the index waits for the settled horizon (adapters.storage.id_horizon)."""
    engine = create_engine(postgres_url)
    try:
        await migrate(engine)
        owner = await OwnerStore(engine).add("ana", "UTC", (), T0)
        store = MessageStore(engine, SystemClock())
        index = DerivedIndex.beside(postgres_url, engine, tmp_path / "search")
        assert index is not None
        search = history_search(engine, store, index)
        first = await _say(store, owner, 1, "The ferry to the islands")
        assert await index.ready_for(first) and index.watermark == first
        thread = await store.active_thread(owner.id)
        async with engine.connect() as slow:  # an insert that takes its id now and commits later
            transaction = await slow.begin()
            await id_horizon.enter(slow)
            late = (await slow.execute(insert(messages).values(
                owner_id=owner.id, thread_id=thread, role="owner", text="The late ferry back", channel="t",
                sent_at=T0 + timedelta(minutes=2), card_title=False, attachment=False, forwarded=False, secret=False,
                awaiting=False, voice=False).returning(messages.c.id))).scalar_one()
            newer = await _say(store, owner, 3, "Another ferry on Sunday")  # commits first, with a larger id
            assert newer > late
            assert not await index.ready_for(newer) and index.watermark == first  # not past the id in flight
            answer = await search.search(owner, history_args({"query": "ferry"}))  # the database answers meanwhile
            assert sorted(r["id"] for r in answer["results"]) == [first, newer]
            await transaction.commit()
        await index.caught_up()  # the search's background catch-up, if it still runs, holds the lock
        assert await index.ready_for(newer) and index.watermark == newer
        answer = await search.search(owner, history_args({"query": "ferry"}))
        assert sorted(r["id"] for r in answer["results"]) == [first, late, newer]
        assert index.reader.count(("ferri",), Scope(thread_id=thread, snapshot=newer)) == 3  # the late one is in the index
        await index.close()
    finally:
        await engine.dispose()


TRIP = [
    "Planning the trip to Lisbon in May", "Lisbon in May is lovely. Where will you stay?",
    "A small hotel in Alfama, near the river", "Alfama is hilly: good shoes for the trip",
    "Should I book the tram tour?", "Yes, tram 28 crosses Alfama and the river front",
    "My sister Ana joins the Lisbon trip", "Then a bigger hotel room, or two rooms?",
    "Two rooms, Ana snores", "Noted: two rooms in Alfama for the Lisbon trip",
    "What about the river cruise?", "The river cruise leaves at six from the tram stop",
]
QUERIES: list[dict[str, Any]] = [
    {"query": "Lisbon trip"}, {"query": "river tram"}, {"query": "Alfama hotel rooms"},
    {"query": "trip", "order": "newest", "limit": 3}, {"query": "river", "from": "2025-03-01", "to": "2025-03-01"},
    {"query": "Ana", "limit": 2},
    # the message before the first one past the half index's split is in the index: the
    # match (from the tail) lifts it as "next message" all the same
    {"query": "bigger"}, {"query": "snores"},
]


async def _walk(search: Any, owner: Owner, call: dict[str, Any]) -> list[Any]:
    """Every page of one search, answers whole (order, flags, neighbours, totals)."""
    answers, cursor = [], None
    while True:
        answer = await search.search(owner, history_args({**call, **({"cursor": cursor} if cursor else {})}))
        cursor = answer.pop("nextCursor")
        answers.append(answer)
        if not cursor:
            return answers


def _flags(answers: list[Any]) -> tuple[set[tuple[int, Any]], list[int]]:
    shown = {(r["id"], r.get("matched_by")) for answer in answers for r in answer["results"]}
    return shown, [answer["totalMatches"] for answer in answers]


async def test_the_tail_read_from_the_database_ranks_exactly_as_the_index_would(tmp_path: Path) -> None:
    """The same conversation searched through an index holding all of it, none of it, and half."""
    engine, owner, store, _ = await _setup(tmp_path)
    full, empty, half = (DerivedIndex(tmp_path / name, engine, catch_up_every=None) for name in ("full", "empty", "half"))
    for n, text in enumerate(TRIP):
        await store.append(Message(owner.id, Role.OWNER if n % 2 == 0 else Role.ASSISTANT, text, "t",
                                      T0 + timedelta(hours=3 * n)))
        if n == len(TRIP) // 2:
            await half.warm()
    await full.warm()
    thread = await store.active_thread(owner.id)
    assert [v[1] if v else None for v in [await i.view(thread, 12) for i in (full, empty, half)]] == [12, 0, 7]
    for call in QUERIES:
        expected = await _walk(history_search(engine, store, full), owner, call)
        flags = _flags(expected)  # the database's own index flags and counts the same messages (its order may differ)
        assert _flags(await _walk(history_search(engine, store, None), owner, call)) == flags, call
        for index in (empty, half):
            assert await _walk(history_search(engine, store, index), owner, call) == expected, call
    for index in (full, empty, half):
        await index.close()
    await engine.dispose()


async def test_pages_keep_one_order_when_the_index_catches_up_between_them(tmp_path: Path) -> None:
    """Page one counted the newest messages from the tail; when the index held them by page
    two, they were counted twice (index and tail), "ferry" weighed less and the re-ranked
    window came out in another order: a result shown twice, another never."""
    engine, owner, store, _ = await _setup(tmp_path)
    index = DerivedIndex(tmp_path / "index", engine, catch_up_every=None)
    search = history_search(engine, store, index)
    n = 0
    for ferries in range(1, 6):
        for islands in range(1, 6):
            n += 1
            await _say(store, owner, n, " ".join(["ferry"] * ferries + ["island"] * islands + ["sea"] * (n % 3)))
    assert await index.ready_for(n)
    for k in range(20):  # the tail: not indexed when page one is read
        n += 1
        last = await _say(store, owner, n, f"the ferry again, day {k}")
    call = {"query": "ferry island", "limit": 5}
    paged, cursor = [], None
    while True:
        answer = await search.search(owner, history_args({**call, **({"cursor": cursor} if cursor else {})}))
        paged += [r["id"] for r in answer["results"]]
        if not (cursor := answer["nextCursor"]):
            break
        assert await index.ready_for(last)  # the index holds the tail from page two on
    whole = [r["id"] for r in (await search.search(owner, history_args({"query": "ferry island", "limit": 50})))["results"]]
    assert len(paged) == len(set(paged)) == 45 and paged == whole
    await index.close()
    await engine.dispose()


async def test_a_cursor_carries_counts_only_of_the_owner_s_own_thread(tmp_path: Path) -> None:
    """A cursor is readable (signed, not sealed): the database's counts cover every owner's
    messages, so only the derived index's, the thread's own, travel in it."""
    engine, ana, store, db = await _setup(tmp_path)
    bo = await OwnerStore(engine).add("bo", "UTC", (), T0)
    for n in range(5):
        await _say(store, bo, n, f"zanzibar again {n}")
    last = 0
    for n in range(2):
        last = await _say(store, ana, 10 + n, f"zanzibar {n}")
    index = DerivedIndex(tmp_path / "index", engine, catch_up_every=None)
    assert await index.ready_for(last)

    def carried(answer: dict[str, Any]) -> Any:
        body = answer["nextCursor"].split(".")[0]
        return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))).get("q")

    call = {"query": "zanzibar", "limit": 1}
    # two messages; "zanzibar" in both texts and in the second one's context (the first): Bo's five never count
    assert carried(await history_search(engine, store, index).search(ana, history_args(call))) == [2, {"zanzibar": 3}]
    assert carried(await history_search(engine, store, None).search(ana, history_args(call))) is None
    await index.close()
    await engine.dispose()


class _ReloadSpy:
    """tantivy's index (through ``wrap_tantivy``), telling at each reload whether the watermark
    already named a document the searcher could not yet see (a search checking the index
    then rebuilt it)."""

    def __init__(self, real: Any, derived: Callable[[], DerivedIndex]) -> None:
        self._real, self._derived, self.unseen = real, derived, []

    def reload(self) -> None:
        derived = self._derived()
        mark = derived.watermark
        self.unseen.append(bool(mark) and derived.reader.field_at(mark, "digest") is None)
        self._real.reload()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


async def test_the_watermark_moves_only_once_the_searcher_holds_its_document(tmp_path: Path) -> None:
    """Several workers saw ``search_index_rebuild reason=the database changed`` for no change:
    the watermark moved before the reader reloaded, and a search checking the index in
    between found no document at it."""
    engine, owner, store, db = await _setup(tmp_path)
    spies: list[_ReloadSpy] = []

    def watched(opened: Any) -> _ReloadSpy:
        spies.append(_ReloadSpy(opened, lambda: index))
        return spies[-1]

    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None, wrap_tantivy=watched)
    for n in range(1, 5):
        await _say(store, owner, n, f"ferry {n}")
        await index.warm()
    [spy] = spies
    assert len(spy.unseen) >= 4 and not any(spy.unseen)  # a reload a commit, each after the watermark's document
    await index.close()
    await engine.dispose()


async def test_a_snapshot_below_the_thread_s_last_indexed_message_still_bounds_every_read(tmp_path: Path) -> None:
    """The snapshot filter is left out only when the index holds none of the thread's messages
    past it; an earlier snapshot (a later page, written meanwhile) still ends every read there."""
    engine, owner, store, db = await _setup(tmp_path)
    index = DerivedIndex(db.with_name("nod.db.search"), engine, catch_up_every=None)
    ids = [await _say(store, owner, n, f"Harbour walk number {n}") for n in range(3)]
    assert await index.ready_for(ids[-1])
    thread = await store.active_thread(owner.id)
    latest, earlier = Scope(thread, ids[-1]), Scope(thread, ids[1])
    assert index.reader.count(("harbour",), latest) == 3 and index.reader.count(("harbour",), earlier) == 2
    assert {h.id for h in await index.reader.ranked(("harbour",), earlier, 10)} == set(ids[:2])
    assert await index.reader.newest(("harbour",), earlier, 10, 0) == [ids[1], ids[0]]
    places = await index.reader.at_places(("walk",), earlier, [0, 1, 2])
    assert {hit.id for hit, _ in places} == set(ids[:2])
    other = DerivedIndex(db.with_name("nod.db.search"), engine)  # another process: knows no thread's last
    assert await other.ready_for(ids[-1]) and other.reader.count(("harbour",), earlier) == 2
    await index.close()
    await engine.dispose()


async def test_the_index_s_check_reads_the_current_thread_as_the_database_does(
        engine: AsyncEngine, database_url: str, tmp_path: Path) -> None:
    """A search reads the owner's thread and snapshot in the index's check statement; it must
    agree with the database's own read before the first message, after one, after a reset,
    for another owner, and when the index cannot answer at all."""
    index = DerivedIndex(tmp_path / "search", engine)
    reads = ThreadReads(engine)
    store = MessageStore(engine, SystemClock())
    ana = await OwnerStore(engine).add("ana", "UTC", (), T0)
    bo = await OwnerStore(engine).add("bo", "UTC", (), T0)

    async def agree(owner: Owner) -> tuple[int, int] | None:
        usable, current = await index.usable_and_current(owner.id)
        assert usable and current == await reads.current(owner.id)
        return current

    assert await agree(ana) is None  # no thread yet
    first = await _say(store, ana, 1, "The blue door")
    assert await agree(ana) == (await store.active_thread(ana.id), first)
    assert await agree(bo) is None
    new_thread = await store.reset_thread(ana.id)
    assert await agree(ana) == (new_thread, 0)  # an empty thread: snapshot 0
    await index.close()
    blocked = tmp_path / "not-nod"
    blocked.mkdir()
    (blocked / "notes.txt").write_text("someone else's")
    refused = DerivedIndex(blocked, engine)
    assert await refused.usable_and_current(ana.id) == (False, (new_thread, 0))


async def test_what_another_owner_writes_moves_neither_the_frequencies_nor_the_order_of_an_owner_s_results(
        tmp_path: Path) -> None:
    engine, ana, store, db = await _setup(tmp_path)
    bo = await OwnerStore(engine).add("bo", "UTC", (), T0)
    index = DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine)
    assert index is not None
    search = history_search(engine, store, index)
    island = await _say(store, ana, 1, "The island")
    ferry = await _say(store, ana, 2, "The ferry")
    thread = await store.active_thread(ana.id)
    assert await index.ready_for(ferry)
    counts = await index.reader.frequencies(["island", "ferry"], thread)
    before = [r["id"] for r in (await search.search(ana, history_args({"query": "island ferry"})))["results"]]
    assert before == [ferry, island]  # "island" is also the ferry's context: the commoner word
    last = 0
    for n in range(30):  # another owner says "ferry" thirty times
        last = await _say(store, bo, 10 + n, f"Another ferry trip, number {n}")
    assert await index.ready_for(last)
    assert await index.reader.frequencies(["island", "ferry"], thread) == counts == (2, {"island": 2, "ferri": 1})
    after = [r["id"] for r in (await search.search(ana, history_args({"query": "island ferry"})))["results"]]
    assert after == before  # with index-wide counts "ferry" turned common and "island" came first
    await index.close()
    await engine.dispose()
