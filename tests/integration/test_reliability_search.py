"""history_search against hostile state and hostile input (issue 14: findings 1, 3 and 9).

A derived index left beside a restored or replaced database, cursors forged by a model,
and numbers and dates no engine can take: none of it may show one owner's words to
another, abort the process or end in anything but a sentence.
"""

from __future__ import annotations

import base64
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine
from adapters.storage.memory_store import MemoryStore
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from bot.wiring import history_search
from core.clock import SystemClock
from core.history.search import HistorySearch
from core.message import Message, Role
from core.owner import Owner
from core.tools.registry import Toolbox
from tests.tool_calls import history_args, toolbox

T0 = datetime(2025, 3, 1, tzinfo=UTC)


async def _open(db: Path) -> tuple[AsyncEngine, MessageStore, HistorySearch]:
    engine = create_engine(f"sqlite+aiosqlite:///{db}")
    await migrate(engine)
    store = MessageStore(engine, SystemClock())
    return engine, store, history_search(engine, store, DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine))


async def _say(store: MessageStore, owner: Owner, texts: list[str]) -> list[int]:
    ids = []
    for n, words in enumerate(texts):
        stored = await store.append(Message(owner.id, Role.OWNER, words, "t", T0 + timedelta(minutes=n)))
        ids.append(stored.message.id)
    return ids


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


def _texts(answer: dict) -> list[str]:  # type: ignore[type-arg]
    shown = [r["text"] for r in answer["results"]]
    shown += [n["text"] for r in answer["results"] for n in (r.get("before"), r.get("after")) if n]
    return shown


async def test_a_replaced_database_rebuilds_its_index_and_shows_no_other_owners_words(tmp_path: Path) -> None:
    db = tmp_path / "nod.db"
    engine, store, search = await _open(db)
    ana = await OwnerStore(engine).add("ana", "UTC", (), T0)
    await _say(store, ana, ["the lighthouse code is under the mat", "lighthouse keys with Rui", "lighthouse at dawn"])
    assert (await search.search(ana, history_args({"query": "lighthouse"})))["totalMatches"] == 3  # the index now holds them
    await engine.dispose()
    _remove(db)  # the database goes; nod.db.search/ stays
    engine, store, search = await _open(db)
    owners = OwnerStore(engine)
    bo, cleo = await owners.add("bo", "UTC", (), T0), await owners.add("cleo", "UTC", (), T0)
    await _say(store, bo, ["my lighthouse trip was lovely"])
    await _say(store, cleo, ["cleo's private lighthouse diary", "cleo's lighthouse plans"])
    answer = await search.search(bo, history_args({"query": "lighthouse"}))
    assert _texts(answer) == ["my lighthouse trip was lovely"] and answer["totalMatches"] == 1
    answer = await search.search(cleo, history_args({"query": "lighthouse"}))
    assert set(_texts(answer)) == {"cleo's lighthouse plans", "cleo's private lighthouse diary"}
    await engine.dispose()


async def test_a_replaced_database_whose_ids_mean_other_messages_is_never_searched_through_the_old_index(
    tmp_path: Path,
) -> None:
    """The same ids, other texts: an index trusted without its check would list message 1
    (which held the word in the old database) and miss message 4."""
    db = tmp_path / "nod.db"
    engine, store, _ = await _open(db)  # the index is caught up by hand below, not by a search
    ana = await OwnerStore(engine).add("ana", "UTC", (), T0)
    said = await _say(store, ana, ["lighthouse at dawn", "harbour walk", "rain again", "quiet evening"])
    index = DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine)
    assert index is not None and await index.ready_for(said[-1]) and index.watermark == 4
    await index.close()
    await engine.dispose()
    _remove(db)  # the database goes; nod.db.search/ stays, holding ids 1-4
    engine, store, search = await _open(db)
    bo = await OwnerStore(engine).add("bo", "UTC", (), T0)
    await _say(store, bo, ["tea at noon", "bread", "jam", "lighthouse keys"])
    answer = await search.search(bo, history_args({"query": "lighthouse"}))
    assert answer["results"][0]["text"] == "lighthouse keys"
    assert not {"tea at noon", "bread"} & {r["text"] for r in answer["results"]}
    await engine.dispose()


async def test_a_database_restored_from_a_backup_is_caught_by_the_digest_of_its_last_row(tmp_path: Path) -> None:
    db = tmp_path / "nod.db"
    engine, store, search = await _open(db)
    owners = OwnerStore(engine)
    ana, bo = await owners.add("ana", "UTC", (), T0), await owners.add("bo", "UTC", (), T0)
    await _say(store, ana, ["harbour walk"])
    await engine.dispose()
    shutil.copy(db, tmp_path / "backup.db")  # same database, same identity, one message
    engine, store, search = await _open(db)
    await _say(store, ana, ["harbour secret: the safe opens with 1975", "harbour lunch"])
    assert (await search.search(ana, history_args({"query": "harbour"})))["totalMatches"] == 3
    await engine.dispose()
    _remove(db)
    shutil.copy(tmp_path / "backup.db", db)  # restored: ids 2 and 3 will be written again
    engine, store, search = await _open(db)
    await _say(store, bo, ["bo's harbour photos", "bo's harbour boat"])
    answer = await search.search(bo, history_args({"query": "harbour"}))
    assert set(_texts(answer)) == {"bo's harbour boat", "bo's harbour photos"}
    assert all("1975" not in t for t in _texts(await search.search(ana, history_args({"query": "harbour safe"}))))
    await engine.dispose()


