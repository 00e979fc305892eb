"""``nod memory export --json`` and ``nod memory import --json``: one owner's memory, losslessly,
between databases; the Markdown export read back; the archive listed and restored (issue 43: 8, 11)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from adapters.storage.memory_store import MemoryStore
from adapters.storage.objects import ObjectStore
from bot.cli_memory import import_json
from bot.settings import load_settings
from bot.wiring import services
from core.clock import Clock
from core.memory import portable
from core.memory.codec import to_json
from core.ports import VersionedDocument
from tests.cli_runner import one_sentence
from tests.integration.cli.conftest import Nod
from tests.unit.test_memory_portable import every_kind


def _seed(owner: str) -> None:
    """Every kind of entry, stored as the memory model, reflection and the page would have left it."""
    async def seed() -> None:
        async with services(load_settings()) as svc:
            found = await svc.owners.by_name(owner)
            await svc.memory.update(found.id, lambda _doc: every_kind())
    asyncio.run(seed())


def _stored_body(database: Path, owner: str) -> str:
    with sqlite3.connect(database) as db:
        (body,) = db.execute("SELECT o.body FROM objects o JOIN owners w ON w.id = o.owner_id WHERE w.name = ?",
                             (owner,)).fetchone()
    return str(body)


def test_a_json_export_imported_into_another_database_is_the_same_document_to_the_byte(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana", "--tz", "Europe/Lisbon").returncode == 0
    assert cli("owners", "set", "ana", "--spending-limit", "4.5").returncode == 0
    _seed("ana")
    exported = cli("memory", "export", "--json", "--owner", "ana")
    assert exported.returncode == 0, exported.stderr
    (here / "ana.json").write_text(exported.stdout)

    other = f"sqlite+aiosqlite:///{here / 'other' / 'nod.db'}"
    assert cli("init", NOD_DATABASE_URL=other).returncode == 0
    assert cli("owners", "add", "ana", NOD_DATABASE_URL=other).returncode == 0
    imported = cli("memory", "import", "--json", "--owner", "ana", "-", stdin=exported.stdout, NOD_DATABASE_URL=other)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("Imported 6 notes, 6 archived and 2 skills into ana")

    assert _stored_body(here / "other" / "nod.db", "ana") == _stored_body(here / "nod.db", "ana")
    again = json.loads(cli("memory", "export", "--json", "--owner", "ana", NOD_DATABASE_URL=other).stdout)
    first = json.loads(exported.stdout)
    assert json.dumps(again["memory"], ensure_ascii=False) == json.dumps(first["memory"], ensure_ascii=False)
    assert again["owner"] == first["owner"] and again["memory"] == to_json(every_kind())
    assert first["owner"]["settings"]["spending_limit_usd"] == 4.5 and again["owner"]["time_zone"] == "Europe/Lisbon"


def test_an_owner_with_notes_is_replaced_only_when_asked(cli: Nod, here: Path) -> None:
    for name in ("ana", "bo"):
        assert cli("owners", "add", name).returncode == 0
    _seed("ana")
    export = cli("memory", "export", "--json", "--owner", "ana").stdout
    (here / "ana.json").write_text(export)
    assert cli("memory", "add", "--owner", "bo", "about/home", "Lives in Braga").returncode == 0
    refused = cli("memory", "import", "--json", "--owner", "bo", str(here / "ana.json"))
    assert refused.returncode == 1 and "add --replace" in one_sentence(refused)
    assert json.loads(cli("memory", "show", "--owner", "bo", "--json").stdout)["entries"][0]["slug"] == "home"
    replaced = cli("memory", "import", "--json", "--replace", "--owner", "bo", str(here / "ana.json"))
    assert replaced.returncode == 0 and "replaced" in replaced.stdout
    assert json.loads(cli("memory", "show", "--owner", "bo", "--json").stdout) == to_json(every_kind())
    assert json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout) == to_json(every_kind())  # untouched


def test_an_import_writes_only_to_the_owner_named_and_shows_no_one_elses_messages(cli: Nod, here: Path) -> None:
    """Evidence ids in a file are references, never keys to write by: bo's import of a note
    citing ana's message shows bo nothing of ana's words."""
    for name in ("ana", "bo"):
        assert cli("owners", "add", name).returncode == 0
    history = here / "h.jsonl"
    history.write_text(json.dumps({"role": "owner", "text": "my sister Ana lives in Porto",
                                   "sent_at": "2026-11-02T13:55:00+00:00"}) + "\n")
    assert cli("history", "import", "--owner", "ana", str(history)).returncode == 0
    doc = every_kind()
    data = portable.export(next_owner("bo"), doc, 1)
    data["memory"]["entries"][0]["evidence"] = [{"message_id": 1, "quote": "my sister Ana lives in Porto",
                                                 "added_at": None}]
    assert cli("memory", "import", "--json", "--owner", "bo", "-", stdin=json.dumps(data)).returncode == 0
    shown = cli("memory", "show", "--owner", "bo")
    assert shown.returncode == 0 and "sources:" not in shown.stdout.split("\n")[1]
    assert json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["entries"] == []


def next_owner(name: str):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from core.owner import Owner, OwnerSettings
    return Owner(99, name, "UTC", OwnerSettings(), datetime(2026, 1, 1, tzinfo=UTC))


def test_a_secret_smuggled_into_an_export_refuses_the_import_and_writes_nothing(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    data = portable.export(next_owner("ana"), every_kind(), 1)
    data["memory"]["archive"][2]["entry"]["text"] = "Card 4111 1111 1111 1111 for travel"
    refused = cli("memory", "import", "--json", "--owner", "ana", "-", stdin=json.dumps(data))
    assert refused.returncode == 1 and "card number" in one_sentence(refused)
    assert json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["entries"] == []


class _WrittenMeanwhile(MemoryStore):
    """The memory store as a second writer (a chat turn in ``nod run``) would leave it: a note is
    saved just after the import read the version it will write on."""

    def __init__(self, objects: ObjectStore, clock: Clock) -> None:
        super().__init__(objects, clock)
        self.now = clock.now
        self.done = False

    async def load(self, owner_id: int) -> VersionedDocument:
        read = await super().load(owner_id)
        if not self.done:
            self.done = True
            from core.memory import document as ops
            from core.memory.values import Origin
            await super().update(owner_id, lambda d: ops.add_entry(d, ops.make_entry(
                "about/new", "Saved while importing", origin=Origin.STATED, now=self.now())))
        return read


def test_an_import_is_one_compare_and_swap_on_the_version_it_read(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    text = portable.dumps(portable.export(next_owner("ana"), every_kind(), 1))

    async def race() -> str:
        from dataclasses import replace

        async with services(load_settings()) as svc:
            store = _WrittenMeanwhile(ObjectStore(svc.engine), svc.clock)
            try:
                await import_json(replace(svc, memory=store), "ana", text, replace_existing=True)
            except Exception as exc:  # noqa: BLE001 - the refusal is what is asserted
                return str(exc)
            return "imported"

    assert asyncio.run(race()).startswith("ana's memory changed while it was being imported; nothing was imported")
    entries = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["entries"]
    assert [e["slug"] for e in entries] == ["new"]  # the note saved meanwhile stands


def test_the_markdown_export_reimported_is_exactly_its_notes(cli: Nod, here: Path) -> None:
    for name in ("ana", "bo"):
        assert cli("owners", "add", name).returncode == 0
    _seed("ana")
    markdown = cli("memory", "export", "--owner", "ana").stdout
    imported = cli("memory", "import", "--owner", "bo", "-", stdin=markdown)
    assert imported.returncode == 0 and imported.stdout.strip() == "Saved 6 notes, skipped 0."
    ana = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)["entries"]
    bo = json.loads(cli("memory", "show", "--owner", "bo", "--json").stdout)
    assert sorted((e["area"], e["slug"], e["text"], e["abstract"], e["expires"]) for e in bo["entries"]) == sorted(
        (e["area"], e["slug"], e["text"], e["abstract"], e["expires"]) for e in ana)  # in the export's order: by area
    assert {e["status"] for e in bo["entries"]} == {"stated"} and bo["archive"] == [] and bo["skills"] == []


def test_archived_notes_are_listed_and_restored_as_the_page_restores_them(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    assert cli("memory", "archive", "list", "--owner", "ana").stdout.strip() == "ana has no archived notes."
    _seed("ana")
    listed = json.loads(cli("memory", "archive", "list", "--owner", "ana", "--json").stdout)
    assert [(r["number"], r["path"], r["reason"]) for r in listed][:2] == [
        (1, "lessons/old-0", "replaced"), (2, "lessons/old-1", "merged")]
    text = cli("memory", "archive", "list", "--owner", "ana").stdout.splitlines()
    assert text[0].startswith("1\tlessons/old-0\treplaced by lessons/new, 2026-11-05 13:55\t")
    restored = cli("memory", "archive", "restore", "--owner", "ana", "2")
    assert restored.returncode == 0 and restored.stdout.strip() == "Restored lessons/old-1."
    assert cli("memory", "add", "--owner", "ana", "lessons/old-1", "Rewritten").returncode == 0  # archives the restored one
    by_path = cli("memory", "archive", "restore", "--owner", "ana", "lessons/old-1")
    assert by_path.stdout.strip() == "Restored lessons/old-1; the note that stood there is archived."
    shown = json.loads(cli("memory", "show", "--owner", "ana", "--json").stdout)
    assert next(e for e in shown["entries"] if e["slug"] == "old-1")["text"] == "An older lesson 1"
    assert any(r["entry"]["text"] == "Rewritten" for r in shown["archive"])
    for which in ("99", "about/none"):
        missing = cli("memory", "archive", "restore", "--owner", "ana", which)
        assert missing.returncode == 1 and "archive list" in one_sentence(missing)


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_an_unreadable_file_is_one_sentence(cli: Nod, here: Path, flag: list[str]) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    (here / "latin1.md").write_bytes(b"- caf\xe9\n")
    result = cli("memory", "import", *flag, "--owner", "ana", str(here / "latin1.md"))
    assert result.returncode == 1 and "as UTF-8 text" in one_sentence(result)


def test_reminders_travel_with_the_json_export(cli: Nod, here: Path) -> None:
    from tests.integration.cli.test_edges import _one_schedule

    assert cli("owners", "add", "ana", "--tz", "Europe/Lisbon").returncode == 0
    asyncio.run(_one_schedule(here))
    exported = cli("memory", "export", "--json", "--owner", "ana").stdout
    [one] = json.loads(exported)["schedules"]
    assert one["kind"] == "reminder" and one["text"] == "call the dentist" and one["at"].endswith("T09:00:00")
    other = f"sqlite+aiosqlite:///{here / 'other' / 'nod.db'}"
    assert cli("init", NOD_DATABASE_URL=other).returncode == 0
    assert cli("owners", "add", "ana", NOD_DATABASE_URL=other).returncode == 0
    imported = cli("memory", "import", "--json", "--owner", "ana", "-", stdin=exported, NOD_DATABASE_URL=other)
    assert ", 1 reminders and tasks into ana" in imported.stdout, imported.stderr
    [there] = json.loads(cli("schedules", "list", "--owner", "ana", "--json", NOD_DATABASE_URL=other).stdout)["schedules"]
    assert there["text"] == "call the dentist" and there["next_run"].endswith("09:00 Lisbon time")
    again = cli("memory", "import", "--json", "--replace", "--owner", "ana", "-", stdin=exported, NOD_DATABASE_URL=other)
    assert again.returncode == 0 and ", 0 reminders and tasks" in again.stdout  # not made twice
