"""The lossless JSON export of one owner's memory, and the rules its import keeps (issue 43: 8)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from core.errors import InvalidInput, MemoryLimitError, SecretRefused
from core.memory import document as ops
from core.memory import portable
from core.memory.codec import encode
from core.memory.values import ArchiveReason, Evidence, Maintenance, MemoryDocument, Origin, Skill, Status
from core.owner import Owner, OwnerSettings

NOW = datetime(2026, 11, 2, 13, 55, tzinfo=UTC)
ANA = Owner(7, "ana", "Europe/Lisbon", OwnerSettings(remember_sensitive=True, spending_limit_usd=4.5), NOW)


def every_kind() -> MemoryDocument:
    """A document with every kind of entry: each status, each archive reason, skills, evidence with
    and without quotes, a sensitive note, structured details, an expiry and a multi-line text."""
    doc = MemoryDocument(maintenance=Maintenance(watermark=412, failures=1))
    later = NOW + timedelta(days=3)
    notes = [
        ops.make_entry("people/sister", "Sister: Ana, lives in Porto", origin=Origin.STATED, now=NOW, abstract="Ana",
                       evidence=(Evidence(412, "my sister Ana lives in Porto", NOW),)),
        ops.make_entry("about/job", "Works as a nurse\nat Santo António", origin=Origin.INFERRED, now=NOW,
                       evidence=(Evidence(5, "I work nights at the hospital", NOW), Evidence(9, None, later)),
                       kind="fact", entities=("Santo António",), valid_from=date(2024, 1, 1)),
        ops.make_entry("routines/gym", "Goes to the gym on Tuesdays", origin=Origin.INFERRED, now=NOW,
                       evidence=(Evidence(11, "gym tuesday", NOW),), kind="preference"),
        ops.make_entry("about/health", "Has asthma", origin=Origin.STATED, now=NOW, sensitive=True),
        ops.make_entry("about/trip", "Flies to Tokyo on 3 March", origin=Origin.STATED, now=NOW, kind="plan",
                       event_date=date(2027, 3, 3), expires=date(2027, 3, 4)),
        ops.make_entry("preferences/writing-style", "Short, warm sentences", origin=Origin.EMAIL, now=NOW,
                       label="Learned from your sent email"),
    ]
    for note in notes:
        doc = ops.add_entry(doc, note)
    for n, reason in enumerate(ArchiveReason):
        old = ops.make_entry(f"lessons/old-{n}", f"An older lesson {n}", origin=Origin.STATED, now=NOW)
        doc = ops.archive(ops.add_entry(doc, old), old.path, reason, later, "lessons/new" if reason is ArchiveReason.REPLACED else None)
    skill = Skill("order-flowers", "Order flowers on florist.example", "1. Log in.\n2. Pick <bouquet>.", NOW, later,
                  last_used_at=later, edited_by_owner=True, extends="offering-choices")
    return replace(doc, skills=(skill, replace(skill, name="book-table", edited_by_owner=False, last_used_at=None)))


def test_every_kind_of_entry_is_in_the_document_under_test() -> None:
    doc = every_kind()
    assert {e.status for e in doc.entries} == set(Status)
    assert {r.reason for r in doc.archive} == set(ArchiveReason)
    assert any(e.sensitive for e in doc.entries) and any(e.expires for e in doc.entries) and doc.skills


def test_an_export_read_back_and_exported_again_is_the_same_bytes() -> None:
    doc = every_kind()
    text = portable.dumps(portable.export(ANA, doc, 17))
    back = portable.read(text)
    assert back.memory == doc and encode(back.memory) == encode(doc)
    assert (back.time_zone, back.settings, back.exported_from, back.document_version) == (
        "Europe/Lisbon", ANA.settings, "ana", 17)
    again = replace(ANA, time_zone=back.time_zone, settings=back.settings)
    assert portable.dumps(portable.export(again, back.memory, 17)) == text


def test_schedules_travel_as_kind_text_local_start_and_rule() -> None:
    from datetime import UTC, datetime

    from core.schedules.model import Kind, Schedule

    weekly = Schedule(7, 1, Kind.TASK, "sum up my week", datetime(2026, 12, 13, 19, 0), "FREQ=WEEKLY;BYDAY=SU",
                      datetime(2026, 12, 13, 19, 0, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC), 5)
    data = portable.export(ANA, every_kind(), 3, [weekly])
    assert data["schedules"] == [{"kind": "task", "text": "sum up my week", "at": "2026-12-13T19:00:00",
                                  "repeat": "FREQ=WEEKLY;BYDAY=SU"}]
    [back] = portable.read(portable.dumps(data)).schedules
    assert (back.kind, back.text, back.at, back.repeat) == ("task", "sum up my week", datetime(2026, 12, 13, 19, 0),
                                                            "FREQ=WEEKLY;BYDAY=SU")


def test_the_format_has_a_version_a_place_for_schedules_and_no_owner_id() -> None:
    data = portable.export(ANA, every_kind(), 3)
    assert (data["format"], data["format_version"], data["schedules"]) == ("nod-memory", 1, [])
    assert "id" not in data["owner"] and '"owner_id"' not in portable.dumps(data)


def _edited(change: object) -> str:
    data = json.loads(portable.dumps(portable.export(ANA, every_kind(), 3)))
    change(data)  # type: ignore[operator]
    return json.dumps(data, ensure_ascii=False)


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d["memory"]["entries"][0].update(text="my card 4111 1111 1111 1111"), "card number"),
    (lambda d: d["memory"]["archive"][0]["entry"].update(text="key sk-proj-" + "a1B2c3D4" * 6), "key or token"),
    (lambda d: d["memory"]["entries"][0]["evidence"][0].update(quote="password: hunter2"), "password"),
    (lambda d: d["memory"]["skills"][0].update(body="log in with password: hunter2"), "password"),
])
def test_a_secret_anywhere_in_the_file_refuses_the_whole_import(change: object, said: str) -> None:
    with pytest.raises(SecretRefused, match=said):
        portable.read(_edited(change))


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d.update(format="something-else"), "not a Nod memory export"),
    (lambda d: d.update(format_version=2), "upgrade Nod"),
    (lambda d: d.update(schedules=[{"kind": "reminder"}]), "a schedule without a kind"),
    (lambda d: d.update(schedules=[{"kind": "task", "text": "sum up", "at": "2026-12-07T19:00", "repeat": "FREQ=SECONDLY"}]),
     "FREQ must be"),
    (lambda d: d.update(schedules=[{"kind": "task", "text": "sum up", "at": "sunday"}]), "ISO 8601"),
    (lambda d: d["memory"]["entries"].append(d["memory"]["entries"][0]), "two notes at people/sister"),
    (lambda d: d["memory"]["entries"][0].update(slug="Bad_Slug"), "The short name 'Bad_Slug'"),
    (lambda d: d["memory"]["entries"][0].update(text="x" * 4_001), "4,000"),
    (lambda d: d["memory"]["entries"][0].pop("created_at"), "has no created_at"),
    (lambda d: d["owner"].update(time_zone="Nowhere/City"), "Unknown time zone"),
    (lambda d: d["owner"]["settings"].update(saving_enabled="yes"), "saving_enabled"),
])
def test_a_malformed_export_is_one_sentence(change: object, said: str) -> None:
    with pytest.raises(InvalidInput, match=said) as caught:
        portable.read(_edited(change))
    assert "\n" not in str(caught.value)


def test_a_memory_over_256_kib_is_refused_not_trimmed() -> None:
    doc = every_kind()
    for n in range(80):
        doc = ops.add_entry(doc, ops.make_entry(f"lessons/long-{n}", f"lesson {n} " + "word " * 790, origin=Origin.STATED,
                                                now=NOW))
    with pytest.raises(MemoryLimitError, match="over the 262,144"):
        portable.read(portable.dumps(portable.export(ANA, doc, 1)))
    with pytest.raises(MemoryLimitError, match="KiB"):
        portable.read(" " * (portable.MAX_EXPORT_BYTES + 1))


def test_a_file_that_is_not_json_names_the_other_import() -> None:
    with pytest.raises(InvalidInput, match="without --json reads Markdown"):
        portable.read("# Memory of ana\n")
