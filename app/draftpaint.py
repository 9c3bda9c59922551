"""How a draft looks in the editor: extra selections over each region, by the tokens' state.

While denoising, a token not yet accepted is tinted by how unsure the model is and its text faded
(the more, the less sure: undecided positions show as faint noise, app/noise.py);
accepted tokens and the finished result get a light tint (low-confidence ones a wavy underline if
the user asks); a region with no draft yet, or whose tokens do not add up to its text, one tint.

A result reviewed as a diff (``diff_view``) shows its new words or tokens green on the light tint,
and under each run of changed lines a ghost of what they were: removed text red and struck
through, kept text faded, on a faint red band (app/ghostlines.py: drawn, never in the document).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextEdit

from sfumato.app.ghostlines import Pieces
from sfumato.app.reviewdiff import ReviewDiff
from sfumato.app.textpositions import as_stored, index_of, position_of, utf16_length
from sfumato.model.api import Candidate

LOW_CONFIDENCE = 0.5
ADDED = QColor("#3fa34d")  # new text of a reviewed diff
REMOVED = QColor("#d04040")  # the original's text it no longer has (and a low-confidence underline)


def faded(color: QColor, alpha: int) -> QColor:
    color = QColor(color)
    color.setAlpha(alpha)
    return color


def draft_selections(
    document: QTextDocument,
    palette: QPalette,
    spans: Sequence[tuple[int, int]],
    candidates: Sequence[Candidate | None],
    done: bool,
    showing_original: bool,
    underline_low_confidence: bool,
) -> list[QTextEdit.ExtraSelection]:
    """The selections for regions at ``spans`` showing ``candidates`` (None: no draft yet); ``done``:
    the final result is shown; ``showing_original``: the review shows the original text."""
    text = palette.color(QPalette.ColorRole.Text)
    accent = palette.color(QPalette.ColorRole.Highlight)
    selections = []
    for candidate, (start, end) in zip(candidates, spans):
        if candidate is None:
            selections.append(_selection(document, start, end, _format(faded(accent, 60))))
            continue
        if showing_original:
            selections.append(_selection(document, start, end, _format(faded(text, 22))))
            continue
        if sum(utf16_length(as_stored(token.text)) for token in candidate.tokens) != end - start:
            selections.append(_selection(document, start, end, _format(faded(accent, 40))))
            continue
        position = start
        for token in candidate.tokens:
            stop = position + utf16_length(as_stored(token.text))
            if done or token.accepted:
                fmt = _format(faded(accent, 34))
                if done and underline_low_confidence and token.confidence < LOW_CONFIDENCE:
                    fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
                    fmt.setUnderlineColor(REMOVED)
            else:
                sure = max(0.0, min(1.0, token.confidence))  # noise is faint, a likely guess firmer
                fmt = _format(faded(accent, int(20 + 70 * (1.0 - sure))), foreground=faded(text, int(80 + 120 * sure)))
            selections.append(_selection(document, position, stop, fmt))
            position = stop
    return selections


def diff_view(
    document: QTextDocument,
    palette: QPalette,
    spans: Sequence[tuple[int, int]],
    texts: Sequence[str],
    diffs: Sequence[ReviewDiff],
) -> tuple[list[QTextEdit.ExtraSelection], dict[int, Pieces], QColor]:
    """The selections, the ghosts (by block number) and their band for regions at ``spans``
    showing ``texts``, which differ from their originals as ``diffs`` say. A ghost of a region's
    first line starts with that line's text before the region (its indentation, the ``x = `` before
    a selected call, the words before a gap), so the original is drawn in the columns it stood in."""
    accent = palette.color(QPalette.ColorRole.Highlight)
    kept, removed = QTextCharFormat(), QTextCharFormat()
    kept.setForeground(faded(palette.color(QPalette.ColorRole.Text), 130))
    removed.setForeground(REMOVED)
    removed.setFontStrikeOut(True)
    selections, ghosts = [], {}
    for (start, end), text, diff in zip(spans, texts, diffs):
        selections.append(_selection(document, start, end, _format(faded(accent, 34))))
        for low, high in diff.added:
            selections.append(_selection(document, start + position_of(text, low), start + position_of(text, high), _format(faded(ADDED, 90))))
        block = document.findBlock(start)
        line = block.text()
        head = line[: index_of(line, start - block.position())]
        lead = [(head, kept)] if head else []
        for ghost in diff.ghosts:
            pieces = ghosts.setdefault(block.blockNumber() + ghost.under, [])
            if pieces:  # two regions on one line: one ghost line each
                pieces.append(("\n", kept))
            pieces.extend([*(lead if ghost.at_start else []), *((piece, removed if gone else kept) for piece, gone in ghost.pieces)])
    return selections, ghosts, faded(REMOVED, 26)


def _format(background: QColor, foreground: QColor | None = None) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setBackground(background)
    if foreground is not None:
        fmt.setForeground(foreground)
    return fmt


def _selection(document: QTextDocument, start: int, end: int, fmt: QTextCharFormat) -> QTextEdit.ExtraSelection:
    selection = QTextEdit.ExtraSelection()
    selection.cursor = QTextCursor(document)
    selection.cursor.setPosition(start)
    selection.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
    selection.format = fmt
    return selection
