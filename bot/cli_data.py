"""The `nod` subcommands that act on one owner's memory, skills, page and tools.

Owners are in ``bot.cli_owners``, history import in ``bot.cli_history``, the JSON export,
import and archive in ``bot.cli_memory``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from typing import Any, TextIO

from bot.wiring import Services
from core.errors import InvalidInput, NotFound
from core.memory import document as memory_ops
from core.memory.codec import skill_to_json, to_json
from core.memory.importer import ImportResult, import_answer
from core.memory.render import label_of, render_export
from core.memory.values import Entry, MemoryDocument, Origin
from core.message import StoredMessage
from core.owner import Owner
from core.page.view import owners_sources
from core.ports import Changed
from core.text import storable


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


async def memory_import(svc: Services, owner_name: str, answer: str) -> str:
    """Another assistant's answer, or Nod's own Markdown export, saved as stated notes (core.memory.importer)."""
    owner = await svc.owners.by_name(owner_name)

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
    result = await svc.tools.read_for_operator(owner, tool, _json_args(raw_args))
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
            result = await svc.tools.read_for_operator(owner, str(name), args)
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


async def skills_list(svc: Services, owner_name: str, as_json: bool = False) -> str:
    owner = await svc.owners.by_name(owner_name)
    skills = (await svc.memory.load(owner.id)).document.skills
    if as_json:
        return json.dumps([skill_to_json(s) for s in sorted(skills, key=lambda s: s.name)], ensure_ascii=False, indent=2)
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
