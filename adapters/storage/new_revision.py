"""``python -m adapters.storage.new_revision "what changed"``: Alembic's ``revision --autogenerate`` for Nod.

Nod has no alembic.ini, so this is the one way to start a revision: it brings a scratch
database (a temporary SQLite file, or ``--url``, an empty PostgreSQL database, left empty
afterwards) to the newest revision, compares it with schema.py through env.py's own options,
and writes ``versions/NNNN_slug.py``, numbered after the last. The file is a draft to review
(docs/migrations.md); with nothing to compare, ``--empty`` writes a blank one for a data change.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from adapters.storage.database import create_engine
from adapters.storage.migrations import alembic_config, schema_differences
from core.errors import InvalidInput

_ID_LENGTH = 32  # alembic_version.version_num is VARCHAR(32)


def revision_id(number: int, message: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")
    return f"{number:04d}_{slug}"[:_ID_LENGTH].rstrip("_")


def _write(conn: Connection, message: str, versions: Path | None, empty: bool) -> Path:
    config = alembic_config(versions, connection=conn)
    command.upgrade(config, "head")
    if not empty and not schema_differences(conn):
        raise InvalidInput("schema.py and the revisions agree: there is nothing to write (edit schema.py first, "
                           "or give --empty for a revision written by hand).")
    number = len(list(ScriptDirectory.from_config(config).walk_revisions())) + 1
    made = command.revision(config, message=message, autogenerate=not empty, rev_id=revision_id(number, message))
    assert made is not None and not isinstance(made, list)  # one revision, on the one head
    return Path(made.path)


async def write_revision(message: str, url: str | None = None, versions: Path | None = None, empty: bool = False) -> Path:
    """Write the next revision's draft and return its path; the scratch database keeps nothing."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(url or f"sqlite+aiosqlite:///{Path(scratch) / 'scratch.db'}")
        try:
            async with engine.connect() as conn:
                transaction = await conn.begin()
                try:
                    return await conn.run_sync(_write, message, versions, empty)
                finally:
                    await transaction.rollback()  # PostgreSQL's scratch stays empty (SQLite's file goes anyway)
        finally:
            await engine.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adapters.storage.new_revision", description=__doc__.splitlines()[0])
    parser.add_argument("message", help="what the revision changes, a few words (its id and file name come from them)")
    parser.add_argument("--url", help="an empty database to compare on, e.g. postgresql+asyncpg://…/scratch "
                                      "(default: a temporary SQLite file)")
    parser.add_argument("--empty", action="store_true", help="write a blank revision (a data change, or DDL by hand)")
    parser.add_argument("--versions", type=Path, help=argparse.SUPPRESS)  # tests: a copy of versions/
    args = parser.parse_args(argv)
    try:
        path = asyncio.run(write_revision(args.message, args.url, args.versions, args.empty))
    except InvalidInput as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    print(f"Wrote {path}: a draft. Review it before committing (docs/migrations.md): types as the DDL says them, "
          "server defaults, what SQLite's batch mode rebuilds, and each backend's own DDL.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
