"""One place that builds the stores, the model gateway and the turn from the settings.

The cosmicpython bootstrap: every dependency is made here and passed down, so the core
never reaches for a setting or an SDK. A channel adds its own reply sink and gets a
``Conductor`` with ``services.conductor(sink)``, or the whole front door (gate, commands,
conductor) with ``services.front_door(sink)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine, is_sqlite, storage_error
from adapters.storage.database_keys import DatabaseKeys
from adapters.storage.gmail_store import GmailStore
from adapters.storage.health import DatabaseHealth
from adapters.storage.keyword_matcher import KeywordMatcher
from adapters.storage.locks import DatabaseLocks
from adapters.storage.memory_store import MemoryStore
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.objects import ObjectStore
from adapters.storage.owner_store import OwnerStore
from adapters.storage.page_store import PageStore
from adapters.storage.receipts import Receipts
from adapters.storage.schedule_store import ScheduleStore
from adapters.storage.search_index.derived import DerivedIndex
from adapters.storage.thread_reads import ThreadReads
from adapters.storage.unit_of_work import SqlUnitOfWork
from adapters.storage.usage_store import UsageStore
from bot.settings import Settings, joined
from core.agent.conductor import Conductor
from core.agent.gateway import Gateway, ModelRoles
from core.agent.scheduled import ScheduledTasks
from core.agent.slots import DEFAULT_SLOTS
from core.agent.spending import Spending
from core.agent.turn import TurnDeps
from core.agent.usage import PriceTable
from core.clock import Clock, SystemClock
from core.evidence.reply_check import ReplyChecker
from core.evidence.selection import Selector
from core.gmail.cipher import TokenCipher
from core.gmail.link import GmailLink
from core.gmail.runs import StyleRuns
from core.gmail.style import StyleLearner
from core.gmail.values import CALLBACK_PATH
from core.history.search import HistorySearch
from core.inbox.commands import OwnerCommands
from core.inbox.digests import Digests
from core.inbox.front import FrontDoor
from core.inbox.gate import Gate
from core.maintenance.reflect import Reflector
from core.maintenance.tick import MaintenanceJob
from core.page.access import PageAccess, PageConfig
from core.page.edits import MemoryEdits
from core.ports import AudioSource, ChatModel, MediaSource, ReplySink, Transcriber, UsageLedger
from core.saving.control import Controls
from core.saving.learn import Learner
from core.schedules.runner import STALE_CLAIM, Scheduler
from core.schedules.tool import ScheduleTool
from core.skills.learned import LearnedSkills
from core.tools.registry import Toolbox
from core.tools.services import ToolServices

TRANSCRIBE_DEADLINE_S = 120.0  # ten minutes of audio take Whisper well under a minute
SMALL_CONTEXT_TOKENS = 32_000  # below this the agent gets the shortened evidence packet


@dataclass(frozen=True)
class Services:
    engine: AsyncEngine
    clock: Clock
    owners: OwnerStore
    messages: MessageStore
    memory: MemoryStore
    tools: Toolbox
    usage: UsageLedger
    spending: Spending
    gateway: Gateway
    turn: TurnDeps
    search_index: DerivedIndex | None
    maintenance: MaintenanceJob
    locks: DatabaseLocks
    health: DatabaseHealth
    page: PageAccess | None  # None when the page is off; page_off says why
    page_off: str
    edits: MemoryEdits
    schedules: ScheduleStore

    open_signup: bool = False
    work_slots: int = DEFAULT_SLOTS
    gmail: GmailLink | None = None  # None when Gmail is off; gmail_off says why
    gmail_off: str = ""

    def conductor(self, sink: ReplySink, audio: Mapping[str, AudioSource] | None = None,
                  media: Mapping[str, MediaSource] | None = None) -> Conductor:
        return Conductor(self.turn, sink, self.locks, self.work_slots, audio, media=media)

    def commands(self, conductor: Conductor) -> OwnerCommands:
        return OwnerCommands(conductor, self.messages, Digests(self.gateway, self.spending, self.memory),
                             self.page, self.page_off, self.schedules)

    def scheduler(self, sink: ReplySink) -> Scheduler:
        """Reminders and scheduled tasks, sent through ``sink``. On SQLite (one process) a run a
        killed process left claimed is finished at start, on PostgreSQL after a grace period."""
        stale = timedelta(0) if is_sqlite(self.engine) else STALE_CLAIM
        return Scheduler(self.schedules, self.owners, self.messages, self.turn.uow, sink, self.clock,
                         ScheduledTasks(self.turn), stale)

    def front_door(self, sink: ReplySink, audio: Mapping[str, AudioSource] | None = None,
                   media: Mapping[str, MediaSource] | None = None) -> FrontDoor:
        """The front door; ``audio`` and ``media``: each channel's way to fetch its voice notes, photos and documents."""
        conductor = self.conductor(sink, audio, media)
        gate = Gate(self.owners, self.clock, self.open_signup)
        return FrontDoor(gate, self.commands(conductor), conductor, Receipts(self.engine), self.clock, self.schedules)


