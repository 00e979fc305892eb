"""Benchmarks: ``python -m tests.bench storage|locomo``. Prints tables; asserts nothing.

storage: load and compare-and-swap save of a full 256 KiB memory document (p50, p99),
and the throughput of concurrent writers, on SQLite and (with NOD_TEST_POSTGRES_URL) on
PostgreSQL.

locomo: history_search retrieval quality on LoCoMo (R@k, All@10, MRR by category).

locomo-batch: the same questions through the production path, the ``nod`` CLI (``owners
add``, ``history import``, one ``tool --batch`` process per conversation); ``--owner b``
or ``--owner neither`` change who owns the conversation (see tests.bench.batch_retrieval.py).

turn: server-side turn overhead (everything but model time) with a full memory document
and a 100,000-message thread.

evidence: the model-free part of evidence selection on LoCoMo's test split.

memory-find: memory_find's ranking, LoCoMo's observations as notes and its questions as words.

maintenance: one tick over 10,000 new messages with a nearly full document; repair alone.

scale: history_search latency on a generated 1,000,000-message thread, against naive
FTS5, tantivy and bm25s (``--messages`` and ``--queries`` make it smaller or larger).

page: the memory page and GET /api/memory for a full 256 KiB document (p50/p99, bytes).

schedules: the scheduler with 10,000 active schedules: a tick's cost and due-to-sent delay.

webhooks: inbound WhatsApp webhooks into a ``nod run`` process at rising rates: accepted
messages per second and acknowledgement latency.

conversation: scripted owner scenarios through the real turn on any OpenAI-compatible server
(``--base-url``, ``--model``), scored from the memory document and the replies.

locomo-qa: LoCoMo's questions of categories 1-4 asked through the real turn over the imported
conversation, judged by an LLM (J score), beside a full-context baseline on the same model.
"""

from __future__ import annotations

import argparse
import asyncio

from tests.bench import conversation, locomo_qa
from tests.bench.batch_retrieval import OWNERS, run_locomo_batch
from tests.bench.evidence import run_evidence_bench
from tests.bench.maintenance import run_maintenance_bench
from tests.bench.memory_find import run_memory_find_bench
from tests.bench.on_server import add_arguments
from tests.bench.page import run_page_bench
from tests.bench.retrieval import SPLITS, run_locomo
from tests.bench.scale import run_scale
from tests.bench.schedules import run_schedules_bench
from tests.bench.storage import run_storage
from tests.bench.turn import run_turn_bench
from tests.bench.webhooks import run_webhook_bench
from tests.bench.workers import run_workers


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("suite", choices=["storage", "locomo", "locomo-batch", "scale", "turn", "maintenance", "evidence",
                                          "memory-find", "webhooks", "page", "workers", "conversation", "locomo-qa", "schedules"])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workers", type=int, default=3, help="workers: processes writing and searching at once")
    parser.add_argument("--fts5", action="store_true", help="locomo: FTS5 alone, without the derived index")
    parser.add_argument("--split", choices=[*SPLITS, "both"], default="both")
    parser.add_argument("--owner", choices=OWNERS, default="a", help="locomo-batch: which speaker is the owner")
    add_arguments(parser)
    args = parser.parse_args()
    if args.suite in ("conversation", "locomo-qa") and not args.model:
        parser.error(f"{args.suite} needs --model (and --base-url for a server other than OpenAI)")
    if args.suite == "storage":
        asyncio.run(run_storage(args.rounds))
    elif args.suite == "schedules":
        asyncio.run(run_schedules_bench())
    elif args.suite == "locomo":
        asyncio.run(run_locomo(list(SPLITS) if args.split == "both" else [args.split], not args.fts5))
    elif args.suite == "locomo-batch":
        run_locomo_batch(list(SPLITS) if args.split == "both" else [args.split], args.owner)
    elif args.suite == "memory-find":
        run_memory_find_bench(list(SPLITS) if args.split == "both" else [args.split])
    elif args.suite == "evidence":
        asyncio.run(run_evidence_bench())
    elif args.suite == "maintenance":
        asyncio.run(run_maintenance_bench())
    elif args.suite == "turn":
        asyncio.run(run_turn_bench(min(args.rounds, 100)))
    elif args.suite == "page":
        asyncio.run(run_page_bench(min(args.rounds, 200)))
    elif args.suite == "webhooks":
        asyncio.run(run_webhook_bench())
    elif args.suite == "scale":
        asyncio.run(run_scale(args.messages, args.queries))
    elif args.suite == "conversation":
        conversation.main(args)
    elif args.suite == "locomo-qa":
        locomo_qa.main(args)
    elif args.suite == "workers":
        asyncio.run(run_workers(args.messages, args.queries, args.workers))


main()
