"""Reading a window of a document's text by Qt positions gives what slicing its whole text gives."""

import random

from PySide6.QtGui import QTextDocument
from sfumato.app.textpositions import (
    document_text,
    index_of,
    position_of,
    text_around,
    text_between,
)


def test_windows_of_the_text_read_by_qt_position_match_the_whole_texts_slices(qapp):
    rng = random.Random(5)
    pieces = ["a", "é", "\u00a0", "😀", "𝔘", "\n", "\t", "\u2028", "word ", "x = 1\n"]
    text = "".join(rng.choice(pieces) for _ in range(3000))
    document = QTextDocument()
    document.setPlainText(text)
    whole = document_text(document)
    assert whole == text
    for _ in range(300):
        i, j = sorted(rng.randrange(len(whole) + 1) for _ in range(2))
        start, end = position_of(whole, i), position_of(whole, j)
        assert index_of(whole, start) == i
        chars = rng.choice([1, 7, 50, 400, 5000])
        assert text_between(document, start, end) == whole[i:j]
        assert text_around(document, start, end, chars) == (whole[max(0, i - chars) : i], whole[j : j + chars])
