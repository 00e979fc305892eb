"""``nod`` run in this process: ``bot.cli.main(argv)`` as the shell would run it, without a second of start-up.

``run_nod`` gives the command its own environment, working folder, standard input and
output, and puts them back afterwards, with the logging ``main`` configures (its handler
writes to the standard error it was given). What only a process shows — ``nod run``
listening and stopping on a signal, a pipe closed at exit, ``kill -9`` — is for the process
tests in ``tests/e2e``.

Standard input is a text stream over bytes, as a pipe's is (``nod chat`` reconfigures it to
take bytes that are not UTF-8). Not for ``nod run`` (it hands faulthandler a real file
descriptor). From a coroutine, call it in a thread (``await asyncio.to_thread(run_nod, …)``):
``main`` runs its own event loop.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

import pytest

from bot.cli import main
from bot.logs import QUIET_LIBRARIES
from bot.settings import Settings


@dataclass(frozen=True)
class Ran:
    """What a shell sees of one command: its exit status and everything it wrote."""

    returncode: int
    stdout: str
    stderr: str


class Output(Protocol):  # a Ran, or subprocess.CompletedProcess[str] from a process test
    @property
    def stderr(self) -> str: ...


def run_nod(argv: Sequence[str], *, stdin: str | bytes | TextIO = "", environ: Mapping[str, str] | None = None,
            cwd: Path | None = None, settings: type[Settings] = Settings) -> Ran:
    """``nod ARGV`` in process. ``environ`` is the whole environment it sees (as a process's
    ``env=``; None: this process's own), ``cwd`` its working folder (None: this one),
    ``settings`` Nod's settings with the channels it knows (``Settings.with_channels``).

    Exit statuses are the shell's: ``main``'s return value, or argparse's ``SystemExit``
    (2 for bad usage, 0 for ``--help``). An exception ``main`` lets out is raised here, so the
    test fails on it where a process would have printed a traceback and exited 1.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise AssertionError("run_nod runs its own event loop: await asyncio.to_thread(run_nod, ...) instead")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, _logging_put_back():
        if environ is not None:
            for name in set(os.environ) - set(environ):
                patch.delenv(name)
            for name, value in environ.items():
                patch.setenv(name, value)
        if cwd is not None:
            patch.chdir(cwd)
        patch.setattr(sys, "stdin", _piped(stdin) if isinstance(stdin, str | bytes) else stdin)
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        try:
            code = main(list(argv), settings)
        except SystemExit as exc:  # as the interpreter turns it into a status
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return Ran(code, out.getvalue(), err.getvalue())


def _piped(data: str | bytes) -> TextIO:
    """What the interpreter makes of a pipe on standard input: UTF-8 text over a byte stream."""
    raw = data.encode() if isinstance(data, str) else data
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")


@contextmanager
def _logging_put_back() -> Iterator[None]:
    """The root logger without handlers while the command runs, as in a new process (so
    ``configure_logging``'s ``force=True`` closes none of pytest's), then its handlers and the
    levels ``configure_logging`` sets as they were: the next test finds logging as it left it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    quiet = {name: logging.getLogger(name).level for name in QUIET_LIBRARIES}
    for handler in handlers:
        root.removeHandler(handler)
    try:
        yield
    finally:
        for handler in root.handlers[:]:  # the command's own, writing to its standard error
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        for name, was in quiet.items():
            logging.getLogger(name).setLevel(was)


def one_sentence(result: Output) -> str:
    """The single line of standard error a refusal prints (never a traceback)."""
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
