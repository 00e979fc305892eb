"""What the tools are built from: the composition root fills it once, each tool takes what it needs."""

from __future__ import annotations

from dataclasses import dataclass

from core.clock import Clock
from core.history.search import HistorySearch
from core.ports import MemoryRepository, Messages
from core.saving.control import Controls
from core.saving.learn import Learner
from core.schedules.tool import ScheduleTool
from core.skills.learned import LearnedSkills


@dataclass(frozen=True)
class ToolServices:
    memory: MemoryRepository
    messages: Messages
    history: HistorySearch
    learner: Learner
    controls: Controls
    skills: LearnedSkills
    clock: Clock
    schedules: ScheduleTool | None = None