def _models(settings: Settings) -> tuple[ChatModel | None, ChatModel | None]:
    if not (settings.agent_model or settings.memory_model):
        return None, None
    from adapters.openai_model.chat import OpenAIChatModel, build_client  # the SDK loads only when a model is set

    mode = "json_object" if settings.json_mode == "json_object" else "json_schema"
    agent = None
    if settings.agent_model:
        client = build_client(settings.openai_base_url, settings.openai_api_key, settings.agent_deadline_s)
        agent = OpenAIChatModel(client, mode, settings.json_strict, settings.agent_vision)
    memory = None
    if settings.memory_model:
        client = build_client(
            settings.memory_base_url or settings.openai_base_url,
            settings.memory_api_key or settings.openai_api_key,
            settings.memory_deadline_s,
        )
        memory = OpenAIChatModel(client, mode, settings.json_strict)
    return agent, memory


def _transcriber(settings: Settings) -> Transcriber | None:
    if not settings.transcribe_model:
        return None
    from adapters.openai_model.chat import build_client
    from adapters.openai_model.transcribe import OpenAITranscriber

    client = build_client(settings.transcribe_base_url or settings.openai_base_url,
                          settings.transcribe_api_key or settings.openai_api_key, TRANSCRIBE_DEADLINE_S)
    return OpenAITranscriber(client)


def build_gateway(settings: Settings, usage: UsageLedger, clock: Clock, models: tuple[ChatModel | None, ChatModel | None] | None = None) -> Gateway:
    agent, memory = models if models is not None else _models(settings)
    roles = ModelRoles(settings.agent_model, settings.memory_model, settings.memory_deadline_s, settings.agent_deadline_s,
                       settings.transcribe_model, TRANSCRIBE_DEADLINE_S, settings.max_tokens_scale, settings.agent_vision)
    prices = PriceTable.with_overrides({m: (i, o) for m, i, o in settings.model_prices})
    return Gateway(roles, agent, memory, usage, prices, clock, _transcriber(settings))


def history_search(engine: AsyncEngine, messages: MessageStore, index: DerivedIndex | None = None) -> HistorySearch:
    """history_search over a database (and its derived index): the one way to build it."""
    return HistorySearch(messages, KeywordMatcher(engine), ThreadReads(engine), DatabaseKeys(engine), index)


def _page(settings: Settings, engine: AsyncEngine, clock: Clock) -> tuple[PageAccess | None, str]:
    """The memory page's sign-in, or None and the one sentence /settings answers instead."""
    missing = settings.missing("page")
    if missing:
        return None, f"The memory page is off: the operator sets {joined(missing)} to turn it on."
    assert settings.public_url and settings.secret_key  # what "on" means (PARTS), said again for the type checker
    return PageAccess(PageConfig(settings.public_url, settings.secret_key), PageStore(engine), clock), ""


