"""memory_learn: notes written by the memory model from the owner's own messages only.

The server, not the agent, decides what the memory model reads, so whatever fooled the agent
cannot become a note. The rules: docs/memory.md, "What memory_learn may read".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, ClassVar

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext, TurnOrigin
from core.clock import Clock, model_time
from core.errors import ConfigError, InvalidInput, ModelError, UnreadableAnswer
from core.history.cursor import MAX_ID
from core.memory import document as ops
from core.memory.render import index_lines
from core.memory.values import MemoryDocument, Origin
from core.message import Role, StoredMessage
from core.ports import Changed, MemoryRepository, Messages
from core.saving.grounding import Source
from core.saving.notes import NoteProposal, Proposal, Refusal, check_note
from core.structured import Answer
from core.text import fact_key

log = logging.getLogger("nod.saving")
EARLIER = 10
MAX_SOURCE_CHARS = 4_000
LEARN_ORIGINS = (TurnOrigin.OWNER_MESSAGE, TurnOrigin.TASK)
MAX_NAMED = 50
FILE_NOT_WORDS = ("What a photo or document shows is not the owner's words and cannot be saved: only the caption and "
                  "the owner's own messages were read. Ask the owner to say in words what should be remembered.")


class LearnedNotes(Answer):
    purpose: ClassVar[str] = "memory_learn"
    max_tokens: ClassVar[int] = 2_000  # a handful of notes, each with kind, dates, ids and a quote
    ITEM_LISTS: ClassVar[tuple[str, ...]] = ("notes",)
    notes: list[NoteProposal]


INSTRUCTIONS = """You write memory notes for a personal assistant from its owner's own messages.
Save every lasting fact the current message asks to remember or states; use the earlier
messages to work out what it refers to ("remember that address" saves the address from a
few messages back). Each note is one declarative fact, such as "Delivery address: …", with
names and numbers exactly as the owner wrote them. Keep plans, completed events,
possessions, purchases and preferences apart (kind). Path is area/slug; areas: about,
preferences, people, routines, lessons; slugs are lowercase words joined by hyphens.
Cite the message ids the fact comes from and copy a short quote, word for word, from one
of them; every name, number, date, e-mail address and link in the note must be in the
messages it cites, or the note is refused. When the messages make a saved note untrue, list its path in replaces. Give
dates as YYYY-MM-DD. Never write card numbers, passwords, keys or login links. If
nothing should be saved, return {"notes": []}."""


@dataclass(frozen=True)
class Sources:
    current: StoredMessage | None
    earlier: tuple[StoredMessage, ...]

    def texts(self, zone: tzinfo) -> dict[int, Source]:
        """Each message's text and the day it was sent where the owner lives (what their "yesterday" means)."""
        found = ([self.current] if self.current else []) + list(self.earlier)
        return {m.id: Source(m.text, m.sent_at.astimezone(zone).date()) for m in found}


def usable(message: StoredMessage) -> bool:
    """An owner message the memory model may read: the owner's own words, no secret."""
    return (
        message.role is Role.OWNER and not message.card_title and not message.forwarded and not message.attachment
        and not message.secret and len(message.text) <= MAX_SOURCE_CHARS
    )


