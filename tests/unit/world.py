"""Nod wired on the port fakes, as ``bot.wiring`` wires it on the stores: the unit tests' harness.

The same turn, conductor, tools and memory-model calls as ``tests/integration/harness.py``,
over the fakes of ``tests/fakes/ports.py`` (proven by ``tests/contract``) and two scripted
models, so a rule runs with no database, no server and no thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.agent.conductor import Conductor
from core.agent.gateway import Gateway, ModelRoles
from core.agent.spending import Spending
from core.agent.turn import TurnDeps
from core.agent.turn_context import TurnContext, TurnOrigin, begin
from core.agent.usage import PriceTable
from core.clock import FixedClock
from core.evidence.reply_check import ReplyChecker
from core.evidence.selection import Selector
from core.history.search import HistorySearch
from core.message import Inbound, StoredMessage
from core.owner import Identity, Owner
from core.replies import Reply
from core.saving.control import Controls
from core.saving.learn import Learner
from core.skills.learned import LearnedSkills
from core.tools.registry import Toolbox
from core.tools.services import ToolServices
from tests.fakes.messages import MemoryMessages, MemoryUnitOfWork
from tests.fakes.ports import FixedKeys, MemoryDocuments, MemoryOwners, MemoryUsage, NoConversation, QueueModel

START = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
AGENT = "agent-x"
MEMORY = "memory-x"


@dataclass
class Sink:
    sent: list[str] = field(default_factory=list)

    async def deliver(self, owner: Owner, to: Identity, reply: Reply) -> None:
        self.sent.append(reply.text_form())


@dataclass
class World:
    owner: Owner
    clock: FixedClock
    messages: MemoryMessages
    docs: MemoryDocuments
    owners: MemoryOwners
    usage: MemoryUsage
    agent: QueueModel
    memory_model: QueueModel | None
    deps: TurnDeps
    sink: Sink
    conductor: Conductor

    async def say(self, words: str, **inbound: object) -> None:
        """The owner writes ``words`` on the local channel; returns when the turn is over."""
        await self.conductor.receive(self.owner, Inbound(Identity("local", self.owner.name), words, **inbound))  # type: ignore[arg-type]
        await asyncio.wait_for(self.conductor.wait(self.owner.id), 5)

    async def context(self, request: StoredMessage, origin: TurnOrigin = TurnOrigin.OWNER_MESSAGE) -> TurnContext:
        """A turn's context for ``request`` as the conductor makes one: the owner and memory as stored now."""
        return await begin(await self.owners.by_id(self.owner.id), origin, request.thread_id, request.id, self.docs,
                           self.deps.spending)

    async def close(self) -> None:
        await self.conductor.close()


async def make_world(agent: QueueModel | None = None, memory: QueueModel | None = None,
                     agent_model: str | None = AGENT, known_secrets: tuple[str, ...] = ()) -> World:
    """Maya (Europe/Lisbon) on fresh fakes at START; no memory model unless ``memory`` is given,
    no agent model when ``agent_model`` is None (as with NOD_AGENT_MODEL unset); ``known_secrets``:
    the values Nod holds itself (its API keys), scrubbed from skill drafts as bot.wiring has it."""
    agent = agent or QueueModel()
    clock = FixedClock(START)
    messages, docs, owners, usage = MemoryMessages(), MemoryDocuments(), MemoryOwners(), MemoryUsage()
    owner = await owners.add("Maya", "Europe/Lisbon", (), START)
    gateway = Gateway(ModelRoles(agent_model, MEMORY if memory else None), agent, memory, usage, PriceTable({}), clock)
    history = HistorySearch(messages, NoConversation(), NoConversation(), FixedKeys())
    selector = Selector(gateway, history, messages, clock)
    tools = Toolbox(ToolServices(docs, messages, history, Learner(gateway, messages, docs, clock),
                                 Controls(gateway, messages, docs, owners), LearnedSkills(gateway, docs, clock, known_secrets), clock))
    deps = TurnDeps(gateway, Spending(usage, owners, clock, None), messages, owners, docs, NoConversation(), tools, clock,
                    MemoryUnitOfWork(messages), evidence=selector, check=ReplyChecker(gateway, selector))
    sink = Sink()
    return World(owner, clock, messages, docs, owners, usage, agent, memory, deps, sink, Conductor(deps, sink))
