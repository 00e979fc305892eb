"""Texts made from the memory document: the owner-context index and the Markdown export.

The index is what the agent always sees: every non-archived entry in full, one line
each, confirmed entries first, tentative ones marked, nothing cut. The export is what the
owner downloads: grouped by area, statuses shown by their labels.
"""

from __future__ import annotations

from core.memory.values import (
    ARCHIVED_LABEL,
    AREA_TITLES,
    AREAS,
    EMAIL_STYLE_LABEL,
    STATUS_LABELS,
    Entry,
    MemoryDocument,
    Origin,
    Status,
)

_STATUS_ORDER = {Status.STATED: 0, Status.OBSERVED: 1, Status.TENTATIVE: 2}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def index_lines(doc: MemoryDocument) -> list[str]:
    """``area/slug: text`` for each entry: stated, then observed, then ``(tentative)``."""
    ordered = sorted(
        enumerate(doc.entries), key=lambda pair: (_STATUS_ORDER[pair[1].status], pair[0])
    )
    lines = []
    for _, entry in ordered:
        mark = " (tentative)" if entry.status is Status.TENTATIVE else ""
        lines.append(f"{entry.path}: {_one_line(entry.text)}{mark}")
    return lines


def skill_lines(doc: MemoryDocument) -> list[str]:
    """One line per learned skill, by name: the same lines while nothing is saved (a stable prompt prefix)."""
    return [f"{s.name}: {_one_line(s.description)}" for s in sorted(doc.skills, key=lambda s: s.name)]


def render_index(doc: MemoryDocument) -> str:
    """The owner-context block: the memory index, then the learned skills' index."""
    parts = ["Memory (every saved note):"]
    parts += index_lines(doc) or ["(no notes yet)"]
    parts += ["", "Learned skills:"]
    parts += skill_lines(doc) or ["(none yet)"]
    return "\n".join(parts)


def label_of(entry: Entry) -> str:
    """The entry's own label, else what its origin or status says (email: "Learned from your sent email")."""
    if entry.label:
        return entry.label
    return EMAIL_STYLE_LABEL if entry.origin is Origin.EMAIL else STATUS_LABELS[entry.status]


def _export_entry(entry: Entry) -> list[str]:
    lines = [f"- **{entry.path}** ({label_of(entry)}): {entry.text}"]
    if entry.abstract:
        lines.append(f"  - Summary: {entry.abstract}")
    if entry.expires:
        lines.append(f"  - Expires: {entry.expires.isoformat()}")
    return lines


def render_export(doc: MemoryDocument, owner_name: str) -> str:
    """The whole memory as one Markdown file, grouped by area, with the archive last."""
    out = [f"# Memory of {owner_name}", ""]
    for area in AREAS:
        entries = doc.in_area(area)
        out += [f"## {AREA_TITLES[area]}", ""]
        for entry in entries:
            out += _export_entry(entry)
        if not entries:
            out.append("_Nothing saved._")
        out.append("")
    if doc.skills:
        out += ["## Learned skills", ""]
        for skill in doc.skills:
            out += [f"### {skill.name}", "", skill.description, "", skill.body, ""]
    if doc.archive:
        out += [f"## {ARCHIVED_LABEL}", ""]
        for record in doc.archive:
            when = record.archived_at.date().isoformat()
            out.append(
                f"- **{record.entry.path}** ({record.reason.value}, {when}): {record.entry.text}"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"
