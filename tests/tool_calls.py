"""Tool calls as the agent and the operator make them, for tests that start at a store rather than a turn."""

from __future__ import annotations

from typing import Any

from core.agent.gateway import Gateway, ModelRoles
from core.agent.usage import PriceTable
from core.clock import Clock, SystemClock
from core.history.request import HistorySearchArguments
from core.history.search import HistorySearch
from core.ports import MemoryRepository, Messages, Owners
from core.saving.control import Controls
from core.saving.learn import Learner
from core.skills.learned import LearnedSkills
from core.structured import parse_arguments
from core.tools.registry import Toolbox
from core.tools.services import ToolServices
from tests.fakes.ports import MemoryOwners, MemoryUsage, QueueModel


def history_args(args: dict[str, Any]) -> HistorySearchArguments:
    """history_search's arguments from a dict, as the tool receives them after its check."""
    return parse_arguments(HistorySearchArguments, args, "history_search")


def toolbox(memory: MemoryRepository, messages: Messages, history: HistorySearch, owners: Owners | None = None,
            clock: Clock | None = None) -> Toolbox:
    """The real registry over these stores, with a model that is never asked (the read tools need none)."""
    clock = clock or SystemClock()
    gateway = Gateway(ModelRoles("agent-unused", None), QueueModel(), None, MemoryUsage(), PriceTable({}), clock)
    return Toolbox(ToolServices(memory, messages, history, Learner(gateway, messages, memory, clock),
                                Controls(gateway, messages, memory, owners or MemoryOwners()), LearnedSkills(gateway, memory, clock), clock))
