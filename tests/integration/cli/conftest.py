"""The ``nod`` command in process (``tests.cli_runner.run_nod``): each call as the shell would run it.

Refusals, exit statuses and stored data run ``bot.cli.main`` here, the same code without a
second of interpreter start-up per call; what only a process shows is in ``tests/e2e``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Protocol, TextIO

import pytest

from tests.cli_runner import Ran, run_nod
from tests.fakes.loopback import NOD_PREFIXES
from tests.templates import migrated_sqlite


class Nod(Protocol):
    def __call__(self, *argv: str, stdin: str | bytes | TextIO = "", **environment: str) -> Ran: ...


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and no Nod settings from the developer's shell; NOD_HOME is ``home/``
    inside it, with nothing in it yet."""
    for name in list(os.environ):
        if name.startswith(NOD_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOD_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def cli(bare: Path) -> Nod:
    """``cli(*argv, stdin="", **environment)``: ``nod ARGV`` in process, in ``bare``'s folder and
    environment plus ``environment``; its exit status and output."""
    def run(*argv: str, stdin: str | bytes | TextIO = "", **environment: str) -> Ran:
        return run_nod(argv, stdin=stdin, environ={**os.environ, **environment})
    return run


@pytest.fixture
def here(bare: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``bare`` with its own database at ``nod.db``, newly migrated: what ``nod init`` makes (a copy of
    the session's template, tests/templates.py; test_operator runs ``nod init`` itself)."""
    url = asyncio.run(migrated_sqlite(bare / "nod.db"))
    monkeypatch.setenv("NOD_DATABASE_URL", url)
    return bare
