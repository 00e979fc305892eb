"""Logging: one line per event through the standard ``logging`` module.

Lines carry owner and message ids, never message text, notes or secrets; those appear
only when ``NOD_LOG_TEXT`` is on for debugging. Libraries are held to the same rule:
their records' arguments (python-telegram-bot logs a whole unparsable update, with its
text, at CRITICAL) are dropped before anything is written.
"""

from __future__ import annotations

import logging
import sys

_OWN = "nod"


class _LibraryArguments(logging.Filter):
    """A library's record keeps its message template and loses its arguments (data it was handed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and not (record.name == _OWN or record.name.startswith(_OWN + ".")):
            record.msg = f"{record.msg} [arguments withheld]"
            record.args = None
        return True


def configure_logging(level: str, log_text: bool = False) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    if not log_text:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_LibraryArguments())
    # twilio's client logs each request's headers at INFO, about ten lines per send
    for noisy in ("httpx", "aiosqlite", "asyncio", "sqlalchemy.engine", "asyncpg", "twilio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