async def _paged(tmp_path: Path) -> tuple[AsyncEngine, Toolbox, Owner, dict]:  # type: ignore[type-arg]
    engine, store, search = await _open(tmp_path / "nod.db")
    owner = await OwnerStore(engine).add("ana", "UTC", (), T0)
    await _say(store, owner, [f"boat trip number {n}" for n in range(15)])
    tools = toolbox(MemoryStore(ObjectStore(engine), SystemClock()), store, search)
    first = await tools.read_for_operator(owner, "history_search", {"query": "boat", "limit": 5})
    assert first["nextCursor"]
    return engine, tools, owner, first


def _forge(cursor: str, **changes: int) -> str:
    body, _, signature = cursor.partition(".")
    data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    data.update({"o" if k == "offset" else "s": v for k, v in changes.items()})
    raw = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{raw}.{signature}"


async def test_a_forged_cursor_is_refused_with_a_sentence(tmp_path: Path) -> None:
    engine, tools, owner, first = await _paged(tmp_path)
    second = await tools.read_for_operator(owner, "history_search", {"query": "boat", "limit": 5, "cursor": first["nextCursor"]})
    assert len(second["results"]) == 5  # a real cursor pages on
    for forged in (_forge(first["nextCursor"], offset=2**40), _forge(first["nextCursor"], snapshot=2**63),
                   _forge(first["nextCursor"], offset=6), first["nextCursor"].split(".")[0], "!!", "a.b.c"):
        result = await tools.read_for_operator(owner, "history_search", {"query": "boat", "limit": 5, "cursor": forged})
        assert result == {"error": "That cursor is not one history_search returned; search again without it."}
    await engine.dispose()


async def test_a_validly_signed_cursor_still_cannot_ask_for_an_unbounded_offset(tmp_path: Path) -> None:
    from core.history.cursor import MAX_STEMS, Cursor, encode, fingerprint  # as if the key had leaked

    engine, tools, owner, first = await _paged(tmp_path)
    async with engine.connect() as conn:
        key = bytes.fromhex((await conn.execute(text("SELECT value FROM nod_meta WHERE key = 'signing_key'"))).scalar_one())
    body = first["nextCursor"].split(".")[0]
    printed = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))["f"]
    for forged in (Cursor(printed, 2**40, 2**30), Cursor(printed, 10_001, 2**30), Cursor(printed, 5, 2**30, None, 2**40),
                   Cursor(printed, 5, 2**30, None, -1), Cursor(printed, 5, 2**30, None, 11),
                   Cursor(printed, 5, 2**30, None, 0, (2**70, ())), Cursor(printed, 5, 2**30, None, 0, (-1, ())),
                   Cursor(printed, 5, 2**30, None, 0, (9, (("boat", -5),))),
                   Cursor(printed, 5, 2**30, None, 0, (9, tuple((f"s{n}", 1) for n in range(MAX_STEMS + 1))))):
        token = encode(forged, key)
        result = await tools.read_for_operator(owner, "history_search", {"query": "boat", "limit": 5, "cursor": token})
        assert "error" in result and "cursor" in result["error"]
    assert fingerprint({}) != printed
    await engine.dispose()


@pytest.mark.parametrize("args", [
    {"query": "boat", "to": "9999-12-31"}, {"query": "boat", "from": "0001-01-01"},
    {"query": "boat", "before": "9999-12-31T23:59:59"}, {"around": 2**63}, {"around": "9" * 30},
    {"around": -1}, {"query": "boat", "limit": 2**70}, {"query": "boat", "limit": "10"},
    {"query": "boat", "from": "2025-13-01"}, {"query": "x" * 20_000},
])
async def test_numbers_and_dates_no_engine_can_take_are_a_sentence(tmp_path: Path, args: dict) -> None:  # type: ignore[type-arg]
    engine, store, search = await _open(tmp_path / "nod.db")
    owner = await OwnerStore(engine).add("ana", "UTC", (), T0)
    await _say(store, owner, ["boat"])
    tools = toolbox(MemoryStore(ObjectStore(engine), SystemClock()), store, search)
    result = await tools.read_for_operator(owner, "history_search", args)
    assert set(result) == {"error"} and result["error"].endswith(".") and "unexpected" not in result["error"]
    await engine.dispose()


async def test_a_restore_that_rewrites_the_middle_but_not_the_last_row_is_still_caught(tmp_path: Path) -> None:
    db = tmp_path / "nod.db"
    engine, store, search = await _open(db)
    ana = await OwnerStore(engine).add("ana", "UTC", (), T0)
    await _say(store, ana, ["apple pie"])
    await engine.dispose()
    shutil.copy(db, tmp_path / "backup.db")
    engine, store, search = await _open(db)
    await store.append(Message(ana.id, Role.OWNER, "pear tart", "t", T0 + timedelta(minutes=1)))
    last = Message(ana.id, Role.OWNER, "plum jam", "t", T0 + timedelta(minutes=2))
    await store.append(last)
    assert (await search.search(ana, history_args({"query": "pear"})))["totalMatches"] > 0  # indexed up to the last row
    await engine.dispose()
    _remove(db)
    shutil.copy(tmp_path / "backup.db", db)
    engine, store, search = await _open(db)  # a new process: its first check samples the whole index
    await store.append(Message(ana.id, Role.OWNER, "apple crumble", "t", T0 + timedelta(minutes=1)))
    await store.append(last)  # the same last row as the index holds: only the sample can tell
    answer = await search.search(ana, history_args({"query": "apple"}))
    assert answer["totalMatches"] == 3 and (await search.search(ana, history_args({"query": "pear"})))["totalMatches"] == 0
    await engine.dispose()
