"""Table definitions used to build queries; the DDL itself lives in ``migrations``.

Keeping the DDL in numbered migrations (not ``metadata.create_all``) means a database
created a year ago and one created today reach the same schema by the same steps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
)

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

owners = Table(
    "owners",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String, nullable=False, unique=True),
    Column("time_zone", String, nullable=False),
    Column("settings", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("settings_version", Integer, nullable=False, default=0),
)

identities = Table(
    "identities",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("channel", String, nullable=False),
    Column("external_id", String, nullable=False),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
)

threads = Table(
    "threads",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("ended_at", UTCDateTime()),
)

messages = Table(
    "messages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("thread_id", Integer, ForeignKey("threads.id"), nullable=False),
    Column("role", String, nullable=False),
    Column("text", Text, nullable=False),
    Column("sent_at", UTCDateTime(), nullable=False),
    Column("channel", String, nullable=False),
    Column("external_id", String),
    Column("card_title", Boolean, nullable=False),
    Column("attachment", Boolean, nullable=False),
    Column("forwarded", Boolean, nullable=False),
    Column("secret", Boolean, nullable=False),
    Column("origin", String),
    Column("address", String),
    Column("awaiting", Boolean, nullable=False, default=False),
    Column("voice", Boolean, nullable=False, default=False),
    Column("voice_note", Text),
    Column("media", Text),  # a photo's or document's reference (core.attachments.model.MediaRef), never its bytes
    Column("platform_id", String),  # the platform's id of the message, by which an edit finds it
)

message_versions = Table(  # the text an edit replaced: kept, never searched
    "message_versions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("message_id", Integer, ForeignKey("messages.id"), nullable=False),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("text", Text, nullable=False),
    Column("replaced_at", UTCDateTime(), nullable=False),
)

nod_meta = Table(
    "nod_meta",
    metadata,
    Column("key", String, primary_key=True),
    Column("value", Text, nullable=False),
)

receipts = Table(
    "receipts",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("channel", String, primary_key=True),
    Column("external_id", String, primary_key=True),
    Column("kind", String, nullable=False),
    Column("received_at", UTCDateTime(), nullable=False),
)

outbox = Table(  # replies stored but not yet accepted by their channel
    "outbox",
    metadata,
    Column("message_id", Integer, ForeignKey("messages.id"), primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("stored_at", UTCDateTime(), nullable=False),
    Column("unprompted", Boolean, nullable=False, default=False),  # Nod spoke first: a resend may need WhatsApp's template
)

schedules = Table(
    "schedules",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("kind", String, nullable=False),
    Column("text", Text, nullable=False),
    Column("start_local", String, nullable=False),  # ISO 8601 without an offset: the owner's wall clock
    Column("repeat", String),
    Column("next_run_at", UTCDateTime()),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("created_from", Integer),
    Column("cancelled_at", UTCDateTime()),
)

schedule_runs = Table(
    "schedule_runs",
    metadata,
    Column("schedule_id", Integer, ForeignKey("schedules.id"), primary_key=True),
    Column("due_at", UTCDateTime(), primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("status", String, nullable=False),  # claimed | sent | missed | undelivered
    Column("claimed_at", UTCDateTime(), nullable=False),
    Column("reply_id", Integer),
    Column("told", Boolean, nullable=False, default=False),
    Column("attempts", Integer, nullable=False, default=0),
)

objects = Table(
    "objects",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("path", String, primary_key=True),
    Column("body", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)

usage = Table(
    "usage",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id")),
    Column("purpose", String, nullable=False),
    Column("model", String, nullable=False),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("outcome", String, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("cached_tokens", Integer, nullable=False, default=0),
    Column("estimated", Boolean, nullable=False, default=False),
)

page_links = Table(
    "page_links",
    metadata,
    Column("token_hash", String, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime()),
)

page_sessions = Table(
    "page_sessions",
    metadata,
    Column("session_hash", String, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("revoked_at", UTCDateTime()),
)

gmail_connections = Table(
    "gmail_connections",
    metadata,
    Column("owner_id", Integer, ForeignKey("owners.id"), primary_key=True),
    Column("sealed_token", Text, nullable=False),
    Column("connected_at", UTCDateTime(), nullable=False),
    Column("last_run_at", UTCDateTime()),
    Column("last_ok", Boolean, nullable=False, default=False),
    Column("sampled", Integer, nullable=False, default=0),
    Column("skipped", Integer, nullable=False, default=0),
    Column("outcome", Text),
    Column("reconnect", Boolean, nullable=False, default=False),
)

gmail_consents = Table(
    "gmail_consents",
    metadata,
    Column("state_hash", String, primary_key=True),
    Column("owner_id", Integer, ForeignKey("owners.id"), nullable=False),
    Column("session_hash", String),
    Column("sealed_verifier", Text),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime()),
)
