"""Schema migrations by Alembic, run at start (``nod run``) and by ``nod db upgrade``.

The revisions live in ``adapters/storage/alembic/versions`` and lead to ``schema.py``, the one
schema source (docs/migrations.md says how to add one). Alembic runs in code over Nod's own
async engine, the connection handed to ``env.py`` in ``config.attributes``: no alembic.ini.

An upgrade is one transaction under one lock, so processes starting together queue and the
later ones find nothing to do: PostgreSQL's advisory lock, SQLite's write lock (BEGIN
IMMEDIATE) taken before anything is read. Inside it a database of Nod's older numbered
migrations is taken over first (``legacy``), and a database at a revision this code does
not know (a newer Nod upgraded it) stops with a sentence before anything is touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext, MigrationInfo
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Identity, text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import legacy
from adapters.storage.database import writing
from adapters.storage.schema import BACKEND_ONLY, UTCDateTime, metadata
from core.errors import StorageError

__all__ = ["Revision", "SchemaState", "Upgrade", "alembic_config", "context_options", "head", "migrate", "revisions",
           "schema_differences", "schema_state"]

log = logging.getLogger("nod.storage")
SCRIPTS = Path(__file__).with_name("alembic")
_ADVISORY_LOCK_KEY = 7_406_131  # any constant: "this is Nod migrating" (the same one the numbered migrations took)


@dataclass(frozen=True)
class Revision:
    revision: str
    doc: str


@dataclass(frozen=True)
class Upgrade:
    """What one ``migrate`` did: legacy steps completed, the stamp, the revisions applied."""

    head: str
    applied: tuple[str, ...] = ()
    legacy_steps: tuple[int, ...] = ()
    stamped: str | None = None  # set when a database of the numbered migrations was taken over


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema stands, read without writing."""

    current: str | None  # the revision recorded, None before the first
    pending: tuple[str, ...]  # the revisions an upgrade would apply, oldest first
    legacy_version: int | None = None  # still on the numbered migrations: the highest applied
    legacy_missing: tuple[int, ...] = ()  # the numbered steps it lacks
    takeover: str | None = None  # the revision it would be stamped at, after those steps
    problem: str | None = None  # a sentence: the database is at a revision this code does not know


@cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def alembic_config(versions: Path | None = None, **attributes: Any) -> Config:
    """Alembic's configuration, made in code: this package's env.py and versions/ (or ``versions``,
    for the revision tool's tests), a revision's file named by its id; ``attributes`` reach env.py."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.set_main_option("path_separator", "os")
    config.set_main_option("file_template", "%%(rev)s")  # ids are NNNN_slug already (adapters.storage.new_revision)
    if versions is not None:
        config.set_main_option("version_locations", str(versions))
    config.attributes.update(attributes)
    return config


def revisions() -> list[Revision]:
    """Every revision, oldest first (the chain is linear: one head)."""
    return [Revision(s.revision, (s.doc or "").strip()) for s in reversed(list(_scripts().walk_revisions()))]


def head() -> str:
    return revisions()[-1].revision


def _after(current: str | None) -> tuple[str, ...]:
    chain = [r.revision for r in revisions()]
    return tuple(chain[chain.index(current) + 1:] if current else chain)


def _unknown(current: tuple[str, ...]) -> str | None:
    known = {r.revision for r in revisions()}
    strange = [r for r in current if r not in known]
    if not strange:
        return None
    return (f"The database's schema is at revision {', '.join(strange)}, which this version of Nod does not know: a newer "
            "Nod upgraded it. Run that version, or restore a backup taken before the upgrade.")


def _state(conn: Connection) -> SchemaState:
    current = MigrationContext.configure(conn).get_current_heads()
    problem = _unknown(current)
    if problem:
        return SchemaState(current[0], (), problem=problem)
    if not current and legacy.has_ledger(conn):
        done = legacy.applied(conn)
        missing = tuple(m.version for m in legacy.MIGRATIONS if m.version not in done)
        return SchemaState(None, _after(legacy.STAMP), legacy_version=max(done, default=0), legacy_missing=missing,
                           takeover=legacy.STAMP)
    found = current[0] if current else None
    return SchemaState(found, _after(found))


async def schema_state(engine: AsyncEngine) -> SchemaState:
    """Where the database stands; reads only (``nod doctor``, ``nod db current|history``)."""
    async with engine.connect() as conn:
        return await conn.run_sync(_state)


def _upgrade(conn: Connection) -> tuple[Upgrade, bool]:
    """The upgrade, and whether the database was new (no revision, no ledger)."""
    current = MigrationContext.configure(conn).get_current_heads()
    problem = _unknown(current)
    if problem:
        raise StorageError(problem)
    steps: list[int] = []
    stamped = None
    ledger = legacy.has_ledger(conn)
    if ledger:
        if not current:  # a database of the numbered migrations: completed, stamped, its ledger gone
            steps = legacy.apply_steps(conn)
            MigrationContext.configure(conn).stamp(_scripts(), legacy.STAMP)
            stamped = legacy.STAMP
        # else an older Nod started after the upgrade made an empty ledger again before it failed
        legacy.retire_ledger(conn)
    applied: list[str] = []
    command.upgrade(alembic_config(connection=conn, applied=applied), "head")
    return Upgrade(head(), tuple(applied), tuple(steps), stamped), not current and not ledger


async def migrate(engine: AsyncEngine) -> Upgrade:
    """Bring the database to the newest revision, in one transaction under the migration lock."""
    async with writing(engine) as conn:  # SQLite: BEGIN IMMEDIATE, the write lock before any read
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_LOCK_KEY})
        done, new = await conn.run_sync(_upgrade)
    if done.stamped:
        log.info("schema_taken_over numbered_steps=%s stamped=%s", ",".join(map(str, done.legacy_steps)) or "-", done.stamped)
    if done.applied:  # an existing database changed is news; a new one is told by whoever made it (nod init)
        log.log(logging.DEBUG if new else logging.INFO, "schema_upgraded revisions=%s head=%s", ",".join(done.applied), done.head)
    return done


def _include_object(dialect: str) -> Callable[..., bool]:
    """Leave out what reflection finds of a backend's search DDL (schema.BACKEND_ONLY): no
    Table declares it, so a comparison would otherwise propose to drop it."""
    only = BACKEND_ONLY.get(dialect)

    def include(obj: Any, name: str | None, type_: str, reflected: bool, _compare_to: Any) -> bool:
        if not reflected or only is None:
            return True
        if type_ == "table":
            return name not in only.tables
        if type_ == "column":
            return (obj.table.name, name) not in only.columns
        if type_ == "index":
            return name not in only.indexes
        return True

    return include


def _sqlite_server_default(_context: Any, _inspected: Any, _column: Any, inspected_default: str | None,
                           metadata_default: Any, _rendered: str | None) -> bool | None:
    """SQLite has no identity columns: an ``Identity()`` in the metadata renders nothing there (the
    rowid, with AUTOINCREMENT, numbers the row), so its absence is no difference. Anything else:
    Alembic's own comparison (None)."""
    if isinstance(metadata_default, Identity) and inspected_default is None:
        return False
    return None


def _render_item(type_: str, obj: Any, _context: Any) -> str | bool:
    """A revision writes the DDL type, never schema.py's decorator: revisions are frozen and must
    not change when schema.py does."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def context_options(config: Config, dialect: str) -> dict[str, Any]:
    """``context.configure``'s options for ``env.py``, and the comparison the tests make: types and
    server defaults compared, the backend's search DDL left out, batch operations on SQLite."""
    applied: list[str] | None = config.attributes.get("applied")

    def record(*, step: MigrationInfo, **_: Any) -> None:
        if applied is not None and step.up_revision_id is not None:
            applied.append(step.up_revision_id)

    return {
        "target_metadata": metadata,
        "compare_type": True,
        # a callable on PostgreSQL would meet reflected identities Alembic's hook cannot read
        "compare_server_default": _sqlite_server_default if dialect == "sqlite" else True,
        "include_object": _include_object(dialect),
        "render_as_batch": dialect == "sqlite",  # SQLite alters most things only by copying the table
        "render_item": _render_item,
        "on_version_apply": record,
    }


def schema_differences(conn: Connection) -> list[Any]:
    """What Alembic's autogenerate would write for this database: ``compare_metadata`` with the
    options env.py uses (empty when the database has schema.py's schema)."""
    options = context_options(Config(), conn.dialect.name)
    chosen = {k: options[k] for k in ("compare_type", "compare_server_default", "include_object")}
    return list(compare_metadata(MigrationContext.configure(conn, opts=chosen), metadata))
