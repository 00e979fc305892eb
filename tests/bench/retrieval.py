"""Retrieval quality of history_search on LoCoMo, through the real search code.

Protocol (issue 3): each conversation becomes one owner's thread — speaker A as the owner
(named after the speaker), speaker B as Nod, each session's date as the sent time (turns a
second apart). Each question of categories 1–4 is asked verbatim as the query; the ranked
turns are scored against the question's evidence turns. R@k is the share of a question's
evidence found in the top k, averaged over questions; All@10 the share of questions with
all their evidence in the top 10; MRR the mean reciprocal rank of the first evidence turn.
Dev split: conversations 0–4 (tune here); test split: 5–9 (report only).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.storage.database import create_engine
from adapters.storage.message_store import MessageStore
from adapters.storage.migrations import migrate
from adapters.storage.owner_store import OwnerStore
from adapters.storage.search_index.derived import DerivedIndex
from bot.wiring import history_search
from core.clock import SystemClock
from core.message import Message, Role
from tests.tool_calls import history_args

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"
SPLITS = {"dev": range(0, 5), "test": range(5, 10)}
CUTOFFS = (5, 10, 20, 50)
DERIVED = {"on": True}  # the SQLite production path; --fts5 measures FTS5 alone
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Scores:
    recall: dict[int, list[float]]
    all10: list[bool]
    rr: list[float]

    @classmethod
    def empty(cls) -> Scores:
        return cls(defaultdict(list), [], [])

    def add(self, ranked: list[str], evidence: set[str]) -> None:
        for k in CUTOFFS:
            self.recall[k].append(len(evidence & set(ranked[:k])) / len(evidence))
        self.all10.append(evidence <= set(ranked[:10]))
        first = next((i for i, d in enumerate(ranked) if d in evidence), None)
        self.rr.append(0.0 if first is None else 1 / (first + 1))

    def row(self) -> list[str]:
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
        cells = [f"{mean(self.recall[k]):.3f}" for k in CUTOFFS]
        return [str(len(self.rr)), *cells, f"{mean([float(a) for a in self.all10]):.3f}", f"{mean(self.rr):.3f}"]


def _session_turns(conv: dict[str, Any]) -> list[tuple[str, str, str, datetime]]:
    turns, n = [], 1
    while f"session_{n}_date_time" in conv:
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        for i, turn in enumerate(conv.get(f"session_{n}", [])):
            turns.append((turn["dia_id"], turn["speaker"], turn["text"], when + timedelta(seconds=i)))
        n += 1
    return turns


async def _score_conversation(sample: dict[str, Any], db: Path, totals: dict[str, Scores]) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{db}")
    await migrate(engine)
    clock = SystemClock()
    conv = sample["conversation"]
    owner = await OwnerStore(engine).add(conv["speaker_a"], "UTC", (), clock.now())
    store = MessageStore(engine, clock)
    turns = _session_turns(conv)
    batch = [
        Message(owner.id, Role.OWNER if spk == conv["speaker_a"] else Role.ASSISTANT, text, "locomo", when, dia)
        for dia, spk, text, when in turns
    ]
    await store.append_many(owner.id, batch)
    stored = await store.recent(owner.id, len(batch) + 1)
    dia_of = {m.id: m.external_id for m in stored}
    search = history_search(engine, store, DerivedIndex.beside(f"sqlite+aiosqlite:///{db}", engine) if DERIVED["on"] else None)
    for qa in sample["qa"]:
        if qa["category"] not in CATEGORIES or not qa.get("evidence"):
            continue
        try:
            answer = await search.search(owner, history_args({"query": qa["question"], "limit": 50}))
            ranked = [dia_of[r["id"]] for r in answer["results"]]
        except Exception:  # noqa: BLE001 - a refused query scores zero, like a miss
            ranked = []
        evidence = set(qa["evidence"])
        totals["all"].add(ranked, evidence)
        totals[CATEGORIES[qa["category"]]].add(ranked, evidence)
    await engine.dispose()


async def run_locomo(splits: list[str], derived: bool = True) -> None:
    DERIVED["on"] = derived
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}; skipping (see ../shared/data/README.md).")
        return
    samples = json.loads(DATA.read_text())
    header = "| split | questions | n | R@5 | R@10 | R@20 | R@50 | All@10 | MRR |"
    print(header)
    print("|" + "---|" * 9)
    for split in splits:
        totals: dict[str, Scores] = defaultdict(Scores.empty)
        with tempfile.TemporaryDirectory() as tmp:
            for index in SPLITS[split]:
                await _score_conversation(samples[index], Path(tmp) / f"conv{index}.db", totals)
        for name in ["all", *CATEGORIES.values()]:
            print(f"| {split} | {name} | " + " | ".join(totals[name].row()) + " |")
