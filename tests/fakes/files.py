"""Files an owner might send, made in the test: a JPEG with Pillow, a PDF with text written by hand.

The PDF is the smallest one readers take: a catalogue, a page tree, one page per text with
Helvetica and a content stream drawing the text, and a cross-reference table whose
offsets are counted as it is written — so pypdf extracts exactly the words put in.
"""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image


def jpeg(width: int = 640, height: int = 480, seed: int = 7) -> bytes:
    """A photo-like JPEG: noise, so its bytes are its own (a test searches files for them)."""
    image = Image.effect_noise((width, height), 64 + seed).convert("RGB")
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` × ``height`` and holds no pixels: a decompression bomb's first bytes."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(pages: list[str]) -> bytes:
    """A PDF with one page per text (each text on one line of the page)."""
    count = len(pages)
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(count))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for n, words in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({_escaped(words)}) Tj ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {5 + 2 * n} 0 R >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
