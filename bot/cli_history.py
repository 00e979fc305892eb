"""``nod history import``: JSON Lines messages into an owner's conversation, from a file or standard input.

Each line is ``{"role": "owner" | "assistant", "text", "sent_at", "id"?}``; ``"user"`` (what
other assistants' exports call the person) is taken as ``owner``. A re-run stores nothing
twice: a line's ``id``, or its time and hash, is its external id.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO
from zoneinfo import ZoneInfo

from adapters.storage.message_import import LEGACY_KEY_PREFIX, append_in_order, legacy_line_key, line_key
from adapters.storage.message_store import IMPORT_BATCH
from bot.cli_parser import STDIN
from bot.wiring import Services
from core.errors import InvalidInput
from core.message import Message, Role
from core.owner import Owner

IMPORT_CHANNEL = "import"


ROLES = {"owner": Role.OWNER, "user": Role.OWNER, "assistant": Role.ASSISTANT}  # "user": other assistants' word
ROLES_TAKEN = 'role "owner" (or "user") or "assistant"'


def _parse_line(number: int, line: str, zone_name: str, owner_id: int) -> tuple[Message, str | None]:
    """The line's message and, when it has no id of its own, the key earlier versions gave it.

    Every refusal names the line and what it lacks, in words, never a Python exception's name.
    """
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        raise InvalidInput(f"Line {number} is not JSON; each line is one message: {{{ROLES_TAKEN}, "
                           '"text", "sent_at" in ISO 8601}.') from None
    if not isinstance(data, dict):
        raise InvalidInput(f"Line {number} is not a JSON object with {ROLES_TAKEN}, text and sent_at.")
    missing = [name for name in ("role", "text", "sent_at") if name not in data]
    if missing:
        raise InvalidInput(f"Line {number} is not a message: it has no {' and no '.join(missing)} "
                           f"(need {ROLES_TAKEN}, text and sent_at in ISO 8601).")
    role, text = ROLES.get(data["role"]) if isinstance(data["role"], str) else None, data["text"]
    if role is None:
        raise InvalidInput(f"Line {number}: the role must be owner (or user) or assistant, not {data['role']!r}.")
    if not isinstance(text, str):
        raise InvalidInput(f"Line {number}: the text must be a string.")
    try:
        sent_at = datetime.fromisoformat(data["sent_at"])
    except (ValueError, TypeError):
        raise InvalidInput(f"Line {number}: sent_at must be an ISO 8601 time like 2024-05-01T10:00:00+01:00, "
                           f"not {data['sent_at']!r}.") from None
    external, legacy = data.get("id"), None
    if external is None:  # a stable id makes re-running the same file a no-op
        external, legacy = line_key(line, sent_at), legacy_line_key(line)  # the time as written: no zone added
    if sent_at.tzinfo is None:
        sent_at = sent_at.replace(tzinfo=ZoneInfo(zone_name))
    return Message(owner_id, role, text, IMPORT_CHANNEL, sent_at, str(external)), legacy


def _bar(done: float, width: int = 30) -> str:
    """``[#########·····]  31%``: how much of the file is read, for a terminal."""
    filled = min(width, int(done * width))
    return f"[{'#' * filled}{'·' * (width - filled)}] {min(100, int(done * 100)):>3}%"


@dataclass
class _Reading:
    """Where an import is in its file: the next line's number and the bytes read so far."""

    handle: TextIO
    owner: Owner
    counted: bool  # count bytes (for the progress bar) only on a terminal
    number: int = 0
    read: int = 0

    def next_batch(self) -> list[tuple[Message, str | None]]:
        """Up to IMPORT_BATCH messages parsed from the next lines, each with its legacy key
        (``_parse_line``); [] at the end of the file. Runs while the batch before is in
        SQLite's thread (adapters.storage.message_import)."""
        batch: list[tuple[Message, str | None]] = []
        for line in self.handle:
            self.number += 1
            self.read += len(line.encode("utf-8", "surrogatepass")) if self.counted else 0
            if line.strip():
                batch.append(_parse_line(self.number, line, self.owner.time_zone, self.owner.id))
                if len(batch) >= IMPORT_BATCH:
                    break
        return batch


async def history_import(svc: Services, owner_name: str, path: Path, progress: TextIO, stdin: TextIO | None = None) -> str:
    """Import a JSON Lines file (``-``: standard input) in batches of IMPORT_BATCH, in order,
    each batch its own transaction; lines are parsed while the batch before is being stored
    (adapters.storage.message_import). A bad line stops the import after the batches before it
    are stored."""
    owner = await svc.owners.by_name(owner_name)
    piped = str(path) == STDIN
    try:
        handle = stdin if piped and stdin is not None else path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from exc
    show = progress.isatty() and not piped  # a pipe has no size to show progress against
    total = max(path.stat().st_size, 1) if show else 1
    reading = _Reading(handle, owner, show)
    seen = 0
    # lines an earlier version imported carry its keys: looked up only where any exist
    legacy = await svc.messages.holds_keys_from(owner.id, IMPORT_CHANNEL, LEGACY_KEY_PREFIX)

    async def batches() -> AsyncIterator[list[Message]]:
        nonlocal seen
        while batch := reading.next_batch():
            seen += len(batch)
            if show and len(batch) >= IMPORT_BATCH:
                progress.write(f"\r{_bar(reading.read / total)} {seen:,} lines")
                progress.flush()
            known = await svc.messages.stored_keys(
                owner.id, IMPORT_CHANNEL, [k for _, k in batch if k is not None]) if legacy else set()
            yield [message for message, key in batch if key not in known]

    try:
        added = await append_in_order(svc.messages, owner.id, batches())
    except UnicodeDecodeError:
        raise InvalidInput(f"Line {reading.number + 1} of {path} is not UTF-8 text.") from None
    finally:
        if not piped:
            handle.close()
    if show:
        progress.write(f"\r{_bar(1.0)} {seen:,} lines\n")
    return f"Imported {added:,} new messages of {seen:,} lines for {owner.name}."


def stderr_progress() -> TextIO:
    return sys.stderr
