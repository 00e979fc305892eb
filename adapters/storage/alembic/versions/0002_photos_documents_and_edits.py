"""photos, documents and edits

Revision ID: 0002_photos_documents_and_edits
Revises: 0001_baseline
Create Date: 2026-12-06

Why: a message may carry a photo or document by the channel's reference (``media``, never its
bytes) and be edited on its platform (found by ``platform_id``); an edit keeps the text it
replaced in ``message_versions``, which nothing searches, and triggers move both full-text
indexes to the new words. Plain ALTERs, no batch mode: rebuilding ``messages`` on SQLite
would drop its search triggers. Frozen: it never imports schema.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_photos_documents_and_edits"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None

_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite's rowid is INTEGER
_PREVIOUS = """coalesce((SELECT p.text FROM messages p WHERE p.thread_id = {m}.thread_id AND p.id < {m}.id
            AND p.role != 'tool' ORDER BY p.id DESC LIMIT 1), '')"""
_NEXT = "FROM messages n WHERE n.thread_id = new.thread_id AND n.id > new.id AND n.role != 'tool' ORDER BY n.id LIMIT 1"
_SQLITE_EDITS = (
    f"""CREATE TRIGGER search_fts_edit AFTER UPDATE OF text ON messages
        WHEN new.role != 'tool' AND new.text != old.text BEGIN
        INSERT INTO search_fts (search_fts, rowid, text, context) VALUES ('delete', old.id, old.text,
            {_PREVIOUS.format(m="old")});
        INSERT INTO search_fts (rowid, text, context) VALUES (new.id, new.text,
            {_PREVIOUS.format(m="new")});
        INSERT INTO search_fts (search_fts, rowid, text, context) SELECT 'delete', n.id, n.text, old.text
            {_NEXT};
        INSERT INTO search_fts (rowid, text, context) SELECT n.id, n.text, new.text
            {_NEXT};
        END""",
)
_POSTGRESQL_EDITS = (
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


def upgrade() -> None:
    op.add_column("messages", sa.Column("media", sa.Text(), nullable=True))
    op.add_column("messages", sa.Column("platform_id", sa.Text(), nullable=True))
    op.create_index("messages_platform", "messages", ["owner_id", "channel", "platform_id"], unique=False,
                    sqlite_where=sa.text("platform_id IS NOT NULL"), postgresql_where=sa.text("platform_id IS NOT NULL"))
    op.create_table(
        "message_versions",
        sa.Column("id", _BIG_ID, sa.Identity(always=False), nullable=False),
        sa.Column("message_id", _BIG_ID, nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"]),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("message_versions_message", "message_versions", ["message_id"], unique=False)
    for statement in _SQLITE_EDITS if op.get_bind().dialect.name == "sqlite" else _POSTGRESQL_EDITS:
        op.execute(statement)


def downgrade() -> None:
    """Nod's schema only moves forward: restore a backup taken before the upgrade instead."""
    raise NotImplementedError("Nod's schema only moves forward; restore a backup taken before the upgrade.")
