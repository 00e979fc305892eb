"""memory_find's ranking on LoCoMo: the conversations' observations as notes, its questions as words.

Each observation LoCoMo lists for a session ("Caroline attended an LGBTQ support group …",
with the dialogue ids it comes from) becomes a stated note (slug: its first three topical
words; no abstract); each question of categories 1-4 is passed whole to memory_find. A
found note is relevant when its dialogue ids meet the question's evidence. Prints Hit@1,
Hit@5, Hit@10 (a relevant note among the first k) and MRR over the 20 memory_find returns.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from core.memory import document as ops
from core.memory.lookup import memory_find
from core.memory.values import MemoryDocument, Origin
from core.text import STOP_WORDS, words
from tests.bench.retrieval import CATEGORIES, DATA, SPLITS

NOW = datetime(2024, 1, 1, tzinfo=UTC)
CUTOFFS = (1, 5, 10)


def _notes(sample: dict[str, Any]) -> tuple[MemoryDocument, dict[str, set[str]]]:
    """The sample's observations as notes, and each note's dialogue ids."""
    doc, sources = MemoryDocument(), {}
    for session in sample["observation"].values():
        for observations in session.values():
            for text, evidence in observations:
                topical = [w for w in words(text) if w not in STOP_WORDS][:3]
                path = f"about/{'-'.join(topical) or 'note'}-{len(sources)}"
                doc = ops.add_entry(doc, ops.make_entry(path, text, origin=Origin.STATED, now=NOW))
                ids = evidence if isinstance(evidence, list) else [evidence]
                sources[path] = {str(i) for i in ids}
    return doc, sources


def _scores(samples: list[dict[str, Any]]) -> dict[str, list[int | None]]:
    """Per category, each question's rank of the first relevant note (None: not among those returned)."""
    ranks: dict[str, list[int | None]] = defaultdict(list)
    for sample in samples:
        doc, sources = _notes(sample)
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = set(qa["evidence"])
            found = [r["path"] for r in memory_find(doc, qa["question"])["results"]]
            first = next((n for n, path in enumerate(found) if sources[path] & evidence), None)
            for name in ("all", CATEGORIES[qa["category"]]):
                ranks[name].append(first)
    return ranks


def run_memory_find_bench(splits: list[str]) -> None:
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}; skipping (see ../shared/data/README.md).")
        return
    samples = json.loads(DATA.read_text())
    print("| split | questions | n | " + " | ".join(f"Hit@{k}" for k in CUTOFFS) + " | MRR |")
    print("|" + "---|" * (4 + len(CUTOFFS)))
    for split in splits:
        ranks = _scores([samples[i] for i in SPLITS[split]])
        for name in ["all", *CATEGORIES.values()]:
            firsts = ranks[name]
            hits = [sum(1 for f in firsts if f is not None and f < k) / len(firsts) for k in CUTOFFS]
            mrr = sum(1 / (f + 1) for f in firsts if f is not None) / len(firsts)
            print(f"| {split} | {name} | {len(firsts)} | " + " | ".join(f"{h:.3f}" for h in hits) + f" | {mrr:.3f} |")
