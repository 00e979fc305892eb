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


async def test_the_reminder_scenario_scores_a_reminder_made_for_9_and_sent_when_due(
        server: FakeModelServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.bench.on_server import Target
    from tests.fakes.model_server import structured, text, tool

    target = Target.from_args(_args("conversation", "--base-url", server.base_url, "--model", "m"))
    server.enqueue("m", structured({"allowed": True}), purpose="trust_check")
    server.enqueue("m", tool("schedules", {"action": "create", "kind": "reminder", "text": "call the dentist",
                                           "at": "2026-12-04T09:00", "repeat": None}), text("I'll remind you at 9."))
    outcome = await conversation._one(target, "reminder", conversation.reminder, tmp_path)
    assert outcome.passed, outcome.why
    assert outcome.why.startswith("made for Fri 04 Dec 09:00")
