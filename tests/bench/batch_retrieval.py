"""LoCoMo retrieval through the production path: the ``nod`` CLI, as an operator would run it.

Per conversation: a fresh SQLite database (and so a fresh derived index), ``nod owners
add`` with speaker A's name, ``nod history import --owner A`` of a JSON Lines file
``{role, text, sent_at, id}`` (speaker A's turns as the owner's, speaker B's as Nod's,
the text alone — no speaker names —, each session's date as the sent time, turns a
second apart, ``id`` the turn's ``dia_id``), then every question of categories 1–4 as
``{"tool": "history_search", "args": {"query": ..., "limit": 50}}`` through one
``nod tool --owner A --batch`` process. The ranked ids are mapped back to dia_ids with
the same message ids the import assigned (read from the database), and scored exactly
like tests/bench/retrieval.py (R@k averaged over questions, All@10, MRR).

This differs from ``tests.bench locomo`` only where production differs from the
in-process harness: separate processes (the derived index is built by the ``nod tool``
process on its first search), the import's JSON parsing and ``import`` channel, and the
tool layer's argument validation. Both use speaker A's name as the owner's name, so with
the defaults the two print the same table. ``--owner b`` makes speaker B the owner (A's
turns become Nod's); ``--owner neither`` keeps A as the owner but names the owner
"Owner", so no speaker's name is dropped from the queries or boosts the owner's turns —
the protocol closest to the issue's first measurement.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.bench.retrieval import CATEGORIES, DATA, SPLITS, Scores, _session_turns
from tests.fakes.loopback import clean_env


def _nod(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bot", *args], cwd=cwd, env=env, input=stdin,
        capture_output=True, text=True, timeout=1_800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"nod {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def _questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [qa for qa in sample["qa"] if qa["category"] in CATEGORIES and qa.get("evidence")]


OWNERS = ("a", "b", "neither")


def _score_conversation(sample: dict[str, Any], folder: Path, totals: dict[str, Scores], who: str = "a") -> float:
    """Run one conversation through the CLI; returns the seconds the batch process took."""
    folder.mkdir()
    db = folder / "nod.db"
    env = clean_env(NOD_DATABASE_URL=f"sqlite+aiosqlite:///{db}")
    conv = sample["conversation"]
    speaker_owning = conv["speaker_b"] if who == "b" else conv["speaker_a"]
    owner = "Owner" if who == "neither" else speaker_owning
    lines = [
        json.dumps({
            "role": "owner" if speaker == speaker_owning else "assistant", "text": text,
            "sent_at": when.isoformat(), "id": dia,
        }, ensure_ascii=False)
        for dia, speaker, text, when in _session_turns(conv)
    ]
    source = folder / "history.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _nod(env, folder, "init")  # only nod init and nod run create a database
    _nod(env, folder, "owners", "add", owner)
    _nod(env, folder, "history", "import", "--owner", owner, str(source))
    with sqlite3.connect(db) as con:
        dia_of = {int(i): str(e) for i, e in con.execute("SELECT id, external_id FROM messages")}
    questions = _questions(sample)
    calls = "".join(
        json.dumps({"tool": "history_search", "args": {"query": qa["question"], "limit": 50}}, ensure_ascii=False) + "\n"
        for qa in questions
    )
    started = time.perf_counter()
    output = _nod(env, folder, "tool", "--owner", owner, "--batch", stdin=calls).splitlines()
    took = time.perf_counter() - started
    if len(output) != len(questions):
        raise RuntimeError(f"nod tool --batch answered {len(output)} lines for {len(questions)} calls")
    for qa, line in zip(questions, output, strict=True):
        answer = json.loads(line)
        ranked = [dia_of[r["id"]] for r in answer.get("results", [])]  # an error scores zero, like a miss
        evidence = set(qa["evidence"])
        totals["all"].add(ranked, evidence)
        totals[CATEGORIES[qa["category"]]].add(ranked, evidence)
    return took


def run_locomo_batch(splits: list[str], who: str = "a") -> None:
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}; skipping (see ../shared/data/README.md).")
        return
    samples = json.loads(DATA.read_text())
    print(f"Owner: {'speaker A' if who == 'a' else 'speaker B' if who == 'b' else 'speaker A, named Owner'}.\n")
    print("| split | questions | n | R@5 | R@10 | R@20 | R@50 | All@10 | MRR |")
    print("|" + "---|" * 9)
    seconds: dict[str, float] = {}
    for split in splits:
        totals: dict[str, Scores] = defaultdict(Scores.empty)
        seconds[split] = 0.0
        with tempfile.TemporaryDirectory() as tmp:
            for index in SPLITS[split]:
                seconds[split] += _score_conversation(samples[index], Path(tmp) / f"conv{index}", totals, who)
        for name in ["all", *CATEGORIES.values()]:
            print(f"| {split} | {name} | " + " | ".join(totals[name].row()) + " |")
    for split, took in seconds.items():
        print(f"\n{split}: `nod tool --batch` processes took {took:.1f} s in all (start-up and index build included).")
