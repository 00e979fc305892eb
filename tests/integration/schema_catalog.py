"""What the migration tests read of a database's schema beyond Alembic's own comparison
(``adapters.storage.migrations.schema_differences``), and the one difference they forgive.

``compare_metadata`` checks tables, columns, types, nullability, server defaults, identities,
foreign keys, indexes by their columns and (on PostgreSQL) unique constraints. It does not
check SQLite's unique constraints, CHECK constraints, an index's WHERE or method (GIN), SQLite's AUTOINCREMENT, nor anything a Table
cannot declare: the FTS5 table and its trigger, PostgreSQL's trigger, function, text search
configuration and extension. ``catalog`` reads those from the backend's own catalog, in the
backend's own words (PostgreSQL's ``pg_get_*def``, SQLite's stored SQL), so two databases
made by different paths can be compared whole.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, inspect, text

# SQLite keeps a PRIMARY KEY column nullable unless NOT NULL is written (SQLite's documented
# legacy quirk), and the numbered migrations never wrote it: reflection reports their six
# single-column keys nullable where the baseline revision writes NOT NULL. Two are INTEGER
# PRIMARY KEY, SQLite's rowid, which never holds NULL whatever the column says; the other
# four (nod_meta, page_links, page_sessions, gmail_consents) take keys Nod always writes.
# Only these differences, only on SQLite, only for a database the numbered migrations made.
SQLITE_LEGACY_NULLABLE_KEYS = frozenset({
    ("gmail_connections", "owner_id"), ("outbox", "message_id"), ("nod_meta", "key"), ("page_links", "token_hash"),
    ("page_sessions", "session_hash"), ("gmail_consents", "state_hash"),
})


def is_legacy_sqlite_nullable_key(diff: Any) -> bool:
    """A ``modify_nullable`` None→NOT NULL on one of SQLITE_LEGACY_NULLABLE_KEYS."""
    if not isinstance(diff, list) or len(diff) != 1:
        return False
    kind, _schema, table, column, _existing, was, wanted = diff[0]
    return kind == "modify_nullable" and (table, column) in SQLITE_LEGACY_NULLABLE_KEYS and was is True and wanted is False


def _words(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _sqlite(conn: Connection) -> dict[str, Any]:
    rows = conn.execute(text("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")).all()
    inspector = inspect(conn)
    tables = [name for kind, name, _, sql in rows if kind == "table" and not (sql or "").startswith("CREATE VIRTUAL")
              and not name.startswith("search_fts")]
    return {
        "indexes": {name: _words(sql) for kind, name, _, sql in rows if kind == "index" and sql},
        "triggers": {name: _words(sql) for kind, name, _, sql in rows if kind == "trigger"},
        "virtual tables": {name: _words(sql) for kind, name, _, sql in rows if kind == "table"
                           and (sql or "").startswith("CREATE VIRTUAL")},
        "autoincrement": sorted(name for kind, name, _, sql in rows if kind == "table" and "AUTOINCREMENT" in (sql or "").upper()),
        "checks": {t: sorted(_words(c["sqltext"]) for c in inspector.get_check_constraints(t)) for t in tables},
        "uniques": {t: sorted(tuple(u["column_names"]) for u in inspector.get_unique_constraints(t)) for t in tables},
    }


def _postgresql(conn: Connection) -> dict[str, Any]:
    def pairs(sql: str) -> dict[str, str]:
        return {row[0]: _words(row[1]) for row in conn.execute(text(sql))}

    return {
        "indexes": pairs("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"),
        "constraints": pairs("SELECT conrelid::regclass::text || '.' || conname, pg_get_constraintdef(oid) FROM pg_constraint "
                             "WHERE connamespace = 'public'::regnamespace"),
        "triggers": pairs("SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal"),
        "functions": pairs("SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace"),
        "columns": pairs("SELECT table_name || '.' || column_name, concat_ws(' ', data_type, is_nullable, column_default, "
                         "is_identity, identity_generation, is_generated) FROM information_schema.columns "
                         "WHERE table_schema = 'public'"),
        "text search": [tuple(row) for row in conn.execute(text(
            "SELECT c.cfgname, m.maptokentype, m.mapseqno, m.mapdict::regdictionary::text FROM pg_ts_config_map m "
            "JOIN pg_ts_config c ON c.oid = m.mapcfg WHERE c.cfgnamespace = 'public'::regnamespace ORDER BY 1, 2, 3"))],
        "extensions": sorted(row[0] for row in conn.execute(text("SELECT extname FROM pg_extension"))),
    }


def catalog(conn: Connection) -> dict[str, Any]:
    """What ``differences`` cannot see, in the backend's words (Alembic's own version table left out)."""
    found = _sqlite(conn) if conn.dialect.name == "sqlite" else _postgresql(conn)
    for part in found.values():
        if isinstance(part, dict):
            for key in [k for k in part if k.startswith("alembic_version")]:
                del part[key]
    return found
