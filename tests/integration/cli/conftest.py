"""The ``nod`` command in process (``bot.cli.main(argv)``): each call as the shell would run it.

Refusals, exit statuses and stored data run ``main`` here, the same code without a second of
interpreter start-up per call; the tests that start the real process (``nod run``, piped
``nod chat``, ``kill -9``) are in tests/e2e.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.loopback import NOD_PREFIXES


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


Nod = Callable[..., Ran]


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
def here(bare: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``bare`` with its own database, made as an operator would (``nod init``), at ``nod.db``."""
    monkeypatch.setenv("NOD_DATABASE_URL", f"sqlite+aiosqlite:///{bare / 'nod.db'}")
    assert main(["init"]) == 0
    return bare


@pytest.fixture
def cli(bare: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Nod:
    """``cli(*argv, stdin="", **environment)``: run ``nod`` in process; its exit status and output."""
    def run(*argv: str, stdin: str = "", **environment: str) -> Ran:
        capsys.readouterr()
        with monkeypatch.context() as patch:
            for name, value in environment.items():
                patch.setenv(name, value)
            patch.setattr(sys, "stdin", io.StringIO(stdin))
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's bad usage
                code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)
    return run


def one_sentence(result: Ran) -> str:
    """The single line of standard error a refusal prints (never a traceback)."""
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
