"""The documented way to add a revision (docs/migrations.md), run for real: schema.py changes,
``python -m adapters.storage.new_revision`` writes the draft, and the draft makes a database equal
to the changed schema.py. In a process of its own: the change to schema.py stays there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from adapters.storage.migrations import SCRIPTS, revisions
from adapters.storage.new_revision import revision_id

_SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from alembic import command
    from sqlalchemy import Column, Index, Text
    from adapters.storage import schema
    from adapters.storage.database import create_engine, writing
    from adapters.storage.migrations import alembic_config, schema_differences
    from adapters.storage.new_revision import main

    versions, url = Path(sys.argv[1]), sys.argv[2]
    schema.owners.append_column(Column("nickname", Text))  # the change, made where every change starts
    Index("owners_nickname", schema.owners.c.nickname)
    assert main(["Owners: a nickname", "--versions", str(versions)]) == 0

    async def apply():
        engine = create_engine(url)
        async with writing(engine) as conn:
            def upgrade(sync):
                command.upgrade(alembic_config(versions, connection=sync), "head")
                return schema_differences(sync)
            left = await conn.run_sync(upgrade)
        await engine.dispose()
        return left

    print(json.dumps({"left": [repr(d) for d in asyncio.run(apply())]}))
""")


def test_a_change_to_schema_py_becomes_a_revision_that_makes_it(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    shutil.copytree(SCRIPTS / "versions", versions)
    ran = subprocess.run([sys.executable, "-c", _SCRIPT, str(versions), f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}"],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    wanted = revision_id(len(revisions()) + 1, "Owners: a nickname")
    assert wanted == f"{len(revisions()) + 1:04d}_owners_a_nickname"
    draft = (versions / f"{wanted}.py").read_text()
    assert f"revision = '{wanted}'" in draft and f"down_revision = '{revisions()[-1].revision}'" in draft
    assert "sa.Column('nickname', sa.Text(), nullable=True)" in draft and "'owners_nickname'" in draft
    assert "adapters.storage.schema" not in draft  # a revision is frozen: it names no type of schema.py
    assert "Why:" in draft and "raise NotImplementedError" in draft  # the template: say why; never downgrade
    assert json.loads(ran.stdout.splitlines()[-1]) == {"left": []}
    ruff = Path(sys.executable).with_name("ruff")
    if ruff.exists():  # the draft passes the project's lint as written, ready for review
        linted = subprocess.run([str(ruff), "check", "--config", str(Path(__file__).parents[2] / "pyproject.toml"),
                                 str(versions / f"{wanted}.py")], capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
    assert "Wrote " in ran.stdout and "a draft. Review it" in ran.stdout
