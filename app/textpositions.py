"""Positions in a document's text: Qt counts UTF-16 code units, Python counts characters.

A QTextDocument's plain text separates blocks with U+2029; the helpers here read it with \n line
breaks and convert between Qt positions and indexes into the Python string.
"""

from __future__ import annotations

import re

from PySide6.QtGui import QTextCursor


def document_text(document) -> str:
    """The document's exact text with \n line breaks (toPlainText would turn U+00A0 into spaces)."""
    return document.toRawText().replace("\u2029", "\n")


def text_between(document, start: int, end: int) -> str:
    """The text between the Qt positions ``start`` and ``end`` as ``document_text`` has it, read
    without copying the whole document (a 40 MB one took 250 ms, on every cursor rest)."""
    cursor = QTextCursor(document)
    cursor.setPosition(max(0, min(start, document.characterCount() - 1)))
    cursor.setPosition(max(0, min(end, document.characterCount() - 1)), QTextCursor.MoveMode.KeepAnchor)
    return cursor.selectedText().replace("\u2029", "\n")


def text_around(document, start: int, end: int, chars: int) -> tuple[str, str]:
    """The at most ``chars`` characters before Qt position ``start`` and after ``end``. Read as
    twice as many UTF-16 units (and two more, should a window begin inside a surrogate pair), of
    which a character takes at most two."""
    units = 2 * chars + 2
    before = text_between(document, start - units, start)
    return before[max(0, len(before) - chars) :], text_between(document, end, end + units)[:chars]


_BLOCK_BREAKS = re.compile("\r\n|[\r\u2029\ufdd0\ufdd1]")  # Qt's paragraph and frame marks


def as_stored(text: str) -> str:
    """``text`` as a document keeps it: CR LF, CR, U+2029 and Qt's frame marks are each one \\n."""
    return _BLOCK_BREAKS.sub("\n", text)


def utf16_length(text: str) -> int:
    """``text``'s length in Qt positions: UTF-16 code units (a character beyond U+FFFF takes two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def index_of(text: str, position: int) -> int:
    """The index into the Python string ``text`` of the Qt ``position`` (UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")[: 2 * position].decode("utf-16-le", "surrogatepass"))


def position_of(text: str, index: int) -> int:
    """The Qt position of index ``index`` into the Python string ``text``."""
    return utf16_length(text[:index])
