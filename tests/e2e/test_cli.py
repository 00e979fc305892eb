"""The ``nod`` command as a process: owners kept between runs, and ``nod run`` serving and stopping on a signal.
Everything else the command does is tested in process (tests/integration/cli)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.loopback import clean_env, free_port, wait_listening


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(**{"NOD_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}", **extra})


def nod(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=tmp_path, env=_env(tmp_path, **extra), capture_output=True, text=True, timeout=60,
    )


def _one_sentence_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_owners_add_and_list(tmp_path: Path) -> None:
    assert nod(tmp_path, "init").returncode == 0
    added = nod(tmp_path, "owners", "add", "ana", "--telegram", "42", "--whatsapp", "+351911", "--tz", "Europe/Lisbon")
    assert added.returncode == 0, added.stderr
    listed = nod(tmp_path, "owners", "list")
    assert listed.stdout.strip() == "ana\tEurope/Lisbon\ttelegram:42, whatsapp:+351911"
    again = nod(tmp_path, "owners", "add", "ana")
    assert again.returncode == 1 and "already registered" in _one_sentence_error(again)
    linked = nod(tmp_path, "owners", "link", "ana", "--telegram", "43")
    assert linked.returncode == 0 and nod(tmp_path, "owners", "set", "ana", "--tz", "Asia/Tokyo").returncode == 0
    assert nod(tmp_path, "owners", "list").stdout.strip() == "ana\tAsia/Tokyo\ttelegram:42, whatsapp:+351911, telegram:43"
    taken = nod(tmp_path, "owners", "add", "bo", "--telegram", "43")
    assert taken.returncode == 1 and "already registered" in _one_sentence_error(taken)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_run_serves_healthz_and_stops_cleanly(tmp_path: Path, stop_signal: int) -> None:
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
            assert second.returncode == 1 and _one_sentence_error(second).startswith(
                f"nod: Another nod run is serving {tmp_path / 'nod.db'}")
        proc.send_signal(stop_signal)
        assert proc.wait(timeout=20) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    assert (tmp_path / "nod.db").exists()
