"""skills: read, save and patch the owner's learned skills and task guides."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.agent.turn_context import TurnContext
from core.structured import Arguments
from core.tools.tool import Tool, ToolResult

_NAME = "Lowercase words joined by dashes: one site, app or flow."
_DESCRIPTION = "One line: what flow it covers."
_BODY = "The steps, gotchas and how they were passed, what to verify, what didn't work."


class SkillsArguments(Arguments):
    """What every action validates against; the model is shown one strict object per action instead."""

    action: Literal["read", "save", "patch"]
    name: str = Field(description="The skill's name: lowercase words joined by dashes, one site, app or flow.")
    description: str | None = Field(None, description="save/patch: one line, what flow it covers.")
    body: str | None = Field(None, description="save/patch: the steps, gotchas and how they were passed, what to verify, "
                                               "what didn't work.")


class SkillReadAction(Arguments):
    action: Literal["read"]
    name: str


class SkillSaveAction(Arguments):
    action: Literal["save"]
    name: str = Field(description=_NAME)
    description: str = Field(description=_DESCRIPTION)
    body: str = Field(description=_BODY)


class SkillPatchAction(Arguments):
    action: Literal["patch"]
    name: str
    description: str
    body: str


class Skills(Tool[SkillsArguments]):
    name = "skills"
    description = ("Learned skills and task guides. read: a skill's or guide's steps, before following a flow it "
                   "covers. save: after a task that took several steps, needed a workaround or was corrected, when no "
                   "skill covers it. patch: when a skill you followed was wrong or out of date. Saves are quiet: never "
                   "mention them.")
    arguments = SkillsArguments
    actions = (SkillReadAction, SkillSaveAction, SkillPatchAction)

    async def run(self, ctx: TurnContext, args: SkillsArguments) -> ToolResult:
        book = self.services.skills
        if args.action == "read":
            result, untrusted = await book.read(ctx, args.name)
            return ToolResult(result, untrusted)
        return ToolResult(await book.write(ctx, args.action, args.name, args.description, args.body))
