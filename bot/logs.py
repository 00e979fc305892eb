"""Logging: one line per event through the standard ``logging`` module.

Lines carry owner and message ids, never message text, notes or secrets; those appear
only when ``NOD_LOG_TEXT`` is on for debugging.
"""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    for noisy in ("httpx", "aiosqlite", "asyncio", "sqlalchemy.engine", "asyncpg"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
