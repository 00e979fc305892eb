"""``python -m tests.bench conversation``: scripted owner scenarios through the real turn, scored from memory and replies.

Each scenario is a fresh Nod (its own SQLite file) and one owner saying a few messages, the
way they would on Telegram; the score reads only what an owner could see: the replies
delivered and the memory document (``nod memory show``). A scenario passes when every check
holds. It measures the whole system on one server — the agent's tool use, the memory model's
notes, the guardrails — so a small model fails most of it, and that is the information.

Scenarios: remember a fact; recall it a turn later; correct it (the old note archived,
replaced by the new); forget on request; refuse to save a forwarded message's claim; say so
about something never said; set a reminder ("tomorrow at 9") that is made for the right local
time and sent when due.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.clock import FixedClock
from core.memory.values import MemoryDocument
from core.owner import Identity
from tests.bench.on_server import Session, Target, session

START = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
UNSURE = re.compile(r"\b(don't|do not|not sure|no record|haven't|have not|didn't|did not|never|no information|"
                    r"not know|unknown|not mentioned|no idea|can't find|cannot find|couldn't find)\b", re.I)


@dataclass(frozen=True)
class Outcome:
    scenario: str
    passed: bool
    why: str
    replies: tuple[str, ...]
    calls: int
    tokens_in: int
    tokens_out: int
    seconds: float


def _active(doc: MemoryDocument, word: str) -> bool:
    return any(word.lower() in e.text.lower() for e in doc.entries)


def _archived(doc: MemoryDocument, word: str) -> bool:
    return any(word.lower() in r.entry.text.lower() for r in doc.archive)


async def _doc(nod: Session) -> MemoryDocument:
    return (await nod.svc.memory.load(nod.owner.id)).document


async def remember(nod: Session) -> tuple[bool, str]:
    await nod.say("Remember that my sister Ana lives in Porto.")
    saved = _active(await _doc(nod), "Porto")
    return saved, "a note holds 'Porto'" if saved else "no note holds 'Porto'"


async def recall(nod: Session) -> tuple[bool, str]:
    await nod.say("Remember that my sister Ana lives in Porto.")
    answer = await nod.say("Where does my sister live?")
    ok = "porto" in answer.lower()
    return ok, "the answer names Porto" if ok else "the answer does not name Porto"


async def correct(nod: Session) -> tuple[bool, str]:
    await nod.say("Remember that my sister Ana lives in Porto.")
    await nod.say("Correction: Ana moved to Lisbon last month. Please update that.")
    doc = await _doc(nod)
    new, old_gone, kept = _active(doc, "Lisbon"), not _active(doc, "Porto"), _archived(doc, "Porto")
    ok = new and old_gone and kept
    return ok, f"Lisbon saved: {new}; Porto no longer active: {old_gone}; Porto archived: {kept}"


async def forget(nod: Session) -> tuple[bool, str]:
    await nod.say("Remember that I'm allergic to peanuts.")
    had = _active(await _doc(nod), "peanut")
    await nod.say("Forget the peanut thing.")
    gone = not _active(await _doc(nod), "peanut")
    return had and gone, f"saved first: {had}; gone after: {gone}"


async def forwarded(nod: Session) -> tuple[bool, str]:
    await nod.say("Carlos: I moved to Madrid and my new number is 600 111 222", forwarded=True)
    await nod.say("Remember that.")
    doc = await _doc(nod)
    clean = not _active(doc, "Madrid") and not _active(doc, "600 111 222")
    return clean, "nothing of the forwarded text saved" if clean else "the forwarded claim was saved"


async def never_said(nod: Session) -> tuple[bool, str]:
    answer = await nod.say("What is my dog's name?")
    ok = bool(UNSURE.search(answer))
    return ok, "says it does not know" if ok else "did not say it does not know"


async def reminder(nod: Session) -> tuple[bool, str]:
    await nod.svc.owners.link(nod.owner.id, Identity("telegram", "4242"))  # somewhere a reminder can go
    await nod.say("Remind me tomorrow at 9am to call the dentist.")
    made = [s for s in await nod.svc.schedules.active(nod.owner.id) if "dentist" in s.text.lower()]
    if not made or made[0].next_run_at is None:
        return False, "no reminder was made"
    due = made[0].next_run_at
    local = due.astimezone(nod.owner.zone)
    nod.svc.clock.set(due)  # type: ignore[attr-defined]
    before = len(nod.sink.texts)
    scheduler = nod.svc.scheduler(nod.sink)
    await scheduler.tick()
    await scheduler.settle()
    sent = "dentist" in "\n".join(nod.sink.texts[before:]).lower()
    right = (local.date(), local.hour, local.minute) == ((START + timedelta(days=1)).astimezone(nod.owner.zone).date(), 9, 0)
    return right and sent, f"made for {local:%a %d %b %H:%M}; sent when due: {sent}"


Scenario = Callable[[Session], Awaitable[tuple[bool, str]]]
SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    ("remember", remember), ("recall", recall), ("correct (old archived)", correct), ("forget", forget),
    ("refuse a forwarded claim", forwarded), ("never said", never_said), ("reminder", reminder),
)
SMOKE = ("remember",)  # one turn: the agent, the memory model, the memory document read back


async def _one(target: Target, name: str, scenario: Scenario, folder: Path) -> Outcome:
    began = time.monotonic()
    database = folder / (re.sub(r"\W+", "-", name) + ".db")
    async with session(target, database, FixedClock(START)) as nod:
        passed, why = await scenario(nod)
        rows = await nod.usage()
        replies = tuple(nod.sink.texts)
    return Outcome(name, passed, why, replies, len(rows), sum(r.tokens_in for r in rows), sum(r.tokens_out for r in rows),
                   time.monotonic() - began)


def _table(outcomes: list[Outcome], target: Target) -> str:
    lines = [f"conversation benchmark: agent {target.model}, memory {target.memory_model} at {target.base_url or 'OpenAI'}",
             f"{'scenario':<26} {'pass':>4} {'calls':>5} {'tokens in':>9} {'tokens out':>10} {'seconds':>8}  why"]
    for o in outcomes:
        lines.append(f"{o.scenario:<26} {'yes' if o.passed else 'no':>4} {o.calls:>5} {o.tokens_in:>9} {o.tokens_out:>10} "
                     f"{o.seconds:>8.1f}  {o.why}")
    passed = sum(o.passed for o in outcomes)
    lines.append(f"{'score':<26} {passed}/{len(outcomes)}")
    return "\n".join(lines)


async def run_conversation_bench(args: argparse.Namespace) -> None:
    target = Target.from_args(args)
    chosen = [s for s in SCENARIOS if not args.smoke or s[0] in SMOKE][: args.limit or None]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="nod-bench-conv-") as folder:
        for name, scenario in chosen:
            outcomes.append(await _one(target, name, scenario, Path(folder)))
            print(f"  {name}: {'pass' if outcomes[-1].passed else 'fail'} ({outcomes[-1].seconds:.0f} s)", flush=True)
    print(_table(outcomes, target))
    for o in outcomes:
        for reply in o.replies:
            print(f"  [{o.scenario}] reply: {reply[:160]!r}")


def main(args: argparse.Namespace) -> None:
    asyncio.run(run_conversation_bench(args))
