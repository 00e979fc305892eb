"""The whole schema, in one place: the SQLAlchemy metadata that queries are built from and
that Alembic compares the database with.

Every table, type, server default, constraint and index is declared here as the database
has it, so ``alembic.autogenerate.compare_metadata`` finds no difference on a database
made by the revisions in ``adapters/storage/alembic/versions`` or by Nod's older numbered
migrations (bar six primary keys those left nullable on SQLite; see
tests/integration/schema_catalog.py); a change starts here and becomes a revision
(docs/migrations.md).

What a Table cannot say, each backend's full-text search (SQLite's FTS5 table and its
trigger; PostgreSQL's search vector column, its GIN index, trigger function and text search
configuration), is declared below as DDL run after ``metadata.create_all`` and named in
``BACKEND_ONLY`` so a comparison knows to skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    event,
    false,
    text,
)
from sqlalchemy.dialects.sqlite import REAL

metadata = MetaData()


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out, on both backends.

    SQLite has no time zones: it stores the UTC wall time, which also sorts correctly as
    text. PostgreSQL keeps ``timestamptz``.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; give a time zone")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# Ids SQLite numbers with AUTOINCREMENT (never reused: a message id is shown to models) and
# PostgreSQL with an identity; the tables that own one say sqlite_autoincrement=True.
def _id(big: bool = False) -> Column[int]:
    kind = BigInteger().with_variant(Integer(), "sqlite") if big else Integer()
    return Column("id", kind, Identity(), primary_key=True)


# A message id referred to from another table: BIGINT like messages.id where the DDL said so.
_MESSAGE_ID = BigInteger().with_variant(Integer(), "sqlite")
# SQLite writes a false default as 0; two columns were added with the word false, and SQLite
# keeps a default's text as written, so they say it the same way here.
_FALSE = false()
_FALSE_WORD = text("false")
_ZERO = text("0")


owners = Table(
    "owners",
    metadata,
    _id(),
    Column("name", Text, nullable=False, unique=True),
    Column("time_zone", Text, nullable=False),
    Column("settings", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("settings_version", Integer, nullable=False, default=0, server_default=_ZERO),
    sqlite_autoincrement=True,
)

identities = Table(
    "identities",
    metadata,
    _id(),
    Column("channel", Text, nullable=False),
    Column("external_id", Text, nullable=False),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    UniqueConstraint("channel", "external_id"),
    sqlite_autoincrement=True,
)

threads = Table(
    "threads",
    metadata,
    _id(),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("ended_at", UTCDateTime()),
    sqlite_autoincrement=True,
)
Index("threads_one_active", threads.c.owner_id, unique=True,
      sqlite_where=threads.c.ended_at.is_(None), postgresql_where=threads.c.ended_at.is_(None))

messages = Table(
    "messages",
    metadata,
    _id(big=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("thread_id", Integer, ForeignKey("threads.id"), nullable=False),
    Column("role", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("sent_at", UTCDateTime(), nullable=False),
    Column("channel", Text, nullable=False),
    Column("external_id", Text),
    Column("card_title", Boolean, nullable=False, server_default=_FALSE),
    Column("attachment", Boolean, nullable=False, server_default=_FALSE),
    Column("forwarded", Boolean, nullable=False, server_default=_FALSE),
    Column("secret", Boolean, nullable=False, server_default=_FALSE),
    Column("origin", Text),
    Column("address", Text),  # who on the channel sent it: the reply goes there, also after a restart
    Column("awaiting", Boolean, nullable=False, default=False, server_default=_FALSE),  # its turn has not answered yet
    Column("voice", Boolean, nullable=False, default=False, server_default=_FALSE_WORD),
    Column("voice_note", Text),  # the channel's reference to audio not transcribed yet (JSON), never the audio
    Column("media", Text),  # a photo's or document's reference (core.attachments.media.MediaRef), never its bytes
    Column("platform_id", Text),  # the platform's id of the message, by which an edit finds it
    UniqueConstraint("owner_id", "channel", "external_id"),
    CheckConstraint("role IN ('owner', 'assistant', 'tool')"),
    sqlite_autoincrement=True,
)
Index("messages_thread_sent", messages.c.thread_id, messages.c.sent_at, messages.c.id)
Index("messages_owner_role", messages.c.owner_id, messages.c.role, messages.c.id)
Index("messages_thread_id", messages.c.thread_id, messages.c.id)  # a result's neighbours in its thread
# SQLite uses a partial index only for a query whose WHERE repeats the index's own term, and
# SQLAlchemy writes a boolean test there as "awaiting = 1"
Index("messages_awaiting", messages.c.owner_id, messages.c.id,
      sqlite_where=text("awaiting = 1"), postgresql_where=text("awaiting"))
Index("messages_platform", messages.c.owner_id, messages.c.channel, messages.c.platform_id,
      sqlite_where=text("platform_id IS NOT NULL"), postgresql_where=text("platform_id IS NOT NULL"))

message_versions = Table(  # the text an edit replaced: kept, never searched
    "message_versions",
    metadata,
    _id(big=True),
    Column("message_id", _MESSAGE_ID, ForeignKey("messages.id"), nullable=False),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("text", Text, nullable=False),
    Column("replaced_at", UTCDateTime(), nullable=False),
)
Index("message_versions_message", message_versions.c.message_id)

nod_meta = Table(  # this database's identity, the key that signs cursors, the health stamp
    "nod_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

receipts = Table(  # a command's delivery made idempotent the way a message's external id is
    "receipts",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("channel", Text, primary_key=True),
    Column("external_id", Text, primary_key=True),
    Column("kind", Text, nullable=False),
    Column("received_at", UTCDateTime(), nullable=False),
)

outbox = Table(  # replies stored but not yet accepted by their channel
    "outbox",
    metadata,
    Column("message_id", _MESSAGE_ID, ForeignKey("messages.id"), primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("stored_at", UTCDateTime(), nullable=False),
    # Nod spoke first: a resend may need WhatsApp's template
    Column("unprompted", Boolean, nullable=False, default=False, server_default=_FALSE),
)
Index("outbox_stored", outbox.c.stored_at)

schedules = Table(
    "schedules",
    metadata,
    _id(),  # no AUTOINCREMENT on SQLite: a schedule id is only the owner's handle for cancelling
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("start_local", Text, nullable=False),  # ISO 8601 without an offset: the owner's wall clock
    Column("repeat", Text),
    Column("next_run_at", UTCDateTime()),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("created_from", BigInteger),
    Column("cancelled_at", UTCDateTime()),
    CheckConstraint("kind IN ('reminder', 'task')"),
)
Index("schedules_due", schedules.c.next_run_at,
      sqlite_where=schedules.c.next_run_at.is_not(None), postgresql_where=schedules.c.next_run_at.is_not(None))
Index("schedules_owner", schedules.c.owner_id, schedules.c.id)

schedule_runs = Table(  # a run recorded once by (schedule, due time), in the transaction that claims it
    "schedule_runs",
    metadata,
    Column("schedule_id", Integer, ForeignKey("schedules.id"), primary_key=True),
    Column("due_at", UTCDateTime(), primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("status", Text, nullable=False),  # claimed | sent | missed | undelivered
    Column("claimed_at", UTCDateTime(), nullable=False),
    Column("reply_id", BigInteger),
    Column("told", Boolean, nullable=False, default=False, server_default=_FALSE),
    Column("attempts", Integer, nullable=False, default=0, server_default=_ZERO),
)
Index("schedule_runs_open", schedule_runs.c.status, schedule_runs.c.claimed_at)

objects = Table(
    "objects",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("path", Text, primary_key=True),
    Column("body", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)

usage = Table(
    "usage",
    metadata,
    _id(big=True),
    Column("owner_id", Integer, ForeignKey("owners.id")),
    Column("purpose", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("cost_usd", Double().with_variant(REAL(), "sqlite"), nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("outcome", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("cached_tokens", Integer, nullable=False, default=0, server_default=_ZERO),
    Column("estimated", Boolean, nullable=False, default=False, server_default=_FALSE_WORD),
    sqlite_autoincrement=True,
)
Index("usage_owner_time", usage.c.owner_id, usage.c.created_at)

# The memory page: sign-in links and sessions, each kept as a SHA-256 of its secret.
page_links = Table(
    "page_links",
    metadata,
    Column("token_hash", Text, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime()),
)

page_sessions = Table(
    "page_sessions",
    metadata,
    Column("session_hash", Text, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("revoked_at", UTCDateTime()),
)
Index("page_sessions_owner", page_sessions.c.owner_id)

# The Gmail writing style: the refresh token only sealed, the last run's counts, never a mail.
gmail_connections = Table(
    "gmail_connections",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("sealed_token", Text, nullable=False),
    Column("connected_at", UTCDateTime(), nullable=False),
    Column("last_run_at", UTCDateTime()),
    Column("last_ok", Boolean, nullable=False, default=False, server_default=_FALSE),
    Column("sampled", Integer, nullable=False, default=0, server_default=_ZERO),
    Column("skipped", Integer, nullable=False, default=0, server_default=_ZERO),
    Column("outcome", Text),
    Column("reconnect", Boolean, nullable=False, default=False, server_default=_FALSE),
)

gmail_consents = Table(
    "gmail_consents",
    metadata,
    Column("state_hash", Text, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("session_hash", Text),  # the page session it is bound to; NULL: a terminal's one-time record
    Column("sealed_verifier", Text),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime()),
)


# history_search matches a message by its own words and, weighted lower, by the words of the
# message just before it in its thread (tool messages left out), fixed when it is written.
SQLITE_SEARCH = (
    """CREATE VIRTUAL TABLE search_fts USING fts5(
        text, context, content='', tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER search_fts_insert AFTER INSERT ON messages WHEN new.role != 'tool' BEGIN
        INSERT INTO search_fts (rowid, text, context) VALUES (new.id, new.text, coalesce(
            (SELECT p.text FROM messages p WHERE p.thread_id = new.thread_id AND p.id < new.id
             AND p.role != 'tool' ORDER BY p.id DESC LIMIT 1), ''));
        END""",
    # an edit moves the index to the new words: the message's own entry and the next one's, whose context it is
    """CREATE TRIGGER search_fts_edit AFTER UPDATE OF text ON messages
        WHEN new.role != 'tool' AND new.text != old.text BEGIN
        INSERT INTO search_fts (search_fts, rowid, text, context) VALUES ('delete', old.id, old.text,
            coalesce((SELECT p.text FROM messages p WHERE p.thread_id = old.thread_id AND p.id < old.id
            AND p.role != 'tool' ORDER BY p.id DESC LIMIT 1), ''));
        INSERT INTO search_fts (rowid, text, context) VALUES (new.id, new.text,
            coalesce((SELECT p.text FROM messages p WHERE p.thread_id = new.thread_id AND p.id < new.id
            AND p.role != 'tool' ORDER BY p.id DESC LIMIT 1), ''));
        INSERT INTO search_fts (search_fts, rowid, text, context) SELECT 'delete', n.id, n.text, old.text
            FROM messages n WHERE n.thread_id = new.thread_id AND n.id > new.id AND n.role != 'tool' ORDER BY n.id LIMIT 1;
        INSERT INTO search_fts (rowid, text, context) SELECT n.id, n.text, new.text
            FROM messages n WHERE n.thread_id = new.thread_id AND n.id > new.id AND n.role != 'tool' ORDER BY n.id LIMIT 1;
        END""",
)
# PostgreSQL's english configuration keeps accents where SQLite's tokenizer removes them;
# nod_search folds them with unaccent (a trusted extension since PostgreSQL 13, so the
# database owner may create it) so both backends agree.
POSTGRESQL_SEARCH = (
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    "CREATE TEXT SEARCH CONFIGURATION nod_search (COPY = english)",
    """ALTER TEXT SEARCH CONFIGURATION nod_search
        ALTER MAPPING FOR hword, hword_part, word WITH unaccent, english_stem""",
    "ALTER TABLE messages ADD COLUMN search_tsv TSVECTOR",
    "CREATE INDEX messages_search_tsv ON messages USING GIN (search_tsv)",
    """CREATE FUNCTION nod_search_context() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.search_tsv := setweight(to_tsvector('nod_search', NEW.text), 'A') || setweight(
            to_tsvector('nod_search', coalesce((SELECT p.text FROM messages p
                WHERE p.thread_id = NEW.thread_id AND p.id < NEW.id AND p.role <> 'tool'
                ORDER BY p.id DESC LIMIT 1), '')), 'B');
        RETURN NEW;
    END $$""",
    """CREATE TRIGGER messages_search_context BEFORE INSERT ON messages
        FOR EACH ROW WHEN (NEW.role <> 'tool') EXECUTE FUNCTION nod_search_context()""",
    # an edit: the message's own vector again, and the next message's, whose context it is
    """CREATE TRIGGER messages_search_edit BEFORE UPDATE OF text ON messages
        FOR EACH ROW WHEN (NEW.role <> 'tool' AND NEW.text IS DISTINCT FROM OLD.text)
        EXECUTE FUNCTION nod_search_context()""",
    """CREATE FUNCTION nod_search_next() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE messages SET search_tsv = setweight(to_tsvector('nod_search', text), 'A')
            || setweight(to_tsvector('nod_search', NEW.text), 'B')
        WHERE id = (SELECT n.id FROM messages n WHERE n.thread_id = NEW.thread_id AND n.id > NEW.id
                    AND n.role <> 'tool' ORDER BY n.id LIMIT 1);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER messages_search_next AFTER UPDATE OF text ON messages
        FOR EACH ROW WHEN (NEW.role <> 'tool' AND NEW.text IS DISTINCT FROM OLD.text)
        EXECUTE FUNCTION nod_search_next()""",
)
for _dialect, _statements in (("sqlite", SQLITE_SEARCH), ("postgresql", POSTGRESQL_SEARCH)):
    for _statement in _statements:
        _ddl = DDL(_statement)  # type: ignore[no-untyped-call]  # SQLAlchemy's DDL() is not annotated
        event.listen(metadata, "after_create", _ddl.execute_if(dialect=_dialect))


@dataclass(frozen=True)
class BackendOnly:
    """What reflection finds on one backend that no Table declares: the search DDL above."""

    tables: frozenset[str] = frozenset()
    columns: frozenset[tuple[str, str]] = frozenset()  # (table, column)
    indexes: frozenset[str] = frozenset()


BACKEND_ONLY = {
    # FTS5's virtual table and the shadow tables it keeps its index in (a contentless
    # table has no _content); the trigger is invisible to reflection
    "sqlite": BackendOnly(tables=frozenset({"search_fts", "search_fts_data", "search_fts_idx", "search_fts_config",
                                            "search_fts_docsize"})),
    # the tsvector column the trigger fills and its GIN index; the function, trigger, text
    # search configuration and extension are invisible to reflection
    "postgresql": BackendOnly(columns=frozenset({("messages", "search_tsv")}),
                              indexes=frozenset({"messages_search_tsv"})),
}
