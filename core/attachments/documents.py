"""A document's text, for the model to read as an untrusted attachment: PDFs (pypdf) and plain text.

Which documents are read: PDFs, and the plain-text kinds (``text/*``, JSON, XML, YAML,
CSV, and files whose ending says text). Anything else is named with its type and size
and never fetched (``readable``). A PDF past ``MAX_PDF_PAGES`` is refused; an encrypted
one that opens with no password is read, another is not. Text is decoded as UTF-8 (a BOM
says UTF-16), then cut to ``MAX_DOCUMENT_CHARS`` with a line saying so.

The text is never the owner's words: it reaches the model inside an
``untrusted_attachment`` block in the turn's prompt and is not stored anywhere, so memory,
reflection and evidence quotes cannot cite it.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

from core.attachments.media import ATTACHMENT_TAG, MAX_DOCUMENT_CHARS, MAX_PDF_PAGES, MediaRef, described_file
from core.errors import AttachmentError, AttachmentTooLarge

log = logging.getLogger("nod.attachments")
PDF = "application/pdf"
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml", "application/yaml",
                         "application/csv", "application/x-ndjson", "application/javascript", "application/sql"})
_TEXT_ENDINGS = frozenset({"txt", "md", "markdown", "csv", "tsv", "json", "jsonl", "xml", "yaml", "yml", "log", "ini",
                           "toml", "cfg", "conf", "py", "js", "ts", "html", "htm", "css", "sql", "sh", "rst", "vcf",
                           "ics", "srt", "tex"})


@dataclass(frozen=True)
class DocumentText:
    text: str
    pages: int | None = None
    cut_from: int | None = None  # the text's whole length, when it was cut


def _base(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _ending(filename: str | None) -> str:
    return filename.rsplit(".", 1)[1].lower() if filename and "." in filename else ""


def is_pdf(content_type: str | None, filename: str | None) -> bool:
    return _base(content_type) == PDF or _ending(filename) == "pdf"


def readable(content_type: str | None, filename: str | None) -> bool:
    """Whether Nod reads this kind of document (PDF or plain text); others are only named."""
    base = _base(content_type)
    return (is_pdf(content_type, filename) or base.startswith("text/") or base in _TEXT_TYPES
            or _ending(filename) in _TEXT_ENDINGS)


def extracted(data: bytes, content_type: str | None, filename: str | None) -> DocumentText:
    """The document's text, bounded; AttachmentTooLarge past the pages, AttachmentError when unreadable."""
    if is_pdf(content_type, filename):
        text, pages = _pdf_text(data)
        return _bounded(text, pages)
    return _bounded(_decoded(data), None)


def _pdf_text(data: bytes) -> tuple[str, int]:
    from pypdf import PdfReader  # imported when a PDF arrives: 80 ms less for every `nod` command's start
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise AttachmentError("The PDF is protected by a password.")
        count = len(reader.pages)
        if count > MAX_PDF_PAGES:
            raise AttachmentTooLarge(f"The PDF has {count} pages; Nod reads up to {MAX_PDF_PAGES}.")
        parts: list[str] = []
        size = 0
        for number, page in enumerate(reader.pages, start=1):
            words = (page.extract_text() or "").strip()
            parts.append(f"[page {number}]\n{words}")
            size += len(parts[-1])
            if size > MAX_DOCUMENT_CHARS:  # the rest would be cut anyway
                break
        return "\n\n".join(parts), count
    except AttachmentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        log.info("pdf_unreadable error=%s", type(exc).__name__)
        raise AttachmentError("The PDF could not be read.") from exc


def _decoded(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8-sig", "replace")


def _bounded(text: str, pages: int | None) -> DocumentText:
    text = text.replace("\x00", "")
    if len(text) <= MAX_DOCUMENT_CHARS:
        return DocumentText(text, pages)
    head = text[:MAX_DOCUMENT_CHARS]
    cut = head.rfind("\n")
    return DocumentText(head[:cut] if cut > MAX_DOCUMENT_CHARS // 2 else head, pages, len(text))


def attachment_block(media: MediaRef, document: DocumentText) -> str:
    """The text as the model reads it: inside a block that says it is a file's, not the owner's words."""
    pages = f' pages="{document.pages}"' if document.pages is not None else ""
    name = described_file(media.filename, media.content_type, media.size_bytes).replace('"', "'")
    body = document.text.replace(f"</{ATTACHMENT_TAG}>", f"<\\/{ATTACHMENT_TAG}>")
    note = ""
    if document.cut_from is not None:
        note = (f"\n[Nod read the first {len(document.text):,} of {document.cut_from:,} characters; "
                "the rest is not shown.]")
    return f'<{ATTACHMENT_TAG} file="{name}"{pages}>\n{body}{note}\n</{ATTACHMENT_TAG}>'
