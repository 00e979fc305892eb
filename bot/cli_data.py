"""The `nod` subcommands that act on stored data: owners, history import, memory, tools."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from bot.wiring import Services
from core.errors import InvalidInput, NotFound
from core.memory import document as memory_ops
from core.memory.codec import to_json
from core.memory.importer import ImportResult, import_answer
from core.memory.model import Entry, MemoryDocument, Origin
from core.memory.render import label_of, render_export
from core.message import NewMessage, Role, StoredMessage
from core.owner import Identity, Owner
from core.page.view import owners_sources
from core.ports import Changed
from core.storage.message_import import LEGACY_KEY_PREFIX, append_in_order, legacy_line_key, line_key
from core.storage.message_store import IMPORT_BATCH
from core.text import storable

IMPORT_CHANNEL = "import"


def _links(telegram: list[str], whatsapp: list[str]) -> tuple[Identity, ...]:
    links = tuple(Identity("telegram", _telegram_id(t)) for t in telegram)
    return links + tuple(Identity("whatsapp", _whatsapp_number(n)) for n in whatsapp)


async def owners_add(
    svc: Services, name: str, telegram: list[str], whatsapp: list[str], tz: str
) -> str:
    owner = await svc.owners.add(name, tz, _links(telegram, whatsapp), svc.clock.now())
    return f"Added owner {owner.name} (id {owner.id}, {owner.time_zone})."


async def owners_link(svc: Services, name: str, telegram: list[str], whatsapp: list[str]) -> str:
    owner = await svc.owners.by_name(name)
    links = _links(telegram, whatsapp)
    if not links:
        raise InvalidInput("Name at least one --telegram ID or --whatsapp +NUMBER to link.")
    for link in links:
        await svc.owners.link(owner.id, link)
    return f"Linked {', '.join(f'{i.channel}:{i.external_id}' for i in links)} to {owner.name}."


def _telegram_id(raw: str) -> str:
    if not raw.strip().isdigit():
        raise InvalidInput(f"A Telegram id is the owner's numeric user id (ask @userinfobot), not {raw!r}.")
    return raw.strip()


def _whatsapp_number(raw: str) -> str:
    number = raw.removeprefix("whatsapp:").replace(" ", "")
    if not number.startswith("+") or not number[1:].isdigit():
        raise InvalidInput(f"A WhatsApp number is +<digits>, not {raw!r}.")
    return number


async def owners_list(svc: Services) -> str:
    lines = []
    for owner, links in await svc.owners.all():
        linked = ", ".join(f"{i.channel}:{i.external_id}" for i in links) or "no channels"
        lines.append(f"{owner.name}\t{owner.time_zone}\t{linked}")
    return "\n".join(lines) if lines else "No owners yet; add one with `nod owners add NAME`."


def _parse_line(number: int, line: str, zone_name: str, owner_id: int) -> tuple[NewMessage, str | None]:
    """The line's message and, when it has no id of its own, the key earlier versions gave it."""
    try:
        data = json.loads(line)
        role = Role(data["role"])
        text = data["text"]
        sent_at = datetime.fromisoformat(data["sent_at"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(
            f"Line {number} is not a message: need role (owner or assistant), text and "
            f"sent_at in ISO 8601 ({type(exc).__name__})."
        ) from exc
    if role is Role.TOOL or not isinstance(text, str):
        raise InvalidInput(f"Line {number}: role must be owner or assistant, text a string.")
    external, legacy = data.get("id"), None
    if external is None:  # a stable id makes re-running the same file a no-op
        external, legacy = line_key(line, sent_at), legacy_line_key(line)  # the time as written: no zone added
    if sent_at.tzinfo is None:
        sent_at = sent_at.replace(tzinfo=ZoneInfo(zone_name))
    return NewMessage(owner_id, role, text, IMPORT_CHANNEL, sent_at, str(external)), legacy


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

    def next_batch(self) -> list[tuple[NewMessage, str | None]]:
        """Up to IMPORT_BATCH messages parsed from the next lines, each with its legacy key
        (``_parse_line``); [] at the end of the file. Runs while the batch before is in
        SQLite's thread (core.storage.message_import)."""
        batch: list[tuple[NewMessage, str | None]] = []
        for line in self.handle:
            self.number += 1
            self.read += len(line.encode("utf-8", "surrogatepass")) if self.counted else 0
            if line.strip():
                batch.append(_parse_line(self.number, line, self.owner.time_zone, self.owner.id))
                if len(batch) >= IMPORT_BATCH:
                    break
        return batch


async def history_import(svc: Services, owner_name: str, path: Path, progress: TextIO) -> str:
    """Import a JSON Lines file in batches of IMPORT_BATCH, in order, each batch its own
    transaction; lines are parsed while the batch before is being stored
    (core.storage.message_import). A bad line stops the import after the batches before it
    are stored."""
    owner = await svc.owners.by_name(owner_name)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from exc
    show = progress.isatty()
    total = max(path.stat().st_size, 1) if show else 1
    reading = _Reading(handle, owner, show)
    seen = 0
    # lines an earlier version imported carry its keys: looked up only where any exist
    legacy = await svc.messages.holds_keys_from(owner.id, IMPORT_CHANNEL, LEGACY_KEY_PREFIX)

    async def batches() -> AsyncIterator[list[NewMessage]]:
        nonlocal seen
        while batch := reading.next_batch():
            seen += len(batch)
            if show and len(batch) >= IMPORT_BATCH:
                progress.write(f"\r{_bar(reading.read / total)} {seen:,} lines")
                progress.flush()
            known = await svc.messages.stored_keys(
                owner.id, IMPORT_CHANNEL, [k for _, k in batch if k is not None]) if legacy else set()
            yield [message for message, key in batch if key not in known]

    with handle:
        added = await append_in_order(svc.messages, owner.id, batches())
    if show:
        progress.write(f"\r{_bar(1.0)} {seen:,} lines\n")
    return f"Imported {added:,} new messages of {seen:,} lines for {owner.name}."


async def memory_show(svc: Services, owner_name: str, as_json: bool) -> str:
    owner = await svc.owners.by_name(owner_name)
    doc = (await svc.memory.load(owner.id)).document
    if as_json:
        return json.dumps(to_json(doc), ensure_ascii=False, indent=2)
    if not doc.entries:
        return f"{owner.name}'s memory is empty."
    found = await owners_sources(doc, owner, svc.messages)
    return "\n".join(f"{e.path} [{label_of(e)}]: {e.text}{_sources(e, found, owner)}" for e in doc.entries)


def _sources(entry: Entry, found: dict[int, StoredMessage], owner: Owner) -> str:
    """The note's sources as the page shows them: the owner's message's date, and whether it was a voice note."""
    dates = []
    for evidence in entry.evidence:
        message = found.get(evidence.message_id)
        if message is not None:
            when = message.sent_at.astimezone(owner.zone).strftime("%Y-%m-%d %H:%M")
            dates.append(f"{when} (voice note)" if message.voice else when)
    return f"\n  sources: {', '.join(dates)}" if dates else ""


async def memory_add(
    svc: Services, owner_name: str, path: str, text: str, abstract: str | None, expires: str | None
) -> str:
    owner = await svc.owners.by_name(owner_name)
    try:
        expiry = date.fromisoformat(expires) if expires else None
    except ValueError as exc:
        raise InvalidInput(f"--expires is a date like 2027-01-31, not {expires!r}.") from exc
    now = svc.clock.now()
    entry = memory_ops.make_entry(
        path, text, origin=Origin.STATED, now=now, abstract=abstract, expires=expiry
    )

    def change(doc: MemoryDocument) -> MemoryDocument:
        if doc.get(entry.path) is not None:  # the page's edit: archive the old, keep the new
            return memory_ops.replace(doc, entry, (entry.path,), now)
        return memory_ops.add_entry(doc, entry)

    await svc.memory.update(owner.id, change)
    return f"Saved {entry.path}."


async def memory_forget(svc: Services, owner_name: str, path: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    await svc.memory.update(owner.id, lambda doc: memory_ops.forget(doc, path))
    return f"Forgot {path} and its archived versions."


async def memory_export(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    return render_export((await svc.memory.load(owner.id)).document, owner.name).rstrip("\n")


def stderr_progress() -> TextIO:
    return sys.stderr


async def memory_import(svc: Services, owner_name: str, path: Path) -> str:
    owner = await svc.owners.by_name(owner_name)
    try:
        answer = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read {path} as UTF-8 text.") from exc
    def change(doc: MemoryDocument) -> Changed[ImportResult]:
        imported = import_answer(doc, answer, svc.clock.now())
        return Changed(imported.document if imported.saved else doc, imported)

    result = (await svc.memory.apply(owner.id, change)).result
    lines = [f"Saved {len(result.saved)} notes, skipped {len(result.skipped)}."]
    # a skipped secret comes as "line N" and its kind, never its words: this goes to a terminal
    lines += [f"skipped {preview}: {why}" for preview, why in result.skipped]
    return "\n".join(lines)


def _json_args(raw: str) -> Any:
    """The arguments as JSON; anything json cannot read is one sentence (exit 1), never a crash.

    json raises three kinds: JSONDecodeError (with a position), a plain ValueError for an
    integer over Python's 4,300-digit limit, and RecursionError for nesting too deep.
    """
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"The tool's arguments are not JSON: {exc.msg} at character {exc.pos}.") from exc
    except ValueError as exc:
        raise InvalidInput("The tool's arguments are not JSON Nod can read: a number has more than 4,300 digits.") from exc
    except RecursionError as exc:
        raise InvalidInput("The tool's arguments are not JSON Nod can read: they are nested too deeply.") from exc


async def tool_run(svc: Services, owner_name: str, tool: str, raw_args: str) -> str:
    """One tool call as the agent makes it; a tool error is a refused action (exit 1)."""
    owner = await svc.owners.by_name(owner_name)
    result = await svc.tools.run(owner, tool, _json_args(raw_args))
    if set(result) == {"error"}:
        raise InvalidInput(result["error"])
    return json.dumps(result, ensure_ascii=False)


async def tool_batch(svc: Services, owner_name: str, lines: TextIO, out: TextIO) -> str:
    """JSON Lines ``{"tool", "args"}`` in, one JSON result a line out, in order."""
    owner = await svc.owners.by_name(owner_name)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            call = json.loads(line)
            name, args = call["tool"], call.get("args", {})
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):  # any line that is not a call
            result: dict[str, Any] = {"error": f"Line {number} is not {{\"tool\": ..., \"args\": {{...}}}}."}
        else:
            result = await svc.tools.run(owner, str(name), args)
        # storable: a lone surrogate echoed in an error would not encode, and end the batch
        out.write(storable(json.dumps(result, ensure_ascii=False)) + "\n")
        out.flush()
    return ""


async def page(svc: Services, owner_name: str, revoke: bool) -> str:
    """``nod page``: a sign-in link, or the owner's sessions ended."""
    owner = await svc.owners.by_name(owner_name)
    if svc.page is None:
        raise InvalidInput(svc.page_off)
    if revoke:
        ended = await svc.page.revoke(owner.id)
        return f"Ended {ended} page session{'s' if ended != 1 else ''} of {owner.name}."
    return await svc.page.link(owner.id)


async def skills_list(svc: Services, owner_name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    skills = (await svc.memory.load(owner.id)).document.skills
    lines = [f"{s.name}\t{s.description}" + ("\t(edited by the owner)" if s.edited_by_owner else "")
             for s in sorted(skills, key=lambda s: s.name)]
    return "\n".join(lines) if lines else f"{owner.name} has no learned skills yet."


async def skills_show(svc: Services, owner_name: str, name: str) -> str:
    owner = await svc.owners.by_name(owner_name)
    skill = next((s for s in (await svc.memory.load(owner.id)).document.skills if s.name == name), None)
    if skill is None:
        raise NotFound(f"{owner.name} has no learned skill named {name!r}.")
    return f"{skill.name}: {skill.description}\n\n{skill.body}"


async def skills_forget(svc: Services, owner_name: str, name: str) -> str:
    owner = await svc.owners.by_name(owner_name)

    def forgetting(doc: MemoryDocument) -> MemoryDocument:
        if not any(s.name == name for s in doc.skills):
            raise NotFound(f"{owner.name} has no learned skill named {name!r}.")
        return replace(doc, skills=tuple(s for s in doc.skills if s.name != name))

    await svc.memory.update(owner.id, forgetting)
    return f"Forgot the skill {name}."
