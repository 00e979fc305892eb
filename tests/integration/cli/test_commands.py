"""The ``nod`` command in process: its output, exit statuses and errors."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from tests.cli_runner import one_sentence
from tests.integration.cli.conftest import Nod


def test_owners_add_and_list(cli: Nod, here: Path) -> None:
    added = cli("owners", "add", "ana", "--telegram", "42", "--whatsapp", "+351911", "--tz", "Europe/Lisbon")
    assert added.returncode == 0, added.stderr
    listed = cli("owners", "list")
    assert listed.stdout.strip() == "ana\tEurope/Lisbon\ttelegram:42, whatsapp:+351911"
    again = cli("owners", "add", "ana")
    assert again.returncode == 1 and "already registered" in one_sentence(again)
    linked = cli("owners", "link", "ana", "--telegram", "43")
    assert linked.returncode == 0 and cli("owners", "set", "ana", "--tz", "Asia/Tokyo").returncode == 0
    assert cli("owners", "list").stdout.strip() == "ana\tAsia/Tokyo\ttelegram:42, whatsapp:+351911, telegram:43"
    taken = cli("owners", "add", "bo", "--telegram", "43")
    assert taken.returncode == 1 and "already registered" in one_sentence(taken)


def test_bad_usage_exits_2_with_one_sentence(cli: Nod, here: Path) -> None:
    result = cli("memory", "add", "--owner", "ana")
    assert result.returncode == 2
    one_sentence(result)
    assert cli("frobnicate").returncode == 2


def test_refusals_exit_1(cli: Nod, here: Path) -> None:
    cli("owners", "add", "ana")
    for args in (
        ("memory", "show", "--owner", "nobody"),
        ("memory", "add", "--owner", "ana", "work/x", "text"),
        ("memory", "add", "--owner", "ana", "about/Bad_Slug", "text"),
        ("memory", "add", "--owner", "ana", "about/x", "y" * 4001),
        ("memory", "add", "--owner", "ana", "about/card", "card 4111-1111-1111-1111"),
        ("memory", "add", "--owner", "ana", "about/x", "ok", "--expires", "soon"),
        ("memory", "forget", "--owner", "ana", "about/missing"),
        ("owners", "add", "bob", "--tz", "Nowhere/City"),
        ("owners", "add", "bob", "--telegram", "@bob"),
        ("owners", "link", "ana"),
    ):
        result = cli(*args)
        assert result.returncode == 1, args
        one_sentence(result)
    assert json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["entries"] == []


def test_memory_add_show_export_and_forget(cli: Nod, here: Path) -> None:
    cli("owners", "add", "ana")
    assert cli("memory", "add", "--owner", "ana", "people/sister", "Sister: Ana", "--abstract", "sister").returncode == 0
    assert cli("memory", "add", "--owner", "ana", "people/sister", "Sister: Ana, in Porto").returncode == 0
    data = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)
    (entry,) = data["entries"]
    assert (entry["text"], entry["status"], entry["origin"]) == ("Sister: Ana, in Porto", "stated", "stated")
    assert data["archive"][0]["entry"]["text"] == "Sister: Ana"
    export = cli("memory", "export", "--owner", "ana").stdout
    assert "## People" in export and "- **people/sister** (Confirmed): Sister: Ana, in Porto" in export
    assert cli("memory", "forget", "--owner", "ana", "people/sister").returncode == 0
    data = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)
    assert data["entries"] == [] and data["archive"] == []


def test_history_import_is_idempotent_and_reports_bad_lines(cli: Nod, here: Path) -> None:
    cli("owners", "add", "ana", "--tz", "Europe/Lisbon")
    lines = [
        {"role": "owner", "text": "I moved to Porto", "sent_at": "2024-05-01T10:00:00"},
        {"role": "assistant", "text": "Noted", "sent_at": "2024-05-01T10:00:05+01:00", "id": "a1"},
    ]
    file = here / "h.jsonl"
    file.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    first = cli("history", "import", "--owner", "ana", str(file))
    assert first.returncode == 0 and "Imported 2 new messages" in first.stdout
    second = cli("history", "import", "--owner", "ana", str(file))
    assert "Imported 0 new messages of 2 lines" in second.stdout
    file.write_text('{"role": "owner"}\n')
    bad = cli("history", "import", "--owner", "ana", str(file))
    assert bad.returncode == 1 and "Line 1" in one_sentence(bad)
    missing = cli("history", "import", "--owner", "ana", str(here / "none.jsonl"))
    assert missing.returncode == 1


def test_a_file_imported_by_an_earlier_version_imports_as_a_no_op(cli: Nod, here: Path) -> None:
    """Lines without ids were keyed by their hash alone; such keys are looked up, so running
    the same file again after the upgrade still stores nothing twice."""
    cli("owners", "add", "ana", "--tz", "Europe/Lisbon")
    lines = [json.dumps({"role": "owner", "text": f"line {n}", "sent_at": f"2024-05-01T10:0{n}:00"}) for n in range(3)]
    lines.append(json.dumps({"role": "owner", "text": "zoned", "sent_at": "2024-05-01T10:09:00.250000+05:30"}))
    file = here / "h.jsonl"
    file.write_text("\n".join(lines[:3]) + "\n")
    assert "Imported 3 new messages" in cli("history", "import", "--owner", "ana", str(file)).stdout
    with sqlite3.connect(here / "nod.db") as db:  # as an earlier version left them
        for line in lines[:3]:
            old = "sha1:" + hashlib.sha1(line.encode()).hexdigest()
            db.execute("UPDATE messages SET external_id = ? WHERE text = ?", (old, json.loads(line)["text"]))
    file.write_text("\n".join(lines) + "\n")
    again = cli("history", "import", "--owner", "ana", str(file))
    assert again.returncode == 0 and "Imported 1 new messages of 4 lines" in again.stdout, again.stderr
    with sqlite3.connect(here / "nod.db") as db:
        keys = [k for (k,) in db.execute("SELECT external_id FROM messages ORDER BY id")]
    assert len(keys) == 4 and keys[3].startswith("line 2024-05-01 04:39:00.250000 ")


def test_a_file_without_zones_is_the_same_file_after_the_owner_moves(cli: Nod, here: Path) -> None:
    """A time without a zone is read in the owner's zone, but keyed as written: after the
    owner's zone changes, running the same file again still stores nothing twice."""
    cli("owners", "add", "ana", "--tz", "Europe/Lisbon")
    file = here / "h.jsonl"
    file.write_text(json.dumps({"role": "owner", "text": "hi", "sent_at": "2024-05-01T10:00:00"}) + "\n")
    assert "Imported 1 new messages" in cli("history", "import", "--owner", "ana", str(file)).stdout
    assert cli("owners", "set", "ana", "--tz", "America/New_York").returncode == 0
    again = cli("history", "import", "--owner", "ana", str(file))
    assert "Imported 0 new messages of 1 lines" in again.stdout, again.stderr
    with sqlite3.connect(here / "nod.db") as db:
        assert [k for (k,) in db.execute("SELECT external_id FROM messages")][0].startswith("line 2024-05-01 10:00:00.000000 ")


