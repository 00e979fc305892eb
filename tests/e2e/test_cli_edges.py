"""``nod`` refusing what it cannot do, in process through ``bot.cli.main(argv)`` (issue 14: 6, 9).

Each case is one sentence on standard error and exit status 1, never a traceback and never
"unexpected …Error".
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.e2e.conftest import Nod, one_sentence


def _refused(cli: Nod, *argv: str) -> str:
    result = cli(*argv)
    assert result.returncode == 1
    return one_sentence(result)


# aiosqlite's worker thread for the connection that failed to open outlives asyncio.run here
# and reports to the closed loop; a real `nod` process exits first (checked by hand: clean)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_database_that_cannot_be_opened_is_one_sentence_naming_it(
        here: Path, cli: Nod) -> None:
    earlier = set(threading.enumerate())  # threads another test left behind are not waited for here
    missing = here / "missing" / "nod.db"
    result = cli("owners", "list", NOD_DATABASE_URL=f"sqlite+aiosqlite:///{missing}")
    assert result.returncode == 1
    assert one_sentence(result).startswith(f"nod: There is no Nod database at {missing}; create it with `nod init`")
    assert not missing.parent.exists()  # nothing was made on the way
    (here / "folder.db").mkdir()
    result = cli("owners", "list", NOD_DATABASE_URL=f"sqlite+aiosqlite:///{here / 'folder.db'}")
    assert one_sentence(result).startswith(f"nod: The SQLite file {here / 'folder.db'} failed: ")
    for thread in set(threading.enumerate()) - earlier:  # let it report here, where it is expected, not in the next test
        if "_connection_worker_thread" in thread.name:
            thread.join(timeout=10)


def test_an_import_line_dated_in_year_one_is_a_sentence(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    lines = here / "old.jsonl"
    lines.write_text(json.dumps({"role": "owner", "text": "hi", "sent_at": "0001-01-01T00:00:00+05:00"}) + "\n")
    assert "between the years 1900 and 2199" in _refused(cli, "history", "import", "--owner", "ana", str(lines))


@pytest.mark.parametrize("path,text", [
    ("about/card", "My card 4111.1111.1111.1111"), ("about/4111-1111-1111-1111", "a harmless note"),
    ("about/pin", "card 4111_1111_1111_1111 expires"), ("about/nums", "4111 1111 1111 1111"),
])
def test_a_card_written_any_way_is_refused_in_any_field(
        here: Path, cli: Nod, path: str, text: str) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    assert "card number" in _refused(cli, "memory", "add", "--owner", "ana", path, text)


def test_an_import_skips_cards_with_dots_and_builds_no_slug_from_them(
        here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    answer = here / "answer.md"
    answer.write_text("## About you\n- 4111.1111.1111.1111\n- Card 4111/1111/1111/1111 for travel\n- Likes figs\n")
    imported = cli("memory", "import", "--owner", "ana", str(answer))
    assert imported.returncode == 0
    out = imported.stdout
    assert out.startswith("Saved 1 notes, skipped 2.") and out.count("looks like a secret") == 2
    shown = cli("memory", "show", "--owner", "ana", "--json")
    assert shown.returncode == 0 and "4111" not in shown.stdout


def test_a_batch_line_no_engine_can_take_is_answered_and_the_rest_go_on(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    calls = [{"tool": "history_search", "args": {"query": "x", "to": "9999-12-31"}},
             {"tool": "history_search", "args": {"around": 2**63}},
             {"tool": "memory_read", "args": {"path": "about"}}]
    batch = cli("tool", "--owner", "ana", "--batch", stdin="".join(json.dumps(c) + "\n" for c in calls))
    assert batch.returncode == 0
    results = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [set(r) for r in results] == [{"error"}, {"error"}, {"area", "entries", "count"}]


def test_a_command_that_never_searches_makes_no_search_index(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0 and cli("owners", "list").returncode == 0
    assert (here / "nod.db").exists() and not (here / "nod.db.search").exists()


def test_nod_page_prints_a_one_time_link_and_revokes_sessions(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    off = cli("page", "--owner", "ana")
    assert off.returncode == 1 and one_sentence(off) == (
        "nod: The memory page is off: the operator sets NOD_SECRET_KEY and NOD_PUBLIC_URL to turn it on.")
    page = {"NOD_SECRET_KEY": "s3cret-s3cret-s3cret", "NOD_PUBLIC_URL": "https://nod.example.org"}
    link = cli("page", "--owner", "ana", **page)
    assert link.returncode == 0 and link.stdout.startswith("https://nod.example.org/settings/memory?t=")
    assert cli("page", "--owner", "ana", "--revoke", **page).stdout.strip() == "Ended 0 page sessions of ana."


def test_nod_skills_list_show_forget_and_memory_show_lists_them(here: Path, cli: Nod) -> None:
    import asyncio
    from dataclasses import replace
    from datetime import UTC, datetime

    from bot.settings import load_settings
    from bot.wiring import services
    from core.memory.model import Skill

    assert cli("owners", "add", "ana").returncode == 0
    at = datetime(2026, 12, 1, tzinfo=UTC)

    async def seed() -> None:
        async with services(load_settings()) as svc:
            owner = await svc.owners.by_name("ana")
            skill = Skill("order-flowers", "Order flowers on florist.example", "1. Log in.", at, at, edited_by_owner=True)
            await svc.memory.update(owner.id, lambda d: replace(d, skills=(skill,)))

    asyncio.run(seed())
    assert cli("skills", "list", "--owner", "ana").stdout.strip() == (
        "order-flowers\tOrder flowers on florist.example\t(edited by the owner)")
    assert cli("skills", "show", "order-flowers", "--owner", "ana").stdout.strip().endswith("1. Log in.")
    shown = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["skills"][0]
    assert {"name", "description", "body", "created_at", "updated_at", "last_used_at", "edited_by_owner"} <= set(shown)
    assert cli("skills", "forget", "order-flowers", "--owner", "ana").returncode == 0
    missing = cli("skills", "show", "order-flowers", "--owner", "ana")
    assert missing.returncode == 1 and "no learned skill" in one_sentence(missing)


def test_an_import_on_a_terminal_shows_a_progress_bar_to_the_whole_file(here: Path, cli: Nod) -> None:
    import asyncio
    import io

    from bot.cli_history import history_import
    from bot.settings import load_settings
    from bot.wiring import services
    from core.storage.message_store import IMPORT_BATCH

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert cli("owners", "add", "ana").returncode == 0
    lines = [json.dumps({"role": "owner", "text": f"line {n}", "sent_at": "2026-01-01T10:00:00+00:00"})
             for n in range(2 * IMPORT_BATCH + 500)]
    (here / "h.jsonl").write_text("\n".join(lines) + "\n")
    shown = Terminal()

    async def run() -> str:
        async with services(load_settings()) as svc:
            return await history_import(svc, "ana", here / "h.jsonl", shown)

    total = 2 * IMPORT_BATCH + 500
    assert asyncio.run(run()) == f"Imported {total:,} new messages of {total:,} lines for ana."
    updates = [u.split("]")[1].split() for u in shown.getvalue().split("\r")[1:]]
    assert [u[1] for u in updates] == [f"{IMPORT_BATCH:,}", f"{2 * IMPORT_BATCH:,}", f"{total:,}"]
    percents = [int(u[0].rstrip("%")) for u in updates]
    assert 0 < percents[0] < percents[1] < percents[2] == 100


def test_a_bad_line_stops_an_import_after_the_batches_before_it_are_stored(here: Path, cli: Nod) -> None:
    import asyncio

    from bot.settings import load_settings
    from bot.wiring import services

    assert cli("owners", "add", "ana").returncode == 0
    good = [json.dumps({"role": "owner", "text": f"line {n}", "sent_at": "2026-01-01T10:00:00+00:00"})
            for n in range(2_500)]
    (here / "h.jsonl").write_text("\n".join([*good, '{"role": "owner"}']) + "\n")
    bad = cli("history", "import", "--owner", "ana", str(here / "h.jsonl"))
    assert bad.returncode == 1 and "Line 2501" in one_sentence(bad)

    async def stored() -> int:
        async with services(load_settings()) as svc:
            return await svc.messages.count((await svc.owners.by_name("ana")).id)

    assert asyncio.run(stored()) == 2_000  # two whole batches of 1,000; the rest of the file is not taken
