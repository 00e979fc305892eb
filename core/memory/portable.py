"""The lossless JSON export of one owner's memory, and the checks its import passes.

An import passes the rules every note passes and writes only to the owner the operator
names, so a file can move memory without smuggling anything in. Details: docs/memory.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from core.errors import InvalidInput, MemoryLimitError
from core.memory import limits
from core.memory.codec import encoded_size, from_json, to_json
from core.memory.values import Entry, MemoryDocument
from core.owner import Owner, OwnerSettings, check_time_zone
from core.schedules.model import MAX_ACTIVE, MAX_TEXT_CHARS, Schedule, parse_rule
from core.secrets import refuse_secrets

FORMAT = "nod-memory"
FORMAT_VERSION = 1
MAX_EXPORT_BYTES = 4 * limits.MAX_DOCUMENT_BYTES  # the memory part is at most 256 KiB; the rest is small


@dataclass(frozen=True)
class PortableSchedule:
    """A reminder or task as an export carries it: checked, not yet made again."""

    kind: str
    text: str
    at: datetime  # the owner's wall clock, naive
    repeat: str | None


@dataclass(frozen=True)
class Portable:
    """What an export holds, checked: ready to become an owner's memory and settings."""

    memory: MemoryDocument
    time_zone: str
    settings: OwnerSettings
    exported_from: str  # the owner's name where it was exported: shown, never used to find an owner
    document_version: int  # the version it was exported at: shown, the import's own check is on the target's
    schedules: tuple[PortableSchedule, ...] = ()


def export(owner: Owner, doc: MemoryDocument, version: int, schedules: Sequence[Schedule] = ()) -> dict[str, Any]:
    """The export of ``owner``'s memory ``doc`` read at ``version``, with their active ``schedules``."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "owner": {"name": owner.name, "time_zone": owner.time_zone, "settings": asdict(owner.settings)},
        "document_version": version,
        "memory": to_json(doc),
        "schedules": [{"kind": one.kind.value, "text": one.text, "at": one.start_local.replace(tzinfo=None).isoformat(),
                       "repeat": one.repeat} for one in schedules],
    }


def dumps(data: dict[str, Any]) -> str:
    """The export as text: indented, UTF-8 as written, one trailing newline."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"This is not a Nod memory export: {what} is not a JSON object.")
    return value


