"""The evidence packet: the selected notes and messages, as text next to the request.

Pure and bounded. At most 12 records (100 for totals and comparisons), notes first, each
with its sources and dates; messages with their dates, cut at 1,200 characters and marked
shortened so the agent knows to read the whole source; quotes at most 400 characters.
When a limit leaves records out the packet says how many and how to read them. A small
context window gets a smaller packet that keeps every source reference (ids, paths) and
asks for further reads. Only server-made text enters: the model chose paths and ids, never
wording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FACTS = 12
TOTALS = 100
EXCERPT = 1_200
SMALL_EXCERPT = 300
QUOTE = 400
LARGE_BUDGET = 60_000
SMALL_BUDGET = 8_000


@dataclass(frozen=True)
class NoteRecord:
    path: str
    text: str
    label: str
    sources: tuple[tuple[int, str], ...]  # (message id, date)
    quote: str | None = None


@dataclass(frozen=True)
class MessageRecord:
    id: int
    role: str
    sent_at: str
    text: str
    shortened: bool = False  # history_search already cut it


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + "…", True


def _note_line(note: NoteRecord, small: bool) -> str:
    sources = ", ".join(f"#{i} {day}" for i, day in note.sources) or "no source message"
    text, _ = _cut(note.text, SMALL_EXCERPT if small else 4_000)
    line = f"- note {note.path} ({note.label}): {text} [sources: {sources}]"
    if note.quote and not small:
        line += f' [quote: "{_cut(note.quote, QUOTE)[0]}"]'
    return line


def _message_line(message: MessageRecord, small: bool) -> str:
    text, cut = _cut(message.text, SMALL_EXCERPT if small else EXCERPT)
    line = f"- message #{message.id} {message.sent_at} {message.role}: {text}"
    if cut or message.shortened:
        line += f" [shortened: read it whole with history_search around={message.id}]"
    return line


def build_packet(
    notes: Sequence[NoteRecord], messages: Sequence[MessageRecord], totals: bool, small: bool,
    left_out: int = 0,
) -> str:
    """The packet text; ``left_out`` counts records retrieval already had to leave out."""
    limit = TOTALS if totals else FACTS
    budget = SMALL_BUDGET if small else LARGE_BUDGET
    lines: list[str] = []
    used = 0
    omitted = left_out
    records = [_note_line(n, small) for n in notes] + [_message_line(m, small) for m in messages]
    for n, line in enumerate(records):
        if n >= limit or used + len(line) > budget:
            omitted += len(records) - n
            break
        lines.append(line)
        used += len(line) + 1
    if omitted:
        lines.append(f"[{omitted} more records were found but left out: read them with memory_read or history_search.]")
    if small:
        lines.append("[This packet is shortened for a small context window: read the sources above for complete evidence.]")
    return "\n".join(lines)
