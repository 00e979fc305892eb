"""Persistence on SQLAlchemy 2 (async): one code path for SQLite and PostgreSQL."""