def _settings(raw: Any) -> OwnerSettings:
    data = _object(raw, "owner.settings")
    known = {f.name: f for f in fields(OwnerSettings)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InvalidInput(f"The export's settings has {unknown[0]!r}, which this version of Nod does not know.")
    for name, value in data.items():
        declared = str(known[name].type)  # "bool", "float | None", "str | None" (annotations are text here)
        if value is None and "None" in declared:
            continue
        if declared.startswith("bool"):
            fits = isinstance(value, bool)
        elif declared.startswith("float"):
            fits = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            fits = isinstance(value, str)
        if not fits:
            raise InvalidInput(f"The export's setting {name} is {value!r}, which is not a valid value.")
    settings = OwnerSettings(**data)
    return settings


def _check_entry(entry: Entry, where: str) -> None:
    """The limits a note was made under (core.memory.limits), checked without changing a byte."""
    try:
        limits.check_area(entry.area)
        limits.check_slug(entry.slug)
        if limits.check_text(entry.text) != entry.text or limits.check_abstract(entry.abstract) != entry.abstract:
            raise MemoryLimitError("its text or abstract has surrounding spaces or characters a note cannot hold")
        for evidence in entry.evidence:
            if evidence.quote is not None and limits.fit_quote(evidence.quote) != evidence.quote:
                raise MemoryLimitError(f"a support quote is over {limits.MAX_QUOTE} characters or blank")
    except MemoryLimitError as exc:
        raise InvalidInput(f"Not imported: {where} {entry.path} breaks a memory limit: {str(exc).rstrip('.')}.") from None
    refuse_secrets((("path", entry.slug.replace("-", " ")), ("text", entry.text), ("abstract", entry.abstract or ""),
                    *(("quote", e.quote or "") for e in entry.evidence), *(("entity", e) for e in entry.entities)))


def check_memory(doc: MemoryDocument) -> MemoryDocument:
    """``doc`` when it may be an owner's memory as it is; InvalidInput, MemoryFull or SecretRefused otherwise."""
    size = encoded_size(doc)
    if size > limits.MAX_DOCUMENT_BYTES:
        raise MemoryLimitError(f"Not imported: the memory is {size:,} bytes, over the {limits.MAX_DOCUMENT_BYTES:,} "
                               "a memory holds.")
    seen: set[str] = set()
    for entry in doc.entries:
        if entry.path in seen:
            raise InvalidInput(f"Not imported: the export has two notes at {entry.path}.")
        seen.add(entry.path)
        _check_entry(entry, "the note")
    for record in doc.archive:
        _check_entry(record.entry, "the archived note")
    for skill in doc.skills:
        refuse_secrets((("skill name", skill.name), ("skill description", skill.description), ("skill", skill.body)))
    return doc


def read(text: str) -> Portable:
    """An export's text, parsed and checked; one sentence (InvalidInput and kin) on the first problem."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_EXPORT_BYTES:
        raise MemoryLimitError(f"Not imported: the file is over {MAX_EXPORT_BYTES // 1024:,} KiB; a memory export is "
                               f"at most {limits.MAX_DOCUMENT_BYTES // 1024} KiB of memory and a little more.")
    try:
        data = _object(json.loads(text), "the file")
    except (ValueError, RecursionError):
        raise InvalidInput("This is not a Nod memory export: the file is not JSON "
                           "(`nod memory import` without --json reads Markdown).") from None
    if data.get("format") != FORMAT:
        raise InvalidInput(f"This is not a Nod memory export: its format is {data.get('format')!r}, not {FORMAT!r}.")
    if data.get("format_version") != FORMAT_VERSION:
        raise InvalidInput(f"This export's format_version is {data.get('format_version')!r}; this version of Nod reads "
                           f"{FORMAT_VERSION}: upgrade Nod to import it.")
    owner = _object(data.get("owner"), "owner")
    try:
        memory = from_json(_object(data.get("memory"), "memory"))
        settings = _settings(owner.get("settings", {}))
        zone = check_time_zone(str(owner.get("time_zone", "UTC")))
        version = int(data.get("document_version", 0))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"This is not a Nod memory export: a note, record or skill is incomplete ({_why(exc)}).") from None
    return Portable(check_memory(memory), zone, settings, str(owner.get("name", "")), version,
                    _schedules(data.get("schedules", [])))


def _schedules(raw: Any) -> tuple[PortableSchedule, ...]:
    """The export's schedules, each checked as the schedules tool checks one; refused whole otherwise."""
    if not isinstance(raw, list) or len(raw) > MAX_ACTIVE:
        raise InvalidInput(f"This export's schedules are not a list of at most {MAX_ACTIVE}.")
    found = []
    for one in raw:
        item = _object(one, "a schedule")
        kind, text, repeat = item.get("kind"), item.get("text"), item.get("repeat")
        if kind not in ("reminder", "task") or not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            raise InvalidInput("This export has a schedule without a kind (reminder or task) or a text of 1 to 1,000 characters.")
        if repeat is not None and not isinstance(repeat, str):
            raise InvalidInput("This export has a schedule whose repeat is not an RRULE.")
        try:
            at = datetime.fromisoformat(str(item.get("at")))
        except ValueError:
            raise InvalidInput("This export has a schedule whose time is not an ISO 8601 local date-time.") from None
        if repeat is not None:
            parse_rule(repeat, at.replace(tzinfo=None))
        refuse_secrets([("schedule text", text)])
        found.append(PortableSchedule(kind, text.strip(), at.replace(tzinfo=None), repeat))
    return tuple(found)


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"it has no {exc.args[0]}"
    return str(exc).rstrip(".") or "a value of the wrong kind"


def is_empty(doc: MemoryDocument) -> bool:
    """No notes, archive or skills: an import may fill it without ``--replace``."""
    return not (doc.entries or doc.archive or doc.skills)
