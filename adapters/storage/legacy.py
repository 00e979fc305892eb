"""Nod's numbered migrations from before Alembic, kept only to bring such a database over.

Until Alembic, the schema grew by the numbered DDL steps in ``legacy_steps``, recorded in a
``schema_migrations`` ledger. A database that has that ledger and no Alembic revision gets
the steps it misses, applied exactly as the old code applied them, is stamped at ``STAMP``
(the revision whose schema is every step applied) and loses the ledger; Alembic takes it
on from there. ``adapters.storage.migrations`` does this inside its one locked transaction.

The ledger is dropped rather than kept beside ``alembic_version``: two records of one
schema would disagree from the next revision on, and an older Nod started on a database it
can no longer read stops at its first step ("table owners already exists") instead of
trusting a ledger nothing keeps up to date.
"""

from __future__ import annotations

from sqlalchemy import Connection, inspect, text

from adapters.storage.legacy_steps import MIGRATIONS, Migration

__all__ = ["LEDGER", "MIGRATIONS", "STAMP", "Migration", "applied", "apply_steps", "has_ledger", "retire_ledger"]

LEDGER = "schema_migrations"
# The revision whose schema equals every step in legacy_steps applied. A legacy step added
# later (one that shipped before its Alembic revision) moves this to the revision that does
# the same (docs/migrations.md).
STAMP = "0001_baseline"

_LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


def has_ledger(conn: Connection) -> bool:
    return inspect(conn).has_table(LEDGER)


def applied(conn: Connection) -> set[int]:
    """The step numbers the ledger records."""
    return {int(row[0]) for row in conn.execute(text("SELECT version FROM schema_migrations"))}


def apply_steps(conn: Connection, upto: int | None = None) -> list[int]:
    """Apply the steps the ledger lacks (up to ``upto``), in order and recorded, as the old
    ``migrate`` did; return their numbers. The caller holds the transaction and its lock."""
    conn.execute(text(_LEDGER_DDL))
    done = applied(conn)
    applied_now: list[int] = []
    for migration in MIGRATIONS:
        if migration.version in done or (upto is not None and migration.version > upto):
            continue
        for statement in migration.sqlite if conn.dialect.name == "sqlite" else migration.postgresql:
            conn.execute(text(statement))
        conn.execute(text("INSERT INTO schema_migrations (version, name, applied_at) VALUES (:v, :n, CURRENT_TIMESTAMP)"),
                     {"v": migration.version, "n": migration.name})
        applied_now.append(migration.version)
    return applied_now


def retire_ledger(conn: Connection) -> None:
    conn.execute(text(f"DROP TABLE {LEDGER}"))
