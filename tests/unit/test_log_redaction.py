"""URL credentials never reach a log line (issue 39, finding 6), and paths operators need stay readable."""

from __future__ import annotations

import pytest

from bot.logs import redact_urls

TOKEN = "aHQRYdLUkTr6GtufVe0D3_JpfbwqkAcFMUZRaHJMLg8"


@pytest.mark.parametrize(("line", "shown"), [
    (f"b'GET /settings/memory?t={TOKEN}&pad=xx'", "b'GET /settings/memory?…'"),
    ("GET /oauth/google/callback?state=abc&code=4/0Ab12 HTTP/1.1", "GET /oauth/google/callback?… HTTP/1.1"),
    ("https://example.com/reset-password/9f8e7d6c5b4a39281706f5e4d3c2b1a0 ok", "https://example.com/reset-password/… ok"),
    (f"GET /reset-password/{TOKEN} HTTP/1.1", "GET /reset-password/… HTTP/1.1"),
    # random tokens with few or no digits (about 3 % of 43-character ones have fewer than three)
    ("GET /reset-password/aHQRYdLUkTrXGtufVeXD_JpfbwqkAcFMUZRaHJMLgxy HTTP/1.1", "GET /reset-password/… HTTP/1.1"),
    ("GET /reset-password/aHQRYdLUkTr6GtufVeXD_JpfbwqkAcFMUZRaHJMLgxy HTTP/1.1", "GET /reset-password/… HTTP/1.1"),
    ("https://example.com/s/0123456789abcdef0123 ok", "https://example.com/s/… ok"),
    ("https://api.telegram.org/bot7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
     "https://api.telegram.org/bot…/sendMessage"),
    ("postgresql+asyncpg://nod:S3cret@db.example/nod", "postgresql+asyncpg://…@db.example/nod"),
    ("https://x.example/cb#access_token=abc123def&x=1", "https://x.example/cb#…"),
])
def test_credentials_in_urls_are_replaced(line: str, shown: str) -> None:
    assert redact_urls(line) == shown


@pytest.mark.parametrize("line", [
    "/srv/nod/backups/nod-2026-12-06T16-00-00.db",
    "/home/maya/projects/client2025-invoices-q3/nod.db",
    'File "/work/main/tests/integration/test_reliability_answers.py", line 3',
    "is this ok? yes",
    "telegram_send_failed code=400 attempt=2",
    "GET /settings/memory/notes/preferences/writing-style-and-tone-of-voice HTTP/1.1",
])
def test_files_and_plain_words_stay_readable(line: str) -> None:
    assert redact_urls(line) == line
