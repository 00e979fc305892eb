"""offer_choices: buttons under the reply; a tap comes back as a message flagged as Nod's own wording."""

from __future__ import annotations

from core.agent.turn_context import TurnContext
from core.replies import MAX_CHOICE_CHARS, MAX_CHOICES
from core.structured import Arguments
from core.tools.tool import Tool, ToolOutcome, ToolResult


class OfferChoicesArguments(Arguments):
    choices: list[str]


class OfferChoices(Tool[OfferChoicesArguments]):
    """Only records the choices: the turn shows them under its reply (``offered_choices``)."""

    name = "offer_choices"
    description = (f"Show up to {MAX_CHOICES} short choices (each up to {MAX_CHOICE_CHARS} characters) "
                   "as buttons under your reply; the owner's tap arrives as their next message. Write the reply "
                   "as usual: it must make sense without the buttons.")
    arguments = OfferChoicesArguments

    async def run(self, ctx: TurnContext, args: OfferChoicesArguments) -> ToolResult:
        choices = [c.strip() for c in args.choices]
        if not choices or not all(choices):
            return ToolResult({"error": "choices must be a list of one or more non-empty strings."})
        if len(choices) > MAX_CHOICES or any(len(c) > MAX_CHOICE_CHARS for c in choices):
            return ToolResult({"error": f"Offer at most {MAX_CHOICES} choices of at most {MAX_CHOICE_CHARS} characters each."})
        return ToolResult({"shown": choices, "note": "The buttons appear under your reply."})


def offered_choices(outcomes: list[ToolOutcome] | tuple[ToolOutcome, ...]) -> tuple[str, ...]:
    """The last valid offer_choices of a turn: the buttons its reply carries."""
    for outcome in reversed(outcomes):
        if outcome.name == OfferChoices.name and "shown" in outcome.result:
            return tuple(outcome.result["shown"])
    return ()
