"""``python -m tests.bench locomo-qa``: LoCoMo's questions answered through Nod's real turn, judged by an LLM.

Protocol, after the published memory systems' (Mem0, Zep, LangMem as the Mem0 paper ran them):
each LoCoMo conversation (``../shared/data/locomo10.json``, never copied into the repository)
is imported as one owner's history — speaker A the owner, speaker B Nod, each session's date
as the sent time — into a fresh SQLite file, the way ``nod history import`` stores it. Each
question of categories 1-4 is then asked as the owner's next message through the conductor
and the real turn (evidence selection, history_search, the reply check), each in its own copy
of that database, so one question's answer never informs the next. An LLM judge labels each
answer CORRECT or WRONG against the gold answer, generously (the same meaning, a date in
another form) — the J score is the share judged correct. The baseline row asks the same model
with the whole conversation in the prompt (full context; cut from its oldest end to
``--baseline-chars`` when a small model's window cannot hold it, and marked so).

Per category: questions, J, tokens per question (all of a question's model calls: the agent's
and the memory model's), latency p50/p95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from core.clock import FixedClock
from core.message import Message, Role
from tests.bench.on_server import Target, session
from tests.bench.retrieval import CATEGORIES, DATA, _session_turns

JUDGE = """Your task is to label an answer to a question as CORRECT or WRONG. You get a question, a gold
answer and a generated answer. Be generous: if the generated answer touches on the same topic and
meaning as the gold answer, it is CORRECT; a date or time in another format that refers to the same
moment is CORRECT. Reply with one word: CORRECT or WRONG."""
BASELINE = """You answer questions about a conversation between {a} and {b}. The whole conversation follows,
each line with its date. Answer briefly."""
SMOKE_QUESTIONS = 1
SMOKE_BASELINE_CHARS = 12_000  # the tiny model's 8,192-token window holds about this much besides the question


@dataclass(frozen=True)
class Asked:
    system: str  # "nod" or "full context"
    category: int
    question: str
    gold: str
    answer: str
    correct: bool
    tokens: int
    seconds: float


def _conversations(spec: str | None) -> list[int]:
    if not spec:
        return [0]
    chosen: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        chosen += list(range(int(low), int(high or low) + 1))
    return chosen


def _questions(sample: dict[str, Any], limit: int | None) -> list[dict[str, Any]]:
    picked = [q for q in sample["qa"] if q.get("category") in CATEGORIES and "answer" in q]
    if limit is None:
        return picked
    by_category: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for q in picked:
        by_category[q["category"]].append(q)
    spread = [q for n in range(limit) for c in sorted(by_category) if n < len(by_category[c]) for q in [by_category[c][n]]]
    return spread[:limit]  # every category before a second of any


async def _imported(target: Target, sample: dict[str, Any], database: Path) -> tuple[str, Any]:
    conv = sample["conversation"]
    turns = _session_turns(conv)
    last = max(when for *_, when in turns)
    async with session(target, database, FixedClock(last + timedelta(days=1)), conv["speaker_a"], "UTC") as nod:
        batch = [Message(nod.owner.id, Role.OWNER if spk == conv["speaker_a"] else Role.ASSISTANT, text, "locomo", when, dia)
                 for dia, spk, text, when in turns]
        await nod.svc.messages.append_many(nod.owner.id, batch)
    return conv["speaker_a"], last + timedelta(days=1)


async def _judge(client: AsyncOpenAI, model: str, question: str, gold: str, answer: str) -> bool:
    reply = await client.chat.completions.create(model=model, max_tokens=10, temperature=0, messages=[
        {"role": "system", "content": JUDGE},
        {"role": "user", "content": f"Question: {question}\nGold answer: {gold}\nGenerated answer: {answer}"}])
    said = (reply.choices[0].message.content or "").upper()
    return "CORRECT" in said and "WRONG" not in said.split("CORRECT")[0]


async def _ask_nod(target: Target, imported: Path, folder: Path, owner: str, now: Any, question: str) -> tuple[str, int, float]:
    copy = folder / "question.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{imported}{suffix}").exists():
            shutil.copyfile(f"{imported}{suffix}", f"{copy}{suffix}")
    index = Path(f"{imported}.search")
    if index.exists():
        shutil.rmtree(f"{copy}.search", ignore_errors=True)
        shutil.copytree(index, f"{copy}.search")
    began = time.monotonic()
    async with session(target, copy, FixedClock(now), owner, "UTC") as nod:
        before = await nod.usage()
        answer = await nod.say(question)
        rows = await nod.usage(before[-1].id if before else 0)
    return answer, sum(r.tokens_in + r.tokens_out for r in rows), time.monotonic() - began


def _transcript(sample: dict[str, Any], budget: int) -> tuple[str, bool]:
    lines = [f"[{when:%Y-%m-%d}] {spk}: {text}" for _, spk, text, when in _session_turns(sample["conversation"])]
    kept, used = [], 0
    for line in reversed(lines):
        used += len(line) + 1
        if used > budget:
            break
        kept.append(line)
    return "\n".join(reversed(kept)), len(kept) < len(lines)


async def _ask_full(client: AsyncOpenAI, target: Target, sample: dict[str, Any], question: str,
                    budget: int) -> tuple[str, int, float, bool]:
    conv = sample["conversation"]
    transcript, cut = _transcript(sample, budget)
    began = time.monotonic()
    try:
        reply = await client.chat.completions.create(model=target.model, max_tokens=200, temperature=0, messages=[
            {"role": "system", "content": BASELINE.format(a=conv["speaker_a"], b=conv["speaker_b"]) + "\n\n" + transcript},
            {"role": "user", "content": question}])
    except Exception as exc:  # noqa: BLE001 - a baseline the server refuses (context too long) scores wrong, said so
        return f"(refused: {type(exc).__name__})", 0, time.monotonic() - began, cut
    usage = reply.usage
    tokens = (usage.prompt_tokens + usage.completion_tokens) if usage else 0
    return reply.choices[0].message.content or "", tokens, time.monotonic() - began, cut


def _table(asked: list[Asked], title: str) -> str:
    rows: dict[tuple[str, str], list[Asked]] = defaultdict(list)
    for a in asked:
        rows[(a.system, CATEGORIES[a.category])].append(a)
        rows[(a.system, "all")].append(a)
    lines = [title, f"{'system':<14} {'category':<12} {'questions':>9} {'J':>6} {'tokens/q':>9} {'s p50':>7} {'s p95':>7}"]
    for (system, category), items in sorted(rows.items(), key=lambda kv: (kv[0][0] != "nod", kv[0][1] == "all", kv[0][1])):
        seconds = sorted(a.seconds for a in items)
        p95 = seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))]
        lines.append(f"{system:<14} {category:<12} {len(items):>9} {sum(a.correct for a in items) / len(items):>6.1%} "
                     f"{statistics.mean(a.tokens for a in items):>9.0f} {statistics.median(seconds):>7.1f} {p95:>7.1f}")
    return "\n".join(lines)


async def run_locomo_qa(args: argparse.Namespace) -> None:
    target = Target.from_args(args)
    limit = SMOKE_QUESTIONS if args.smoke else args.limit
    baseline_chars = min(args.baseline_chars, SMOKE_BASELINE_CHARS) if args.smoke else args.baseline_chars
    data = json.loads(DATA.read_text())
    client = AsyncOpenAI(base_url=target.base_url, api_key=target.api_key or "not-needed", timeout=600, max_retries=1)
    judge = args.judge_model or target.model
    asked: list[Asked] = []
    baseline_cut = False
    try:
        for number in _conversations(args.conversations):
            sample = data[number]
            with tempfile.TemporaryDirectory(prefix="nod-bench-locomo-") as folder:
                imported = Path(folder) / "imported.db"
                owner, now = await _imported(target, sample, imported)
                for qa in _questions(sample, limit):
                    question, gold = qa["question"], str(qa["answer"])
                    answer, tokens, seconds = await _ask_nod(target, imported, Path(folder), owner, now, question)
                    asked.append(Asked("nod", qa["category"], question, gold, answer,
                                       await _judge(client, judge, question, gold, answer), tokens, seconds))
                    full, tokens, seconds, cut = await _ask_full(client, target, sample, question, baseline_chars)
                    baseline_cut |= cut
                    asked.append(Asked("full context", qa["category"], question, gold, full,
                                       await _judge(client, judge, question, gold, full), tokens, seconds))
                    print(f"  conv {number} cat {qa['category']}: nod {'ok' if asked[-2].correct else 'wrong'}, "
                          f"full {'ok' if asked[-1].correct else 'wrong'} ({asked[-2].seconds:.0f} s)", flush=True)
    finally:
        await client.close()
    note = f" (full context cut to the last {baseline_chars:,} characters)" if baseline_cut else ""
    print(_table(asked, f"locomo-qa: {target.model} at {target.base_url or 'OpenAI'}, judge {judge}{note}"))
    for a in asked[: 2 * (limit or 3)]:
        said = re.sub(r"\s+", " ", a.answer)[:140]
        print(f"  [{a.system}] Q: {a.question!r} gold: {a.gold!r} answer: {said!r}")


def main(args: argparse.Namespace) -> None:
    asyncio.run(run_locomo_qa(args))
