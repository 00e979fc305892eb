"""Alembic's environment for Nod: the connection and the options come from ``adapters.storage.migrations``.

Nod runs Alembic in code over its own engine (``nod run``, ``nod db upgrade``,
``python -m adapters.storage.new_revision``), which hands a connection over in
``config.attributes["connection"]`` inside a transaction it holds the migration lock in;
there is no alembic.ini and no offline (``--sql``) mode.
"""

from __future__ import annotations

from alembic import context

from adapters.storage.migrations import context_options

_connection = context.config.attributes.get("connection")
if _connection is None or context.is_offline_mode():
    raise RuntimeError("Nod's migrations run through `nod db upgrade` (or `python -m adapters.storage.new_revision` for a "
                       "new revision), which hand Alembic a connection; there is no alembic.ini.")
context.configure(connection=_connection, **context_options(context.config, _connection.dialect.name))
with context.begin_transaction():  # a no-op inside the caller's transaction: one upgrade, one transaction
    context.run_migrations()
