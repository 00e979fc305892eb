"""The memory benchmarks' plumbing, on the scripted server: they run, import, ask, judge and print their tables.

Quality is what ``python -m tests.bench conversation|locomo-qa`` measures on a real server;
here every answer is the scripted server's placeholder, so every score is zero — what is
tested is that a run goes from import to table without failing (CI runs both on the tiny model).
"""

from __future__ import annotations

import argparse

import pytest

from tests.bench import conversation, locomo_qa
from tests.bench.on_server import add_arguments
from tests.bench.retrieval import DATA
from tests.fakes.model_server import FakeModelServer


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("suite")
    add_arguments(parser)
    return parser.parse_args(list(argv))


async def test_the_conversation_benchmark_runs_a_scenario_and_prints_its_table(
        server: FakeModelServer, capsys: pytest.CaptureFixture[str]) -> None:
    await conversation.run_conversation_bench(_args("conversation", "--base-url", server.base_url, "--model", "m", "--smoke"))
    printed = capsys.readouterr().out
    assert "remember" in printed and "score" in printed and "0/1" in printed
    assert any(b.get("max_tokens") for b in server.requests)


@pytest.mark.skipif(not DATA.exists(), reason=f"LoCoMo is not at {DATA} (shared/data beside the repository)")
async def test_locomo_qa_imports_asks_judges_and_prints_per_category_rows(
        server: FakeModelServer, capsys: pytest.CaptureFixture[str]) -> None:
    await locomo_qa.run_locomo_qa(_args("locomo-qa", "--base-url", server.base_url, "--model", "m", "--smoke"))
    printed = capsys.readouterr().out
    assert "nod            all                  1" in printed and "full context   all" in printed
    judged = [b for b in server.requests if "CORRECT or WRONG" in str(b["messages"][0]["content"])]
    assert len(judged) == 2  # the question answered by Nod and by the full-context baseline, each judged
