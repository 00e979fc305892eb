"""The ``nod`` process, for what only a process shows: the command pip installed, a pipe closed
under it, ``nod run`` listening and stopping on a signal, a second ``nod run`` refused. Every
other command is tested in process (tests/integration/cli)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.cli_runner import one_sentence, run_nod
from tests.fakes.loopback import clean_env, free_port, wait_listening

NOD = Path(sys.executable).with_name("nod")  # the command pip installed: [project.scripts] in pyproject.toml


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(**{"NOD_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", **extra})


def nod(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NOD, *args], cwd=tmp_path, env=_env(tmp_path, **extra), capture_output=True, text=True,
                          timeout=60)


def test_the_installed_command_keeps_owners_and_ends_quietly_on_a_closed_pipe(tmp_path: Path) -> None:
    """`nod owners list | head -1` printed "nod: Broken pipe." and failed. The status the shell
    sees comes after the interpreter's own flush of standard output at exit: only a process shows it."""
    assert run_nod(["init"], environ=_env(tmp_path), cwd=tmp_path).returncode == 0  # in process: nothing to see there
    added = nod(tmp_path, "owners", "add", "ana", "--telegram", "42", "--tz", "Europe/Lisbon")
    assert added.returncode == 0, added.stderr
    assert nod(tmp_path, "owners", "list").stdout == "ana\tEurope/Lisbon\ttelegram:42\n"
    read, write = os.pipe()
    os.close(read)  # the reader (head) is gone before nod writes
    try:
        closed = subprocess.run([NOD, "owners", "list"], cwd=tmp_path, env=_env(tmp_path), stdout=write,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert closed.returncode == 0 and closed.stderr == ""


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_run_serves_healthz_refuses_a_second_run_and_stops_cleanly(tmp_path: Path, stop_signal: int) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run"], cwd=tmp_path,
        env=_env(tmp_path, NOD_PORT=str(port)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_listening(proc, timeout=30)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            assert json.loads(response.read()) == {"status": "ok"}
        if stop_signal == signal.SIGTERM:  # a second server on the same SQLite file is refused
            second = nod(tmp_path, "run", NOD_PORT=str(free_port()))
            assert second.returncode == 1 and one_sentence(second).startswith(
                f"nod: Another nod run is serving {tmp_path / 'nod.db'}")
        else:  # on a database of its own, the port is taken: it printed a Python tuple of the address
            elsewhere = tmp_path / "elsewhere"
            elsewhere.mkdir()
            second = nod(elsewhere, "run", NOD_PORT=str(port))
            assert second.returncode == 1 and second.stderr == (
                f"nod: Port {port} on 127.0.0.1 is in use; set NOD_PORT to a free port or stop the program using it.\n")
        proc.send_signal(stop_signal)
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    assert (tmp_path / "nod.db").exists()
