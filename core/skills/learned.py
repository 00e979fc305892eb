"""The ``skills`` tool: read a learned skill or a built-in guide; save or patch a learned skill.

A skill is text written from a task that the agent will follow later, so writing one runs only
in work the owner started, scrubs the draft and has the memory model rewrite it with
placeholders, then refuses a result that still holds a secret; a read returns the body as
untrusted. Who may write, the limits and eviction: docs/memory.md (How learned skills work).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from core.agent.gateway import Gateway
from core.agent.turn_context import TurnContext, TurnOrigin
from core.clock import Clock
from core.errors import ConfigError, MemoryLimitError, ModelError
from core.memory.values import MemoryDocument, Skill
from core.ports import Changed, MemoryRepository
from core.secrets import find_secret
from core.skills.guides import guide, guides
from core.skills.scrub import scrub
from core.structured import Answer

log = logging.getLogger("nod.skills")
MAX_BODY = 6_000
MAX_DESCRIPTION = 200
MAX_SKILLS = 40
WRITE_ORIGINS = (TurnOrigin.OWNER_MESSAGE, TurnOrigin.TASK, TurnOrigin.SCHEDULE)
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
INSTRUCTIONS = """You turn an assistant's notes from a task it just did into a reusable procedure for
ONE site, app or flow, which the assistant will follow next time. Write: the steps; the
gotchas it hit and how it got past them; what to verify; what didn't work. Replace every
name, contact detail, address, account number, order or booking number, amount and piece
of message content with a placeholder in angle brackets, such as <order number>, <name>,
<amount>, <delivery address>. Drop any step that sends something to an outside party (an
email, a message, a payment, a form submitted to someone) unless sending is the very
purpose of the flow. Never keep card numbers, passwords, keys or login links. Say whether
the procedure is about a sensitive topic: health, religion, politics, sexuality, gender
identity, ethnicity, immigration status or criminal history. If it is a case of one of the
built-in guides, name that guide in extends. Answer with description (one line, at most
200 characters) and body (at most 6,000 characters)."""


class SkillRewrite(Answer):
    purpose: ClassVar[str] = "skill_rewrite"
    max_tokens: ClassVar[int] = 2_500  # a 6,000-character body, its description and the JSON around them
    description: str
    body: str
    sensitive: bool
    extends: str | None = None


@dataclass(frozen=True)
class Prepared:
    description: str
    body: str
    extends: str | None


def _refusal(sentence: str) -> dict[str, Any]:
    return {"error": sentence + " Nothing was saved."}


def evict(skills: tuple[Skill, ...]) -> tuple[Skill, ...] | None:
    """At most MAX_SKILLS - 1, so one more fits: the least recently used unedited one goes; None if all are edited."""
    if len(skills) < MAX_SKILLS:
        return skills
    unedited = [s for s in skills if not s.edited_by_owner]
    if not unedited:
        return None
    gone = min(unedited, key=lambda s: (s.used_at, s.name))
    log.info("skill_evicted name_len=%s", len(gone.name))
    return tuple(s for s in skills if s is not gone)


class LearnedSkills:
    def __init__(self, gateway: Gateway, memory: MemoryRepository, clock: Clock, known_secrets: Iterable[str] = ()) -> None:
        self._gateway = gateway
        self._memory = memory
        self._clock = clock
        self._known = tuple(known_secrets)

    async def read(self, ctx: TurnContext, name: str) -> tuple[dict[str, Any], bool]:
        """The skill's or guide's body (untrusted: True), or an error naming what exists."""
        found = next((s for s in ctx.document.skills if s.name == name), None)
        if found is not None:
            now = self._clock.now()
            saved = await self._memory.update(ctx.owner.id, lambda d: _touched(d, name, now))
            ctx.state.saved(saved)
            shown = {"name": found.name, "description": found.description, "body": found.body}
            return ({**shown, "extends": found.extends} if found.extends else shown), True
        built_in = guide(name)
        if built_in is not None:
            return {"name": built_in.name, "guide": True, "body": built_in.body}, False
        names = [s.name for s in ctx.document.skills] + [g.name for g in guides()]
        return {"error": f"No skill or guide named {name!r}; there are: {', '.join(names)}."}, False

    async def write(self, ctx: TurnContext, action: str, name: str, description: str | None, body: str | None) -> dict[str, Any]:
        refused = self._may_write(ctx, action, name, body)
        if refused is not None:
            return refused
        assert body is not None
        existing = next((s for s in ctx.document.skills if s.name == name), None)
        try:
            prepared = await self._prepare(ctx, name, description or "", body, existing)
        except (ModelError, ConfigError) as exc:
            log.warning("skill_rewrite_failed owner=%s error=%s", ctx.owner.id, type(exc).__name__)
            return _refusal(f"The memory model could not prepare the skill ({exc}).")
        except MemoryLimitError as exc:
            return _refusal(str(exc))
        saved = await self._memory.apply(ctx.owner.id, lambda d: self._store(d, name, prepared, action))
        ctx.state.saved(saved)
        if saved.result is not None:
            return _refusal(saved.result)
        log.info("skill_%s owner=%s", "patched" if action == "patch" else "saved", ctx.owner.id)
        return {"saved": name, "note": "Saved quietly: do not mention it to the owner."}

    def _may_write(self, ctx: TurnContext, action: str, name: str, body: str | None) -> dict[str, Any] | None:
        if ctx.origin not in WRITE_ORIGINS:
            return _refusal("Skills are written only in work the owner started (a chat, a task or a schedule).")
        if not ctx.owner.settings.saving_enabled:
            return _refusal("Saving is off for this owner.")
        if not _NAME.fullmatch(name):
            return _refusal("A skill's name is 1 to 64 lowercase letters, digits and dashes.")
        if guide(name) is not None:
            return _refusal(f"{name} is a built-in guide's name; choose another.")
        exists = any(s.name == name for s in ctx.document.skills)
        if action == "save" and exists:
            return _refusal(f"A skill named {name} exists; read it, then patch it if it is wrong or out of date.")
        if action == "patch" and not exists:
            return _refusal(f"No learned skill named {name}; save it instead.")
        if not body or not body.strip():
            return _refusal("A skill needs a body: the steps.")
        return None

    async def _prepare(self, ctx: TurnContext, name: str, description: str, body: str, existing: Skill | None) -> Prepared:
        draft = {"name": name, "description": scrub(description, self._known), "draft": scrub(body, self._known)[:20_000],
                 "current_version": existing.body if existing else None, "built_in_guides": [g.name for g in guides()]}
        prompt = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": json.dumps(draft, ensure_ascii=False)}]
        answer = await self._gateway.ask(ctx.owner.id, SkillRewrite, prompt)
        description, text = answer.description.strip(), answer.body.strip()
        if not text or len(text) > MAX_BODY or len(description) > MAX_DESCRIPTION or "\n" in description:
            raise MemoryLimitError(f"A skill's body holds 1 to {MAX_BODY:,} characters and its description one line "
                                   f"of at most {MAX_DESCRIPTION}.")
        for part, label in ((description, "description"), (text, "body")):
            kind = find_secret(part)
            if kind:  # the model missed it: refused, never stored
                raise MemoryLimitError(f"The rewritten skill's {label} still holds a {kind}.")
        if answer.sensitive and not ctx.owner.settings.remember_sensitive:
            raise MemoryLimitError("The skill is about a sensitive topic, which the owner has not asked Nod to remember.")
        extends = answer.extends if answer.extends and guide(answer.extends) else None
        return Prepared(description, text, extends)

    def _store(self, doc: MemoryDocument, name: str, prepared: Prepared, action: str) -> Changed[str | None]:
        now = self._clock.now()
        current = next((s for s in doc.skills if s.name == name), None)
        if action == "patch":
            if current is None:
                return Changed(doc, f"No learned skill named {name} any more.")
            patched = replace(current, description=prepared.description, body=prepared.body, updated_at=now,
                              extends=prepared.extends)  # an owner-edited skill stays protected from eviction
            return Changed(replace(doc, skills=tuple(patched if s.name == name else s for s in doc.skills)), None)
        if current is not None:
            return Changed(doc, f"A skill named {name} was saved meanwhile.")
        room = evict(doc.skills)
        if room is None:
            return Changed(doc, f"Memory keeps up to {MAX_SKILLS} skills and the owner edited every one of them.")
        new = Skill(name, prepared.description, prepared.body, now, now, extends=prepared.extends)
        return Changed(replace(doc, skills=(*room, new)), None)


def _touched(doc: MemoryDocument, name: str, now: datetime) -> MemoryDocument:
    return replace(doc, skills=tuple(replace(s, last_used_at=now) if s.name == name else s for s in doc.skills))
