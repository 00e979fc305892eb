"""The migrated template the ``engine`` fixture copies (tests/templates.py) makes what ``migrate`` makes.

If it did not, every test on ``engine`` would run on a schema production never has; so a copy
is compared whole with a database migrated here from empty, on both backends: the same
revision, the same catalog (schema_catalog), the same rows in ``nod_meta`` but the two drawn
per database, which every copy draws again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from adapters.storage.database import create_engine
from adapters.storage.migrations import head, migrate, schema_differences, schema_state
from tests.conftest import drop_postgres_database
from tests.integration.schema_catalog import catalog
from tests.templates import migrated_postgres_url, migrated_sqlite

DRAWN = {"instance", "signing_key"}


async def _read(url: str) -> tuple[str | None, list[Any], dict[str, Any], dict[str, str]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            meta = {row[0]: row[1] for row in await conn.execute(text("SELECT key, value FROM nod_meta"))}
            return ((await schema_state(engine)).current, await conn.run_sync(schema_differences),
                    await conn.run_sync(catalog), meta)
    finally:
        await engine.dispose()


async def _copy(database_url: str, tmp_path: Path, name: str) -> str:
    if database_url.startswith("sqlite"):
        return await migrated_sqlite(tmp_path / name)
    return await migrated_postgres_url()


async def test_a_copy_of_the_template_is_the_database_migrate_makes_with_its_own_drawn_keys(
        database_url: str, tmp_path: Path) -> None:
    engine = create_engine(database_url)  # empty: this test does not take ``engine``
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    copies = [await _copy(database_url, tmp_path, f"copy{n}.db") for n in range(2)]
    try:
        migrated, *copied = [await _read(url) for url in (database_url, *copies)]
    finally:
        for url in copies:
            if url.startswith("postgresql"):
                await drop_postgres_database(url)
    for current, differences, schema, meta in copied:
        assert current == migrated[0] == head() and differences == migrated[1] == []
        assert schema == migrated[2]
        assert meta.keys() == migrated[3].keys() >= DRAWN
        assert {k: v for k, v in meta.items() if k not in DRAWN} == {k: v for k, v in migrated[3].items() if k not in DRAWN}
        assert all(len(meta[k]) == len(migrated[3][k]) for k in DRAWN)
    drawn = [tuple(meta[k] for k in sorted(DRAWN)) for *_, meta in (migrated, *copied)]
    assert len({value for values in drawn for value in values}) == 2 * len(drawn)  # none shared, between or within
