"""``run_nod`` leaves the test process as it found it, so in-process commands repeat and
the next test's logging, environment and folder are its own."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from bot.logs import QUIET_LIBRARIES
from tests.cli_runner import run_nod
from tests.integration.cli.conftest import Nod


def _logging() -> tuple[list[logging.Handler], int, dict[str, int]]:
    root = logging.getLogger()
    return root.handlers[:], root.level, {name: logging.getLogger(name).level for name in QUIET_LIBRARIES}


def test_a_command_leaves_logging_environment_folder_and_streams_as_they_were(
        cli: Nod, here: Path, caplog: pytest.LogCaptureFixture) -> None:
    before = (_logging(), dict(os.environ), Path.cwd(), (sys.stdin, sys.stdout, sys.stderr))
    elsewhere = here / "elsewhere"
    elsewhere.mkdir()
    ran = run_nod(["owners", "list"], environ={**os.environ, "NOD_LOG_LEVEL": "DEBUG"}, cwd=elsewhere)
    assert ran.returncode == 0 and ran.stdout == "No owners yet; add one with `nod owners add NAME`.\n", ran
    assert (_logging(), dict(os.environ), Path.cwd(), (sys.stdin, sys.stdout, sys.stderr)) == before
    logging.getLogger("nod.test").warning("logged after the command")
    assert "logged after the command" in caplog.text  # pytest's own handler is back on the root logger
    assert cli("owners", "list") == cli("owners", "list")


async def test_a_coroutine_is_told_to_run_it_in_a_thread(here: Path) -> None:
    with pytest.raises(AssertionError, match="asyncio.to_thread"):
        run_nod(["owners", "list"])