class Learner:
    def __init__(self, gateway: Gateway, messages: Messages, memory: MemoryRepository, clock: Clock) -> None:
        self._gateway = gateway
        self._messages = messages
        self._memory = memory
        self._clock = clock

    async def sources(self, ctx: TurnContext, current: StoredMessage, named: Sequence[int]) -> Sources:
        """The messages the memory model may see; InvalidInput when a named id is not the owner's."""
        found = dict(await self._messages.get_many(set(named) - {current.id}))
        found[current.id] = current
        for message_id in named:
            message = found.get(message_id)
            if message is None or message.owner_id != ctx.owner.id or message.role is not Role.OWNER:
                raise InvalidInput(f"Message {message_id} is not one of the owner's own messages; nothing was saved.")
        recent = await self._messages.recent(ctx.owner.id, EARLIER + 1, Role.OWNER)
        earlier = {m.id: m for m in recent if m.id < current.id and m.thread_id == ctx.thread_id}
        earlier = dict(list(earlier.items())[-EARLIER:])
        earlier.update({i: found[i] for i in named if i != current.id})
        kept = tuple(m for _, m in sorted(earlier.items()) if usable(m))
        return Sources(current if usable(current) else None, kept)

    async def learn(self, ctx: TurnContext, message_ids: Sequence[int] | None) -> dict[str, Any]:
        if ctx.origin not in LEARN_ORIGINS or ctx.request_id is None:
            return {"error": "memory_learn only runs in work the owner started, with an owner message; nothing was saved."}
        if not ctx.owner.settings.saving_enabled:
            return {"error": "Saving is off for this owner; nothing was saved."}
        named = list(message_ids or ())
        if len(named) > MAX_NAMED or not all(0 < i <= MAX_ID for i in named):
            return {"error": f"message_ids must be a list of at most {MAX_NAMED} message ids; nothing was saved."}
        current = await self._messages.get(ctx.request_id)
        if current is None or current.forwarded:  # someone else's words may not start a save
            return {"error": "The current message is forwarded or quoted text, not the owner's words; nothing was saved."}
        sources = await self.sources(ctx, current, named)
        supplied = sources.texts(ctx.owner.zone)
        if not supplied:
            if current.media is not None:
                return {"error": FILE_NOT_WORDS + " This message has no caption; nothing was saved."}
            return {"error": "None of those messages can be saved from (Nod's wording, forwarded, too long or secret)."}
        doc = ctx.document
        try:
            answer = await self._ask(ctx, sources, doc)
        except (ModelError, ConfigError) as exc:
            log.warning("memory_learn_failed owner=%s error=%s", ctx.owner.id, type(exc).__name__)
            return {"error": f"Nothing was saved: {exc}"}
        now = self._clock.now()
        saved_notes = {e.path: e.text for e in doc.entries}
        checked = [check_note(note, supplied, now, saved_notes) for note in answer.notes]
        proposals = [c for c in checked if isinstance(c, Proposal)]
        refused = [{"path": c.path, "reason": c.reason} for c in checked if isinstance(c, Refusal)]
        refused += [{"path": "?", "reason": "not a well-formed note"}] * answer.dropped
        outcome: Learned = Learned((), ())
        if proposals:
            saved = await self._memory.apply(ctx.owner.id, lambda d: _apply(d, proposals, now))
            ctx.state.saved(saved)
            outcome = saved.result
        ungrounded = sum(r["reason"].startswith("ungrounded") for r in refused)
        log.info("memory_learn owner=%s saved=%s confirmed=%s refused=%s ungrounded=%s", ctx.owner.id,
                 len(outcome.saved), len(outcome.confirmed), len(refused), ungrounded)
        result = {"saved": list(outcome.saved), "confirmed": list(outcome.confirmed), "refused": refused,
                  "note": "Saves are silent: do not mention this to the owner."}
        if current.media is not None:
            result["attachment"] = FILE_NOT_WORDS
        return result

    async def _ask(self, ctx: TurnContext, sources: Sources, doc: MemoryDocument) -> LearnedNotes:
        zone = ctx.owner.zone

        def show(m: StoredMessage) -> dict[str, Any]:
            return {"id": m.id, "sent_at": model_time(m.sent_at, zone), "text": m.text}

        payload = {
            "memory_index": index_lines(doc),
            "current_message": show(sources.current) if sources.current else None,
            "earlier_messages": [show(m) for m in sources.earlier],
        }
        prompt = [{"role": "system", "content": INSTRUCTIONS},
                  {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}]
        try:
            return await self._gateway.ask(ctx.owner.id, LearnedNotes, prompt)
        except UnreadableAnswer:  # asked once more, only when the answer could not be read
            return await self._gateway.ask(ctx.owner.id, LearnedNotes, prompt)


@dataclass(frozen=True)
class Learned:
    saved: tuple[str, ...]  # paths of new notes
    confirmed: tuple[str, ...]  # paths of notes a repeat added evidence to


def _apply(doc: MemoryDocument, proposals: Sequence[Proposal], now: datetime) -> Changed[Learned]:
    saved: list[str] = []
    confirmed: list[str] = []
    for proposal in proposals:
        doc, path, repeat = _apply_one(doc, proposal, now)
        (confirmed if repeat else saved).append(path)
    return Changed(doc, Learned(tuple(saved), tuple(confirmed)))


def _apply_one(doc: MemoryDocument, proposal: Proposal, now: datetime) -> tuple[MemoryDocument, str, bool]:
    """The document with one note applied, the path it went to, and whether it repeated a note."""
    new = proposal.entry
    same = next((e for e in doc.entries if fact_key(e.text) == fact_key(new.text)), None)
    if same is not None:
        for evidence in new.evidence:
            doc = ops.add_evidence(doc, same.path, evidence, now)
        if same.origin is not Origin.STATED:
            doc = ops.confirm(doc, same.path, now)
        return doc, same.path, True
    olds = tuple(p for p in proposal.replaces if doc.get(p) is not None)
    if new.path not in olds:
        new = ops.at_free_path(doc, new)
    doc = ops.replace(doc, new, olds, now) if olds else ops.add_entry(doc, new)
    return doc, new.path, False
