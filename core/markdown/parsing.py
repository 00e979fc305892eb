"""One Markdown reading of a reply, written in a channel's style as a stream of pieces.

markdown-it-py does the reading (CommonMark with strikethrough and tables, raw HTML off, so a
model's ``<b>`` is text to escape), and the walk here maps the syntax tree onto the style,
with ``Break``s between blocks where the splitter may end a message. How each block, list and
nested mark is written: docs/turn.md (A reply's Markdown, per channel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from core.markdown.pieces import Break, Close, Mark, Open, Piece, Style, Text

PARAGRAPH = "\n\n"
LINE = "\n"


MAX_NESTING = 50  # markdown-it's commonmark preset stops at 20 and drops what is deeper


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING}).enable(["strikethrough", "table"])


def read(markdown: str, style: Style) -> list[Piece]:
    """``markdown`` as pieces in ``style``; blank input gives no pieces.

    Nesting deeper than Python's stack (a thousand ``*`` around a word) is read as plain
    text: the owner still gets every word, unformatted, instead of no reply at all.
    """
    parser = _parser()
    try:
        tree = SyntaxTreeNode(parser.parse(markdown))
        return _merged(_Walk(style, parser.normalizeLinkText, _source_lines(markdown)).blocks(tree.children, PARAGRAPH))
    except RecursionError:
        return [Text(markdown.strip())] if markdown.strip() else []


def _source_lines(markdown: str) -> list[str]:
    """The lines as markdown-it numbers them (it reads CR LF and a lone CR as a line break)."""
    return markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _merged(pieces: Sequence[Piece]) -> list[Piece]:
    """Neighbouring texts as one, so that a cut inside them can choose among all their sentence ends."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + piece.text)
        else:
            out.append(piece)
    return out


def appended(pieces: Sequence[Piece], text: str) -> list[Piece]:
    """``pieces`` and then ``text`` as a block of its own, taken literally (not read as Markdown)."""
    if not text.strip():
        return list(pieces)
    return [*pieces, Break(PARAGRAPH), Text(text)] if pieces else [Text(text)]


def _has_text(pieces: Sequence[Piece]) -> bool:
    return any(isinstance(p, Text) and p.text.strip() for p in pieces)


def _joined(blocks: Sequence[list[Piece]], sep: str) -> list[Piece]:
    out: list[Piece] = []
    for block in blocks:
        if out:
            out.append(Break(sep))
        out += block
    return out


