"""Logging: one line per event through the standard ``logging`` module.

Lines carry owner and message ids, never message text, notes or secrets (unless
``NOD_LOG_TEXT`` is on for debugging), and libraries are held to the same rule by dropping
their records' arguments. URL credentials never reach a line, whoever logs them, tracebacks
included. Which library does what: docs/reliability.md (No text in logs).
"""

from __future__ import annotations

import logging
import re
import sys

_OWN = "nod"
_QUERY = re.compile(r"""[?#](?=[\w.~%-]*=)[^\s'"<>\\]*""")  # ?key=… or #key=… up to a space or a quote
_USERINFO = re.compile(r"(?<=://)[^/\s:@'\"]+:[^/\s@'\"]+@")  # scheme://user:password@host
_BOT_TOKEN = re.compile(r"bot\d{3,}:[\w-]{20,}")  # Telegram's token in its API's paths: /bot123:AAH…/sendMessage
# in a URL or a request line, a path segment of 20+ token characters that mixes letters with digits, or
# lower with upper case: a reset link's or a session's token. Counting digits let about 3 % of random
# 43-character tokens through (fewer than three digits); a mix misses about one in 10^6.
_URLISH = re.compile(r"""(?:[a-z][\w+.-]*://|\b(?:GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS) )[^\s'"<>]+""", re.I)
_PATH_TOKEN = re.compile(r"(?<=/)(?:(?=[\w-]*\d)(?=[\w-]*[A-Za-z])|(?=[\w-]*[a-z])(?=[\w-]*[A-Z]))[\w-]{20,}")


def redact_urls(text: str) -> str:
    """``text`` without URL credentials: query strings and fragments with values, user:password@,
    Telegram's bot token, and long random path segments of URLs and request lines."""
    text = _BOT_TOKEN.sub("bot…", _USERINFO.sub("…@", _QUERY.sub(lambda m: m.group()[0] + "…", text)))
    return _URLISH.sub(lambda m: _PATH_TOKEN.sub("…", m.group()), text)


class _UrlCredentials(logging.Filter):
    """Every record, its traceback included, with URL credentials replaced (``redact_urls``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a call with bad arguments: logging itself reports it, as before
            return True
        if "?" in message or "/" in message or "#" in message:
            record.msg, record.args = redact_urls(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_urls(record.exc_text)
        return True


class _LibraryArguments(logging.Filter):
    """A library's record keeps its message template and loses its arguments (data it was handed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and not (record.name == _OWN or record.name.startswith(_OWN + ".")):
            record.msg = f"{record.msg} [arguments withheld]"
            record.args = None
        return True


# held at WARNING whatever the level; twilio's client logs each request's headers at INFO,
# about ten lines per send; alembic says which DDL mode it assumes at every start (Nod logs
# what an upgrade did itself). Named here so whoever runs ``nod`` in process (the tests) can
# put these levels back afterwards.
QUIET_LIBRARIES = ("httpx", "aiosqlite", "asyncio", "sqlalchemy.engine", "asyncpg", "twilio", "alembic")


def configure_logging(level: str, log_text: bool = False) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    for handler in logging.getLogger().handlers:
        if not log_text:
            handler.addFilter(_LibraryArguments())
        handler.addFilter(_UrlCredentials())  # after the arguments are withheld: what is left is checked
    for noisy in QUIET_LIBRARIES:
        logging.getLogger(noisy).setLevel(logging.WARNING)
