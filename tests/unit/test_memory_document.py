"""The memory document's pure operations and every limit, without a database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import AlreadyExists, MemoryFull, MemoryLimitError, NotFound
from core.memory import document as ops
from core.memory.codec import decode, encode, encoded_size, to_json
from core.memory.limits import MAX_DOCUMENT_BYTES
from core.memory.render import index_lines, render_export, render_index
from core.memory.values import (
    STATUS_LABELS,
    ArchiveReason,
    Evidence,
    MemoryDocument,
    Origin,
    Status,
)

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


def entry(path: str = "people/sister", text: str = "Sister: Ana", origin: Origin = Origin.STATED, **kw):
    return ops.make_entry(path, text, origin=origin, now=NOW, **kw)


@pytest.mark.parametrize("area", ["about", "preferences", "people", "routines", "lessons"])
def test_the_five_areas_are_accepted(area: str) -> None:
    assert entry(f"{area}/x").area == area


@pytest.mark.parametrize("path", ["work/x", "About/x", "people", "/x", "people/"])
def test_other_areas_and_malformed_paths_are_refused(path: str) -> None:
    with pytest.raises(MemoryLimitError):
        entry(path)


@pytest.mark.parametrize("slug", ["Sister", "my_sister", "sis ter", "-x", "é", "a" * 65])
def test_bad_slugs_are_refused(slug: str) -> None:
    with pytest.raises(MemoryLimitError):
        entry(f"people/{slug}")


def test_slug_limit_is_64() -> None:
    assert entry("people/" + "a" * 64).slug == "a" * 64


def test_text_limit_is_4000() -> None:
    assert len(entry(text="x" * 4000).text) == 4000
    with pytest.raises(MemoryLimitError, match="4,000"):
        entry(text="x" * 4001)
    with pytest.raises(MemoryLimitError):
        entry(text="   ")


def test_abstract_is_one_line_of_at_most_200() -> None:
    assert entry(abstract="a" * 200).abstract == "a" * 200
    with pytest.raises(MemoryLimitError):
        entry(abstract="a" * 201)
    with pytest.raises(MemoryLimitError, match="one line"):
        entry(abstract="two\nlines")


def test_long_quote_is_dropped_but_the_fact_kept() -> None:
    kept = entry(evidence=(Evidence(1, "q" * 400), Evidence(2, "q" * 401)))
    assert [e.quote for e in kept.evidence] == ["q" * 400, None]
    assert kept.text == "Sister: Ana"
    doc = ops.add_evidence(MemoryDocument((kept,)), kept.path, Evidence(3, "z" * 401), NOW)
    assert doc.entries[0].evidence[-1] == Evidence(3, None, NOW)


def test_statuses_and_labels_follow_the_table() -> None:
    one = entry(origin=Origin.INFERRED, evidence=(Evidence(1),))
    two = entry(origin=Origin.INFERRED, evidence=(Evidence(1), Evidence(2)))
    same_twice = entry(origin=Origin.INFERRED, evidence=(Evidence(1), Evidence(1)))
    assert one.status is Status.TENTATIVE
    assert two.status is Status.OBSERVED
    assert same_twice.status is Status.TENTATIVE
    assert entry(origin=Origin.EMAIL).status is Status.OBSERVED
    assert entry(origin=Origin.STATED).status is Status.STATED
    assert STATUS_LABELS == {
        Status.TENTATIVE: "Mentioned once",
        Status.OBSERVED: "Learned",
        Status.STATED: "Confirmed",
    }


def test_add_refuses_a_taken_path_and_evidence_promotes() -> None:
    doc = ops.add_entry(MemoryDocument(), entry(origin=Origin.INFERRED, evidence=(Evidence(1),)))
    with pytest.raises(AlreadyExists):
        ops.add_entry(doc, entry())
    doc = ops.add_evidence(doc, "people/sister", Evidence(2, "Ana"), NOW)
    assert doc.get("people/sister").status is Status.OBSERVED
    assert ops.add_evidence(doc, "people/sister", Evidence(2, "Ana"), NOW) is doc
    assert ops.confirm(doc, "people/sister", NOW).get("people/sister").status is Status.STATED


def test_replace_saves_new_first_and_links_both_ways() -> None:
    doc = ops.add_entry(MemoryDocument(), entry("about/home", "Lives in Lisbon"))
    new = entry("about/home-2", "Lives in Porto")
    doc = ops.replace(doc, new, ("about/home",), NOW)
    assert [e.path for e in doc.entries] == ["about/home-2"]
    assert doc.get("about/home-2").replaces == ("about/home",)
    (record,) = doc.archive
    assert (record.entry.path, record.reason, record.replaced_by) == (
        "about/home", ArchiveReason.REPLACED, "about/home-2")
    with pytest.raises(NotFound):
        ops.replace(doc, entry("about/x"), ("about/missing",), NOW)


def test_rewrite_at_the_same_path_archives_the_old_version() -> None:
    doc = ops.add_entry(MemoryDocument(), entry("about/home", "Lives in Lisbon"))
    doc = ops.replace(doc, entry("about/home", "Lives in Porto"), ("about/home",), NOW)
    assert doc.get("about/home").text == "Lives in Porto"
    assert doc.archive[0].entry.text == "Lives in Lisbon"


def test_a_rewrite_and_a_restored_version_keep_the_note_in_its_place() -> None:
    doc = MemoryDocument()
    for path in ("about/job", "about/home", "about/boat"):
        doc = ops.add_entry(doc, entry(path, path))
    doc = ops.replace(doc, entry("about/home", "Lives in Porto"), ("about/home",), NOW)
    assert [e.path for e in doc.entries] == ["about/job", "about/home", "about/boat"]
    doc = ops.restore_version(doc, 0, NOW)  # the first version comes back where the rewrite stood
    assert [e.path for e in doc.entries] == ["about/job", "about/home", "about/boat"]
    assert doc.get("about/home").text == "about/home"
    assert [(r.entry.text, r.replaced_by) for r in doc.archive] == [("Lives in Porto", "about/home")]
    doc = ops.restore_version(ops.archive(doc, "about/job", ArchiveReason.STALE, NOW), 1, NOW)
    assert [e.path for e in doc.entries] == ["about/home", "about/boat", "about/job"]  # nothing stood there: at the end


def test_archive_restore_and_forget_with_all_versions() -> None:
    doc = ops.add_entry(MemoryDocument(), entry("about/home", "v1"))
    doc = ops.replace(doc, entry("about/home-2", "v2"), ("about/home",), NOW)
    doc = ops.replace(doc, entry("about/home-3", "v3"), ("about/home-2",), NOW)
    doc = ops.add_entry(doc, entry("about/job", "Nurse"))
    doc = ops.archive(doc, "about/job", ArchiveReason.STALE, NOW)
    assert doc.get("about/job") is None
    restored = ops.restore(doc, "about/job", NOW)
    assert restored.get("about/job").text == "Nurse" and len(restored.archive) == 2
    with pytest.raises(NotFound):
        ops.restore(doc, "about/nothing", NOW)
    forgotten = ops.forget(doc, "about/home-3")
    assert forgotten.entries == ()
    assert [r.entry.path for r in forgotten.archive] == ["about/job"]
    with pytest.raises(NotFound):
        ops.forget(forgotten, "about/home-3")


def test_index_orders_by_status_marks_tentative_and_cuts_nothing() -> None:
    long_text = "word " * 700
    doc = MemoryDocument((
        entry("about/a", "tentative one", Origin.INFERRED, evidence=(Evidence(1),)),
        entry("about/b", "observed one", Origin.INFERRED, evidence=(Evidence(1), Evidence(2))),
        entry("about/c", long_text),
    ))
    lines = index_lines(doc)
    assert lines[0] == "about/c: " + " ".join(long_text.split())
    assert lines[1:] == ["about/b: observed one", "about/a: tentative one (tentative)"]
    assert "Learned skills:" in render_index(doc)
    archived = ops.archive(doc, "about/b", ArchiveReason.STALE, NOW)
    assert all("about/b" not in line for line in index_lines(archived))


def _big_archive(count: int) -> MemoryDocument:
    doc = MemoryDocument()
    for i in range(count):
        doc = ops.add_entry(doc, entry(f"about/n{i}", f"{i} " + "x" * 3000))
        doc = ops.archive(doc, f"about/n{i}", ArchiveReason.STALE, NOW + timedelta(minutes=i))
    return doc


def test_fit_trims_the_oldest_archived_records_first() -> None:
    doc = _big_archive(120)
    assert encoded_size(doc) > MAX_DOCUMENT_BYTES
    fitted = ops.fit(doc)
    assert encoded_size(fitted) <= MAX_DOCUMENT_BYTES
    kept = [r.entry.slug for r in fitted.archive]
    assert kept == [f"n{i}" for i in range(120 - len(kept), 120)]
    assert encoded_size(replace(fitted, archive=doc.archive[-len(kept) - 1:])) > MAX_DOCUMENT_BYTES


def test_a_document_that_cannot_fit_is_refused_with_memory_full() -> None:
    doc = MemoryDocument(tuple(entry(f"about/n{i}", "y" * 4000) for i in range(70)))
    with pytest.raises(MemoryFull, match="Memory is full"):
        ops.fit(doc)


def test_json_round_trip_keeps_design_field_names() -> None:
    doc = ops.add_entry(MemoryDocument(), entry(evidence=(Evidence(412, "my sister Ana"),)))
    data = to_json(doc)
    assert set(data) >= {"entries", "archive", "skills", "maintenance"}
    assert set(data["entries"][0]) >= {
        "area", "slug", "text", "abstract", "status", "origin", "evidence", "kind",
        "expires", "sensitive", "created_at", "updated_at"}
    assert data["entries"][0]["evidence"][0]["message_id"] == 412
    assert decode(encode(doc)) == doc


def test_export_groups_by_area_with_labels() -> None:
    doc = MemoryDocument((
        entry("people/sister", "Sister: Ana"),
        entry("about/job", "Works as a nurse", Origin.INFERRED, evidence=(Evidence(1),)),
    ))
    doc = ops.archive(ops.add_entry(doc, entry("lessons/x", "old")), "lessons/x", ArchiveReason.STALE, NOW)
    text = render_export(doc, "Ana")
    assert text.index("## About you") < text.index("Works as a nurse") < text.index("## Preferences")
    assert "- **people/sister** (Confirmed): Sister: Ana" in text
    assert "- **about/job** (Mentioned once): Works as a nurse" in text
    assert "## Let go" in text and "lessons/x" in text