def _gmail(settings: Settings, engine: AsyncEngine, gateway: Gateway, memory: MemoryStore, owners: OwnerStore,
           clock: Clock, spending: Spending) -> tuple[GmailLink | None, str]:
    """The Gmail writing style's connection and runs, or None and the sentence the page and CLI say instead."""
    missing = settings.missing("gmail")
    if missing:
        return None, f"Gmail is not set up on this server: the operator sets {joined(missing)}."
    assert settings.google_client_id and settings.google_client_secret and settings.secret_key and settings.public_url
    from adapters.gmail.mail import GmailMail  # the Google libraries load only when Gmail is set up
    from adapters.gmail.oauth import GoogleClient, GoogleOAuth

    client = GoogleClient(settings.google_client_id, settings.google_client_secret,
                          settings.public_url.rstrip("/") + CALLBACK_PATH, settings.google_oauth_base_url)
    accounts, store, cipher = GoogleOAuth(client), GmailStore(engine), TokenCipher(settings.secret_key)
    learner = StyleLearner(gateway, accounts, GmailMail(settings.gmail_api_base_url), store, cipher, memory, owners,
                           clock, spending)
    return GmailLink(accounts, store, cipher, StyleRuns(learner), clock), ""


def _known_secrets(settings: Settings) -> tuple[str, ...]:
    """The secret values Nod holds itself: scrubbed from every skill draft before a model sees it."""
    values = (settings.openai_api_key, settings.memory_api_key, settings.transcribe_api_key, settings.secret_key,
              settings.google_client_secret,
              *(getattr(settings, field) for kind in settings.channels.values() for field in kind.secrets))
    return tuple(v for v in values if v)


def _toolbox(settings: Settings, gateway: Gateway, stores: tuple[MessageStore, MemoryStore, OwnerStore, ScheduleStore],
             history: HistorySearch, clock: Clock) -> Toolbox:
    messages, memory, owners, schedules = stores
    return Toolbox(ToolServices(
        memory=memory, messages=messages, history=history, learner=Learner(gateway, messages, memory, clock),
        controls=Controls(gateway, messages, memory, owners),
        skills=LearnedSkills(gateway, memory, clock, _known_secrets(settings)), clock=clock,
        schedules=ScheduleTool(schedules, messages, gateway),
    ))


@asynccontextmanager
async def services(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Services]:
    """Open the database, run pending migrations, and close everything on the way out."""
    engine = create_engine(settings.database_url)
    clock = clock or SystemClock()
    try:
        try:
            await migrate(engine)
        except (SQLAlchemyError, OSError) as exc:  # unreadable, unwritable, unreachable: one sentence
            raise storage_error(exc, settings.database_url) from exc
        messages = MessageStore(engine, clock)
        memory = MemoryStore(ObjectStore(engine), clock)
        owners = OwnerStore(engine)
        index = DerivedIndex.beside(settings.database_url, engine,
                                    Path(settings.search_index_dir) if settings.search_index_dir else None)
        history = history_search(engine, messages, index)
        usage = UsageStore(engine)
        spending = Spending(usage, owners, clock, settings.spending_limit_usd)
        gateway = build_gateway(settings, usage, clock)
        small = settings.agent_context_tokens is not None and settings.agent_context_tokens < SMALL_CONTEXT_TOKENS
        selector = Selector(gateway, history, messages, clock, small)
        schedules = ScheduleStore(engine)
        tools = _toolbox(settings, gateway, (messages, memory, owners, schedules), history, clock)
        turn = TurnDeps(
            gateway=gateway, spending=spending, messages=messages, owners=owners, memory=memory,
            conversation=ThreadReads(engine), clock=clock, uow=SqlUnitOfWork(engine, messages),
            tools=tools,
            evidence=selector, check=ReplyChecker(gateway, selector),
        )
        reflector = Reflector(gateway, messages, memory, clock) if gateway.memory_configured else None
        locks = DatabaseLocks(engine)
        gmail, gmail_off = _gmail(settings, engine, gateway, memory, owners, clock, spending)
        maintenance = MaintenanceJob(owners, memory, reflector, locks, clock, spending, gmail.runs if gmail else None)
        try:
            page, page_off = _page(settings, engine, clock)
            yield Services(engine, clock, owners, messages, memory, tools, usage, spending, gateway, turn, index,
                           maintenance, locks, DatabaseHealth(engine, settings.database_url, clock),
                           page, page_off, MemoryEdits(memory, owners, clock), schedules, settings.open_signup,
                           settings.work_slots, gmail, gmail_off)
        finally:
            if gmail is not None:
                await gmail.runs.close()
            await locks.close()
            await gateway.close()
            if index is not None:
                await index.close()
    finally:
        await engine.dispose()
