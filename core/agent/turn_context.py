"""What every part of one turn shares: who, what started it, and one snapshot of the owner's state.

A turn reads the owner's memory document and spending capacity once, at its start
(``begin``), and hands that snapshot to the context builder, evidence selection, the reply
check and the tools — decoding a 256 KiB document three times and summing the month's
cost three times per turn bought nothing. A write the turn makes itself (memory_learn,
memory_forget, memory_control) refreshes the snapshot with the document it saved, so the
rest of the turn reads what is now stored. The snapshot is the turn's own state, not a
value, which is why ``TurnState`` is the one mutable object here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from core.agent.spending import Capacity, Spending
from core.memory.values import MemoryDocument
from core.owner import Owner
from core.ports import MemoryRepository, Saved, VersionedDocument


class TurnOrigin(str, Enum):
    """What started a turn; the saving rules read it (memory_learn needs OWNER_MESSAGE or TASK)."""

    OWNER_MESSAGE = "owner_message"
    TASK = "task"
    SCHEDULE = "schedule"
    EVENT = "event"
    SUBAGENT = "subagent"
    OPERATOR = "operator"  # ``nod tool``: the read-only tools, outside any turn


class TurnState:
    """The owner's memory and spending capacity as this turn last read or wrote them."""

    def __init__(self, memory: VersionedDocument, capacity: Capacity) -> None:
        self.memory = memory
        self.capacity = capacity

    def saved(self, written: VersionedDocument | Saved[Any]) -> None:
        """The turn wrote memory: later reads see the document it saved."""
        self.memory = VersionedDocument(written.document, written.version)


@dataclass(frozen=True)
class TurnContext:
    owner: Owner
    origin: TurnOrigin
    thread_id: int
    request_id: int | None  # the owner message the turn answers, when an owner started it
    state: TurnState

    @property
    def document(self) -> MemoryDocument:
        return self.state.memory.document

    @property
    def may_spend(self) -> bool:
        """Whether optional memory-model calls (evidence, the reply check) may spend this turn."""
        return not self.state.capacity.exhausted


async def begin(owner: Owner, origin: TurnOrigin, thread_id: int, request_id: int | None,
                memory: MemoryRepository, spending: Spending) -> TurnContext:
    """A turn's context with its one snapshot of memory and spending."""
    state = TurnState(await memory.load(owner.id), await spending.capacity(owner))
    return TurnContext(owner, origin, thread_id, request_id, state)