class _Walk:
    def __init__(self, style: Style, link_text: Callable[[str], str], lines: list[str]) -> None:
        self._style = style
        self._lines = lines  # the Markdown's own lines, to see where its author left a blank line
        self._link_text = link_text  # a URL as people read it: percent-escapes and punycode undone
        self._open: list[Mark] = []

    def _marked(self, mark: Mark, inner: Callable[[], list[Piece]]) -> list[Piece]:
        if mark.close and mark in self._open:  # a pair is not opened inside itself; a line prefix may nest
            return inner()
        self._open.append(mark)
        try:
            return [Open(mark), *inner(), Close(mark)]
        finally:
            self._open.pop()

    # blocks

    def blocks(self, nodes: Sequence[SyntaxTreeNode], sep: str) -> list[Piece]:
        """The blocks ``sep`` apart, or a line apart where the author wrote no blank line between them."""
        out: list[Piece] = []
        for node in nodes:
            block = self._block(node)
            if not _has_text(block):
                continue
            if out:
                out.append(Break(LINE if self._right_under(node) else sep))
            out += block
        return out

    def _right_under(self, node: SyntaxTreeNode) -> bool:
        """True when no blank line (inside a quote: no line of only ">") comes before ``node``'s first line."""
        first = node.map[0] if node.map is not None else 0
        return 0 < first <= len(self._lines) and bool(self._lines[first - 1].strip(" \t>"))

    def _block(self, node: SyntaxTreeNode) -> list[Piece]:
        kind, style = node.type, self._style
        if kind == "paragraph":
            return self._inline_of(node)
        if kind == "heading":
            return self._marked(style.bold, lambda: self._inline_of(node))
        if kind in ("bullet_list", "ordered_list"):
            return self._list(node, ordered=kind == "ordered_list")
        if kind == "blockquote":
            return self._marked(style.quote, lambda: self.blocks(node.children, PARAGRAPH))
        if kind in ("fence", "code_block"):
            language = node.info.split()[0] if kind == "fence" and node.info.strip() else ""
            mark = style.code_block(language)
            return [Open(mark), Text(node.content.removesuffix("\n")), Close(mark)]
        if kind == "hr":
            return [Text(style.rule)]
        if kind == "table":
            return self._table(node)
        if node.children:  # a block this walk does not know: its content, unmarked
            return self.blocks(node.children, LINE)
        return [Text(node.content)]

    def _list(self, node: SyntaxTreeNode, ordered: bool) -> list[Piece]:
        start = int(node.attrs.get("start", 1) or 1) if ordered else 1
        items: list[list[Piece]] = []
        for number, item in enumerate(node.children, start=start):
            marker = f"{number}. " if ordered else self._style.bullet
            indent = " " * len(marker)  # the item's further lines, and its nested lists, under its text
            mark = Mark(marker, "", line=indent, reopen=indent)
            items.append([Open(mark), *self.blocks(item.children, LINE), Close(mark)])
        return _joined(items, LINE)

    def _table(self, node: SyntaxTreeNode) -> list[Piece]:
        rows: list[list[Piece]] = []
        for row in (row for section in node.children for row in section.children):
            cells: list[Piece] = []
            for cell in row.children:
                cells += [Text(" | ")] if cells else []
                cells += self._inline_of(cell)
            rows.append(cells)
        return _joined(rows, LINE)

    # inline

    def _inline_of(self, node: SyntaxTreeNode) -> list[Piece]:
        out: list[Piece] = []
        for child in node.children:  # a block's one "inline" node, or a table cell's
            out += self._inline(child.children) if child.type == "inline" else self._inline([child])
        return out

    def _inline(self, nodes: Sequence[SyntaxTreeNode]) -> list[Piece]:
        out: list[Piece] = []
        for node in nodes:
            out += self._span(node)
        return out

    def _span(self, node: SyntaxTreeNode) -> list[Piece]:
        kind, style = node.type, self._style
        marks = {"strong": style.bold, "em": style.italic, "s": style.strike}
        if kind in ("text", "html_inline"):
            return [Text(node.content)] if node.content else []
        if kind in ("softbreak", "hardbreak"):
            return [Text("\n")]
        if kind == "code_inline":
            return self._marked(style.code, lambda: [Text(node.content)])
        if kind in marks:
            return self._marked(marks[kind], lambda: self._inline(node.children))
        if kind == "link":
            return self._link(node)
        if kind == "image":
            alt, src = _visible(self._inline(node.children)), self._link_text(str(node.attrs.get("src", "")))
            return [Text(f"{alt} ({src})" if alt else src)]
        return self._inline(node.children) if node.children else [Text(node.content)]

    def _link(self, node: SyntaxTreeNode) -> list[Piece]:
        href = str(node.attrs.get("href", ""))
        shown = self._link_text(href).removeprefix("mailto:")
        inner = self._inline(node.children)
        words = _visible(inner)
        if not words.strip():
            inner, words = [Text(shown)], shown
        mark = self._style.link(href)
        if mark is not None:
            return self._marked(mark, lambda: inner)
        if words == shown:  # <https://…> or <me@example.org>: the URL once
            return inner
        return [*inner, Text(f" ({shown})")]


def _visible(pieces: Sequence[Piece]) -> str:
    return "".join(p.text for p in pieces if isinstance(p, Text))
