"""``nod chat`` in process, its standard input bytes as a pipe gives them; the piped chat with a
model and commands stays a process test (tests/e2e/test_chat.py)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.cli.conftest import Nod


def test_chat_without_a_model_still_starts_and_says_how_to_configure_one(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    chat = cli("chat", "--owner", "ana", stdin="hello\n/quit\nnever read\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip().startswith("I can't answer yet: no model is configured.")
    assert "NOD_AGENT_MODEL" in chat.stdout and chat.stdout.count("no model is configured") == 1


def test_a_line_that_is_not_utf8_gets_a_sentence_and_the_chat_goes_on(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    chat = cli("chat", "--owner", "ana", stdin=b"caf\xe9 latin-1\n/help\n")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr
    blocks = [b for b in chat.stdout.split("\n\n") if b.strip()]
    assert blocks[0] == "That line is not UTF-8 text, so I skipped it." and blocks[1].startswith("I'm Nod")
