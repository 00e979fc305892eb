"""Writing a stream of pieces as messages that each fit a channel's limit.

Messages end between blocks; only a block longer than a whole message is cut inside it. At a
cut every open mark is closed and the next message reopens it, so no message leaves a tag or
a code fence open, and the length measured is the written one (markup and escapes included).
Where a cut falls and why: docs/turn.md (A reply's Markdown, per channel).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence

from core.markdown.pieces import Break, Close, Mark, Open, Piece, Text

_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*\s")


def split(pieces: Sequence[Piece], limit: int, escape: Callable[[str], str]) -> list[str]:
    """``pieces`` written as messages of at most ``limit`` characters each (none when there is no text)."""
    if limit < 1:
        raise ValueError("limit must be positive")
    return _write(pieces, limit, escape)


def joined(pieces: Sequence[Piece], escape: Callable[[str], str]) -> str:
    """``pieces`` written as one text, for a channel without a size limit."""
    return "".join(_write(pieces, None, escape))


def _write(pieces: Sequence[Piece], limit: int | None, escape: Callable[[str], str]) -> list[str]:
    parts = _Parts(limit, escape)
    for index, piece in enumerate(pieces):
        if isinstance(piece, Text):
            parts.text(piece.text)
        elif isinstance(piece, Open):
            parts.open(piece.mark)
        elif isinstance(piece, Close):
            parts.close()
        else:
            parts.block_break(piece.sep, _next_block(pieces, index + 1))
    parts.end_part()
    return parts.parts


def _next_block(pieces: Sequence[Piece], start: int) -> list[Piece]:
    end = start
    while end < len(pieces) and not isinstance(pieces[end], Break):
        end += 1
    return list(pieces[start:end])


def _lined(written: str, prefix: str) -> str:
    """``written`` with ``prefix`` after each line break (without its trailing spaces on a blank line)."""
    if not prefix or "\n" not in written:
        return written
    lines = written.split("\n")
    last = len(lines) - 1
    return "\n".join([lines[0], *(prefix + line if line or n == last else prefix.rstrip()
                                  for n, line in enumerate(lines[1:], start=1))])


class _Parts:
    """The messages written so far and the one being filled.

    ``stack`` holds the marks open in the reading; ``stack[:shown]`` are written in the
    current message, the rest wait for their first text. ``stack[:carried]`` were open
    when the last message was cut, so they are written again with their ``again`` form.
    """

    def __init__(self, limit: int | None, escape: Callable[[str], str]) -> None:
        self._limit = sys.maxsize if limit is None else limit
        self._escape = escape
        self.parts: list[str] = []
        self._out: list[str] = []
        self._size = 0
        self._stack: list[Mark] = []
        self._shown = 0
        self._carried = 0
        self._sep = ""  # the separator before the next text, written only if a text follows in this message

    def open(self, mark: Mark) -> None:
        self._stack.append(mark)

    def close(self) -> None:
        mark = self._stack.pop()
        if self._shown > len(self._stack):  # it was written in this message: close it there
            self._put(mark.close)
            self._shown -= 1
        self._carried = min(self._carried, len(self._stack))

    def end_part(self) -> None:
        if not self._size:
            return
        for mark in reversed(self._stack[:self._shown]):
            self._out.append(mark.close)
        self.parts.append("".join(self._out))
        self._out, self._size, self._carried, self._shown, self._sep = [], 0, self._shown, 0, ""

    def block_break(self, sep: str, block: list[Piece]) -> None:
        if not self._size:
            return  # a message never starts with a separator
        written_sep = _lined(self._escape(sep), _prefix(self._stack[:self._shown]))
        if self._cost(block, self._size + len(written_sep), self._shown, self._carried) <= self._limit:
            self._sep = written_sep
        elif self._cost(block, 0, 0, self._shown) <= self._limit or self._room() - len(written_sep) < self._limit // 3:
            self.end_part()
        else:  # longer than any message: start it here, it will be cut inside anyway
            self._sep = written_sep

    def text(self, raw: str) -> None:
        prefix = _prefix(self._stack)  # every mark is written by the time this text is
        while raw:
            if not self._size:
                raw = raw.lstrip("\n")
                if not raw:
                    return
            written = _lined(self._escape(raw), prefix)
            room = self._room()
            if len(written) <= room:
                self._emit(written)
                return
            cut, skip = self._cut(raw, room, len(prefix))
            head = raw[:cut].rstrip()
            if head:
                self._emit(_lined(self._escape(head), prefix))
            self.end_part()
            raw = raw[cut + skip:]

    def _cut(self, raw: str, room: int, prefix: int) -> tuple[int, int]:
        """Where to end this message inside ``raw``: (characters kept, characters dropped)."""
        fit, size = 0, 0
        while fit < len(raw):
            cost = len(self._escape(raw[fit])) + (prefix if raw[fit] == "\n" else 0)
            if size + cost > room:
                break
            size, fit = size + cost, fit + 1
        line = raw.rfind("\n", 0, fit + 1)
        if line > fit // 3:
            return line, 1
        sentences = [m.end() - 1 for m in _SENTENCE_END.finditer(raw, 0, fit + 1)]
        if sentences and sentences[-1] > fit // 3:
            return sentences[-1], 1
        space = max(raw.rfind(" ", 0, fit + 1), raw.rfind("\n", 0, fit + 1))
        if space > 0 or (space == 0 and self._size):
            return space, 1
        if self._size:
            return 0, 0  # end the message before this piece rather than inside a word
        return max(fit, 1), 0

    def _room(self) -> int:
        closing = sum(len(m.close) for m in self._stack[:self._shown])
        pending = sum(len(_opening(self._stack, n, self._carried)) + len(self._stack[n].close)
                      for n in range(self._shown, len(self._stack)))
        return self._limit - self._size - len(self._sep) - closing - pending

    def _emit(self, written: str) -> None:
        self._put(self._sep)
        self._sep = ""
        for n in range(self._shown, len(self._stack)):
            self._put(_opening(self._stack, n, self._carried))
        self._shown = len(self._stack)
        self._put(written)

    def _put(self, written: str) -> None:
        self._out.append(written)
        self._size += len(written)

    def _cost(self, block: list[Piece], size: int, shown: int, carried: int) -> int:
        """The message's length if ``block`` were written on at ``size`` with ``stack[:shown]`` written."""
        stack = list(self._stack)
        for piece in block:
            if isinstance(piece, Open):
                stack.append(piece.mark)
            elif isinstance(piece, Close):
                mark = stack.pop()
                if shown > len(stack):
                    size, shown = size + len(mark.close), shown - 1
                carried = min(carried, len(stack))
            elif isinstance(piece, Text) and piece.text:
                size += sum(len(_opening(stack, n, carried)) for n in range(shown, len(stack)))
                size += len(_lined(self._escape(piece.text), _prefix(stack)))
                shown = len(stack)
        return size + sum(len(m.close) for m in stack[:shown])


def _prefix(marks: Sequence[Mark]) -> str:
    return "".join(m.line for m in marks)


def _opening(stack: Sequence[Mark], index: int, carried: int) -> str:
    return stack[index].again if index < carried else stack[index].open
