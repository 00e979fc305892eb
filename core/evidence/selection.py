"""Evidence selection before a turn started by an owner message (the EvidenceSource slot).

The server keeps only the note paths and message ids it supplied, and the turn goes on without
a packet when anything fails. The two calls and their bounds: docs/memory.md.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import date
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext, TurnOrigin
from core.clock import Clock, model_time
from core.errors import ConfigError, ModelError, NodError
from core.evidence.packet import MessageRecord, NoteRecord, build_packet
from core.history.request import HistorySearchArguments
from core.history.search import HistorySearch
from core.memory.render import label_of
from core.memory.values import MemoryDocument
from core.message import StoredMessage
from core.ports import Messages
from core.structured import Answer

log = logging.getLogger("nod.evidence")
MAX_SEARCHES = 5
MAX_PAGES = 5
MAX_MESSAGES = 100
MAX_INPUT_CHARS = 256_000


DAY: JsonDict = {"format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}  # servers that make a grammar of the schema keep to it


def _day_or_none(value: Any) -> Any:
    """A date the model wrote, or None: a place ("Lisbon"), a zone or a malformed date drops that bound only."""
    if value is None:
        return None
    try:
        return date.fromisoformat(value).isoformat() if isinstance(value, str) and len(value) == 10 else None
    except ValueError:
        return None


class EvidenceSearch(BaseModel):
    """One search of the conversation; ``from``/``to`` (dates in the owner's zone, YYYY-MM-DD) bound it
    when the request names a time ("last weekend" → two dates), else null. A bound that is not a
    date is dropped alone (logged), so the search still runs."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, populate_by_name=True)
    query: str
    start: str | None = Field(None, alias="from", json_schema_extra=DAY)
    end: str | None = Field(None, alias="to", json_schema_extra=DAY)
    bad_dates: SkipJsonSchema[int] = 0

    @model_validator(mode="before")
    @classmethod
    def _dates_or_none(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        bad = 0
        for key in ("from", "to", "start", "end"):
            if key in data:
                day = _day_or_none(data[key])
                bad += day is None and data[key] is not None
                data[key] = day
        data["bad_dates"] = bad
        return data


class EvidenceChoice(Answer):
    """The first call: which notes bear on the request, which searches to run, totals or not."""

    purpose: ClassVar[str] = "evidence_selection"
    max_tokens: ClassVar[int] = 1_500  # up to 100 note paths for totals and five searches
    ITEM_LISTS: ClassVar[tuple[str, ...]] = ("searches",)
    notes: list[str] = []
    searches: list[EvidenceSearch] = []
    totals: bool = False


class EvidenceRanking(Answer):
    """The second call: the supplied notes and messages that are evidence, most useful first."""

    purpose: ClassVar[str] = "evidence_selection"
    max_tokens: ClassVar[int] = 1_500  # up to 100 ranked note paths and message ids
    notes: list[str] = []
    messages: list[int] = []
SELECT = """Select evidence for a personal assistant's answer. Given the owner's request, the
conversation just before it, the current date and time in the owner's time zone, and their
saved notes, list the note paths that bear on it (connect indirect questions to preferences
and possessions), up to five short searches of the conversation (related concepts, names of
sources; resolve words like "it" or "there" from the recent conversation), each with the
dates it covers as from/to (YYYY-MM-DD, inclusive) when the request names a time such as
"last weekend", else null (only a date: never a place or a time zone), and whether the
request asks for totals or comparisons."""
RECENT_FOR_SELECTION = 6  # earlier messages shown to the first call, to resolve "and when is it?"
RANK = """Rank the records for the owner's request: list the note paths and message ids that are
evidence for the answer, most useful first. Leave out what does not bear on it."""


@dataclass
class TurnEvidence:
    request_id: int
    packet: str | None = None
    checked: dict[int, str] = field(default_factory=dict)


def bounded_input(payload: dict[str, Any]) -> str:
    """The model input as JSON, cut to 256,000 characters with the cut marked."""
    body = json.dumps(payload, ensure_ascii=False)
    if len(body) <= MAX_INPUT_CHARS:
        return body
    return body[: MAX_INPUT_CHARS - 40] + ' …[input cut at 256,000 characters]'


SELECTED_FOR = (TurnOrigin.OWNER_MESSAGE, TurnOrigin.SCHEDULE)  # turns whose answer is checked before delivery


class Selector:
    def __init__(self, gateway: Gateway, history: HistorySearch, messages: Messages, clock: Clock,
                 small_context: bool = False) -> None:
        self._gateway = gateway
        self._clock = clock
        self._history = history
        self._messages = messages
        self._small = small_context
        self._turns: dict[tuple[int, TurnOrigin], TurnEvidence] = {}

    def state(self, owner_id: int, origin: TurnOrigin = TurnOrigin.OWNER_MESSAGE) -> TurnEvidence | None:
        return self._turns.get((owner_id, origin))

    async def packet(self, ctx: TurnContext, request: StoredMessage) -> str | None:
        """The evidence for an owner's request, or for a scheduled task's instruction: each kept apart
        (a task running beside the owner's turn must not clear the owner's selection), and a new
        request of the same kind clears the old."""
        if ctx.origin not in SELECTED_FOR:
            return None
        self._turns[(ctx.owner.id, ctx.origin)] = state = TurnEvidence(request.id)
        if not self._gateway.memory_configured:
            return None
        if not ctx.may_spend:
            return None
        doc = ctx.document
        if not doc.entries and not await self._older_messages(ctx, request):
            log.info("evidence_selection_skipped owner=%s reason=nothing_to_select", ctx.owner.id)  # no model call, no usage
            return None
        try:
            chosen = await self._gateway.ask(ctx.owner.id, EvidenceChoice, [
                {"role": "system", "content": SELECT},
                {"role": "user", "content": bounded_input(await self._selection_input(ctx, request))},
            ])
        except (ModelError, ConfigError) as exc:
            log.info("evidence_selection_skipped owner=%s error=%s", ctx.owner.id, type(exc).__name__)
            return None
        paths = _kept_paths(chosen.notes, doc, ctx.owner.id)
        found, left_out = await self._search(ctx, chosen.searches, request.id)
        if not paths and not found:
            return None
        paths, ids = await self._rank(ctx, request, doc, paths, found)
        state.packet = await self._build(ctx, doc, paths, [found[i] for i in ids], chosen.totals, left_out)
        return state.packet

    async def _older_messages(self, ctx: TurnContext, request: StoredMessage) -> bool:
        """Whether the thread holds any message besides the request: without one and without notes there is
        nothing to select, and on a slow local server the call would cost most of the turn."""
        tail = await self._messages.thread_tail(ctx.thread_id, 2)
        return any(m.id != request.id for m in tail)

    async def _selection_input(self, ctx: TurnContext, request: StoredMessage) -> dict[str, Any]:
        zone = ctx.owner.zone
        tail = await self._messages.thread_tail(ctx.thread_id, RECENT_FOR_SELECTION + 1)
        recent = [{"role": m.role.value, "text": m.text[:1_000]} for m in tail if m.id != request.id]
        return {
            "now": model_time(self._clock.now(), zone),
            "time_zone": ctx.owner.time_zone,
            "recent": recent[-RECENT_FOR_SELECTION:],
            "request": request.text,
            "notes": [{"path": e.path, "text": e.text} for e in ctx.document.entries],
        }

    async def _search(self, ctx: TurnContext, searches: list[EvidenceSearch], request_id: int) -> tuple[dict[int, dict[str, Any]], int]:
        found: dict[int, dict[str, Any]] = {}
        left_out = 0
        for search in [s for s in searches if s.query.strip()][:MAX_SEARCHES]:
            if search.bad_dates:
                log.info("evidence_search_dates_dropped owner=%s dropped=%s", ctx.owner.id, search.bad_dates)
            args = HistorySearchArguments(query=search.query, limit=20, start=search.start or None, to=search.end or None)
            for _ in range(MAX_PAGES):
                try:
                    page = await self._history.search(ctx.owner, args)
                except NodError as exc:  # a bad date from the model loses that search only
                    log.info("evidence_search_skipped owner=%s error=%s", ctx.owner.id, type(exc).__name__)
                    break
                for result in page["results"]:
                    if result["id"] == request_id or result["id"] in found:
                        continue
                    if len(found) >= MAX_MESSAGES:
                        left_out += 1
                    else:
                        found[result["id"]] = result
                if not page["nextCursor"] or len(found) >= MAX_MESSAGES:
                    break
                args = args.model_copy(update={"cursor": page["nextCursor"]})
        return found, left_out

    async def _rank(self, ctx: TurnContext, request: StoredMessage, doc: MemoryDocument, paths: list[str],
                    found: dict[int, dict[str, Any]]) -> tuple[list[str], list[int]]:
        payload = {
            "request": request.text,
            "notes": [{"path": p, "text": doc.get(p).text} for p in paths if doc.get(p)],  # type: ignore[union-attr]
            "messages": [{"id": i, "sent_at": r["sent_at"], "role": r["role"], "text": r["text"]} for i, r in found.items()],
        }
        try:
            ranked = await self._gateway.ask(ctx.owner.id, EvidenceRanking, [
                {"role": "system", "content": RANK}, {"role": "user", "content": bounded_input(payload)}])
        except (ModelError, ConfigError):
            return paths, list(found)  # the search order stands in for the ranking
        kept_paths = [p for p in _kept_paths(ranked.notes, doc, ctx.owner.id) if p in paths]
        raw_ids = ranked.messages
        ids = [i for i in dict.fromkeys(raw_ids) if i in found]
        if len(ids) < len(raw_ids):
            log.warning("evidence_ids_dropped owner=%s dropped=%s", ctx.owner.id, len(raw_ids) - len(ids))
        return kept_paths, ids

    async def _build(self, ctx: TurnContext, doc: MemoryDocument, paths: list[str],
                     results: list[dict[str, Any]], totals: bool, left_out: int) -> str:
        zone = ctx.owner.zone
        notes = []
        for path in paths:
            entry = doc.get(path)
            if entry is None:
                continue
            sources = await self._messages.get_many(entry.source_ids)
            dated = tuple((i, sources[i].sent_at.astimezone(zone).date().isoformat()) for i in entry.source_ids if i in sources)
            quote = next((e.quote for e in entry.evidence if e.quote), None)
            notes.append(NoteRecord(path, entry.text, label_of(entry), dated, quote))
        messages = [MessageRecord(r["id"], r["role"], r["sent_at"][:16], r["text"], bool(r.get("truncated"))) for r in results]
        return build_packet(notes, messages, totals, self._small, left_out)


def _kept_paths(values: list[str], doc: MemoryDocument, owner_id: int) -> list[str]:
    kept = [p for p in dict.fromkeys(values) if doc.get(p) is not None]
    if len(kept) < len(values):
        log.warning("evidence_paths_dropped owner=%s dropped=%s", owner_id, len(values) - len(kept))
    return kept
