"""``nod init``, ``nod db`` and ``nod backup``: the operator's data directory, its schema and its copies.

``nod backup FILE`` uses SQLite's online backup API (``sqlite3.Connection.backup``): the whole
database is copied in one step inside one read transaction, so the copy is the database as
it was at one moment, while ``nod run`` goes on writing (WAL lets readers and the writer
pass each other). The copy is written beside FILE and renamed into place only once it is
whole and checked, so FILE is either a complete backup or absent; it is a single file (its
journal mode set back to DELETE), ready to be restored by copying it to ``NOD_HOME/nod.db``
(README, "Backup and restore"). PostgreSQL is backed up with its own tools: the command
says how, and exits 1 because it copied nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from adapters.storage.database import create_engine, describe, sqlite_file, storage_error
from adapters.storage.migrations import SchemaState, Upgrade, head, migrate, revisions, schema_state
from bot.home import MissingDatabase
from bot.settings import Settings
from bot.wiring import Services
from core.errors import AlreadyExists, InvalidInput, StorageError


async def init(svc: Services, settings: Settings, created: bool) -> str:
    """The database exists and its schema is current (``services`` migrated it); say where."""
    named = describe(settings.database_url, first=True)
    env = Path(settings.home or ".") / ".env"
    if created:
        return (f"Created {named[0].lower() + named[1:]} (schema revision {head()}). "
                f"Settings are read from {env} (see .env.example).")
    return f"{named} is ready (schema revision {head()}); nothing to create."


def _copy(source: Path, target: Path) -> tuple[int, int, int]:
    """Back ``source`` up into ``target``; its size, owners and messages."""
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with sqlite3.connect(source, timeout=30) as src, sqlite3.connect(partial) as dst:
            src.backup(dst)  # pages=-1: every page in one step, one snapshot
            dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
            (check,) = dst.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise StorageError(f"The copy of {source} did not pass SQLite's check ({check}); nothing was written.")
            owners = dst.execute("SELECT count(*) FROM owners").fetchone()[0]
            messages = dst.execute("SELECT count(*) FROM messages").fetchone()[0]
        src.close()
        dst.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        partial.rename(target)
    finally:
        partial.unlink(missing_ok=True)
    return target.stat().st_size, owners, messages


async def backup(settings: Settings, file: Path) -> str:
    """Copy the database without opening Nod on it: no migration, no index, not one write, so a
    backup never waits for ``nod run`` nor makes it wait."""
    source = sqlite_file(settings.database_url)
    if source is None:
        raise InvalidInput("nod backup copies a SQLite database, and this one is PostgreSQL: back it up with "
                           "`pg_dump --format=custom --file FILE DBNAME` and restore with `pg_restore` (docs/deploy.md).")
    if not source.exists():
        raise MissingDatabase(source.absolute())
    if file.exists():
        raise AlreadyExists(f"{file} already exists; nod backup never overwrites a file, so name a new one.")
    if not file.absolute().parent.is_dir():
        raise InvalidInput(f"There is no folder {file.absolute().parent} to write the backup in.")
    try:
        size, owners, messages = await asyncio.to_thread(_copy, source, file)
    except sqlite3.Error as exc:
        raise StorageError(f"The backup of {source} failed: {exc}.") from exc
    return f"Backed up {source} to {file} ({size:,} bytes: {owners} owners, {messages:,} messages)."


async def db(settings: Settings, action: str, as_json: bool = False) -> str:
    """``nod db upgrade|current|history``: the schema, read or brought up to date without opening the rest of Nod.

    ``current`` and ``history`` only read; ``upgrade`` applies what is pending, as ``nod run`` does at start.
    A database at a revision this Nod does not know is refused with a sentence by all three.
    """
    engine = create_engine(settings.database_url)
    try:
        if action == "upgrade":
            return _upgraded(await migrate(engine))
        state = await schema_state(engine)
    except (SQLAlchemyError, OSError) as exc:
        raise storage_error(exc, settings.database_url) from exc
    finally:
        await engine.dispose()
    if state.problem:
        raise StorageError(state.problem)
    if action == "current":
        return json.dumps(_current_json(state)) if as_json else _current(state)
    chain = [r.revision for r in revisions()]
    done = chain[:len(chain) - len(state.pending)] if state.legacy_version is None else []
    listed = [{"revision": r.revision, "applied": r.revision in done, "description": r.doc} for r in revisions()]
    if as_json:
        return json.dumps(listed)
    width = max(len(r) for r in chain)
    return "\n".join(f"{r['revision']:<{width}}  {'applied' if r['applied'] else 'pending'}  {r['description']}" for r in listed)


def _upgraded(done: Upgrade) -> str:
    said = []
    if done.stamped:
        steps = f"numbered migrations {', '.join(map(str, done.legacy_steps))} applied, then " if done.legacy_steps else ""
        said.append(f"{steps}the database of the numbered migrations taken over as {done.stamped}")
    said.append(f"applied {', '.join(done.applied)} now" if done.applied else
                "nothing else to apply" if done.stamped else "nothing to apply")
    return f"The schema is at revision {done.head} ({'; '.join(said)})."


def _current(state: SchemaState) -> str:
    """The revision, and what ``nod db upgrade`` would do when anything is pending."""
    if state.legacy_version is not None:
        steps = f"numbered migrations {', '.join(map(str, state.legacy_missing))}, then " if state.legacy_missing else ""
        rest = "".join(f", then {r}" for r in state.pending)
        return (f"numbered migration {state.legacy_version}, from before Alembic (pending: {steps}taking the database over "
                f"as {state.takeover}{rest}; `nod db upgrade` does it)")
    current = state.current or "none"
    return current if not state.pending else f"{current} (pending: {', '.join(state.pending)}; `nod db upgrade` applies them)"


def _current_json(state: SchemaState) -> dict[str, object]:
    return {"current": state.current, "head": head(), "pending": list(state.pending),
            "legacy_version": state.legacy_version, "legacy_missing": list(state.legacy_missing)}