def test_a_missing_secret_for_an_enabled_part_fails_at_start(cli: Nod, here: Path) -> None:
    result = cli("owners", "list", TWILIO_ACCOUNT_SID="AC123")
    assert result.returncode == 1
    assert "TWILIO_AUTH_TOKEN" in one_sentence(result)
    bad_url = cli("owners", "list", NOD_DATABASE_URL="mysql://x")
    assert bad_url.returncode == 1 and "NOD_DATABASE_URL" in one_sentence(bad_url)


def test_memory_import_saves_stated_notes_and_is_idempotent(cli: Nod, here: Path) -> None:
    cli("owners", "add", "ana")
    answer = here / "answer.md"
    answer.write_text("## People\n- Sister: Ana\n- password: hunter2\n## Lessons\n- Never book red-eye flights\n")
    first = cli("memory", "import", "--owner", "ana", str(answer))
    assert first.returncode == 0 and first.stdout.startswith("Saved 2 notes, skipped 1.")
    again = cli("memory", "import", "--owner", "ana", str(answer))
    assert again.stdout.startswith("Saved 0 notes, skipped 3.")
    data = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)
    assert sorted((e["area"], e["text"], e["status"]) for e in data["entries"]) == [
        ("lessons", "Never book red-eye flights", "stated"), ("people", "Sister: Ana", "stated")]


def test_nod_tool_runs_read_tools_one_at_a_time_and_in_batches(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana", "--tz", "Europe/Lisbon").returncode == 0
    lines = [
        {"role": "owner", "text": "We own two properties in Braga", "sent_at": "2024-05-08T10:00:00"},
        {"role": "assistant", "text": "Good to know.", "sent_at": "2024-05-08T10:01:00"},
    ]
    history = here / "history.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("history", "import", "--owner", "ana", str(history)).returncode == 0
    assert cli("memory", "add", "--owner", "ana", "about/home", "Owns two properties in Braga").returncode == 0

    single = cli("tool", "--owner", "ana", "history_search", '{"query": "property"}')
    assert single.returncode == 0, single.stderr
    answer = json.loads(single.stdout)
    assert answer["results"][0]["text"] == "We own two properties in Braga"
    assert answer["results"][0]["sent_at"] == "Wednesday 2024-05-08 10:00"

    refused = cli("tool", "--owner", "ana", "memory_read", '{"path": "hobbies"}')
    assert refused.returncode == 1 and "Areas: about" in one_sentence(refused)
    assert cli("tool", "--owner", "ana", "history_search", "{not json").returncode == 1
    assert cli("tool", "--owner", "ana").returncode == 2

    calls = [
        {"tool": "memory_find", "args": {"words": "property"}},
        "not a call",
        {"tool": "memory_read", "args": {"path": "about/home"}},
        {"tool": "send_email", "args": {}},
    ]
    batch = cli("tool", "--owner", "ana", "--batch",
                stdin="".join((c if isinstance(c, str) else json.dumps(c)) + "\n" for c in calls))
    assert batch.returncode == 0, batch.stderr
    results = [json.loads(line) for line in batch.stdout.splitlines()]
    assert len(results) == 4
    assert results[0]["results"][0]["path"] == "about/home"
    assert "error" in results[1] and "error" in results[3]
    assert results[2]["text"] == "Owns two properties in Braga" and results[2]["status"] == "stated"


def test_owners_set_changes_the_spending_limit(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    assert "$2.50 a month" in cli("owners", "set", "ana", "--spending-limit", "2.5").stdout
    assert "of a $2.50 limit" in cli("usage", "--owner", "ana").stdout
    bad = cli("owners", "set", "ana", "--spending-limit", "-1")
    assert bad.returncode == 1 and "positive amount" in bad.stderr
