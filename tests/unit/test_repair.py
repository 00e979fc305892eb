"""Repair's rules and their exceptions, on documents built in memory with a fixed clock."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from core.maintenance.repair import repair
from core.memory import document as ops
from core.memory.values import ArchiveReason, Evidence, MemoryDocument, Origin, Status

NOW = datetime(2026, 6, 1, 7, 7, tzinfo=UTC)
OLD = NOW - timedelta(days=61)
RECENT = NOW - timedelta(days=59)


def _doc(*entries: tuple[str, str, Origin, tuple[int, ...], datetime, dict[str, object]]) -> MemoryDocument:
    doc = MemoryDocument()
    for path, text, origin, sources, when, details in entries:
        evidence = tuple(Evidence(i, None, when) for i in sources)
        doc = ops.add_entry(doc, ops.make_entry(path, text, origin=origin, now=when, evidence=evidence, **details))  # type: ignore[arg-type]
    return doc


def _paths(doc: MemoryDocument) -> list[str]:
    return [e.path for e in doc.entries]


def test_expired_entries_are_archived_whatever_their_status() -> None:
    doc = _doc(("about/pass", "Gym pass until May", Origin.STATED, (1,), RECENT, {"expires": date(2026, 5, 31)}),
               ("about/today", "Expires today", Origin.STATED, (2,), RECENT, {"expires": date(2026, 6, 1)}))
    result = repair(doc, NOW)
    assert _paths(result.document) == ["about/today"]
    assert result.archived == (("about/pass", ArchiveReason.EXPIRED),)


def test_a_quiet_single_source_inference_without_details_goes_stale_after_60_days() -> None:
    doc = _doc(("about/likes-jazz", "Likes jazz", Origin.INFERRED, (1,), OLD, {}),
               ("about/likes-blues", "Likes blues", Origin.INFERRED, (2,), RECENT, {}),
               ("about/likes-rock", "Likes rock", Origin.INFERRED, (3, 4), OLD, {}),
               ("about/said", "Said once", Origin.STATED, (5,), OLD, {}))
    result = repair(doc, NOW)
    assert _paths(result.document) == ["about/likes-blues", "about/likes-rock", "about/said"]
    assert result.archived == (("about/likes-jazz", ArchiveReason.STALE),)


def test_inferred_plans_go_stale_but_completed_events_and_structured_facts_do_not() -> None:
    doc = _doc(("about/trip-plan", "Plans a trip to Rome", Origin.INFERRED, (1,), OLD, {"kind": "plan"}),
               ("about/trip-done", "2026-02-03: went to Rome", Origin.INFERRED, (2,), OLD,
                {"kind": "event", "event_date": date(2026, 2, 3)}),
               ("about/car", "Owns a red Fiat", Origin.INFERRED, (3,), OLD, {"kind": "possession"}))
    result = repair(doc, NOW)
    assert _paths(result.document) == ["about/trip-done", "about/car"]


def test_duplicates_keep_the_stronger_entry_with_both_sources() -> None:
    doc = _doc(("people/ana", "Sister: Ana, lives in Porto.", Origin.INFERRED, (1, 2), RECENT, {}),
               ("people/sister", "sister ana lives in porto", Origin.STATED, (3,), OLD, {}),
               ("people/sis", "Sister: Aná — lives in Porto", Origin.INFERRED, (4,), NOW, {}))
    result = repair(doc, NOW)
    assert _paths(result.document) == ["people/sister"]
    kept = result.document.entries[0]
    assert kept.status is Status.STATED and set(kept.source_ids) == {1, 2, 3, 4}
    assert sorted(result.archived) == [("people/ana", ArchiveReason.DUPLICATE), ("people/sis", ArchiveReason.DUPLICATE)]
    assert {r.replaced_by for r in result.document.archive} == {"people/sister"}


def test_among_equals_more_evidence_then_newer_wins() -> None:
    doc = _doc(("about/a", "Likes tea", Origin.INFERRED, (1, 2), OLD, {}),
               ("about/b", "likes tea", Origin.INFERRED, (3, 4, 5), RECENT, {}),
               ("about/c", "Likes coffee", Origin.INFERRED, (6, 7), OLD, {}),
               ("about/d", "likes coffee!", Origin.INFERRED, (8, 9), RECENT, {}))
    assert _paths(repair(doc, NOW).document) == ["about/b", "about/d"]


def test_nothing_to_repair_returns_the_document_unchanged() -> None:
    doc = _doc(("about/name", "Name: Maya", Origin.STATED, (1,), OLD, {}))
    result = repair(doc, NOW)
    assert result.document == doc and result.archived == ()
