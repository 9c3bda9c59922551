"""The text widget: a QPlainTextEdit with line numbers, current-line highlight, indentation, zoom.

It knows about infill sessions only through a small hook: while a session is active, every event
that may edit the text runs inside ``session.user_edit()`` (so the draft never mixes with the
user's own edits in the undo history) and the session sees the keys first (Tab, Esc, Alt+]/[).
A suggestion shown while typing (``app/inline_suggestion.py``) sees them next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPalette,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextOption,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip, QWidget

from sfumato.app import document_fill, linecommands
from sfumato.app.autoclose import AutoCloser, around_cursor
from sfumato.app.brackets import AUTO_CLOSED, matching_bracket
from sfumato.app.commandkeys import default_command_keys, is_command_key
from sfumato.app.comments import Marker
from sfumato.app.ghostlines import GhostLayout, Pieces, lay_out, paint_ghosts
from sfumato.app.gutter import LineNumberArea
from sfumato.app.inline_suggestion import InlineSuggestion
from sfumato.app.invisibles import invisible_at, paint_invisibles
from sfumato.app.multicursor import ExtraCursors
from sfumato.app.syntax_check import Check
from sfumato.app.textpositions import document_text, index_of, position_of

if TYPE_CHECKING:
    from sfumato.app.session import EditSession

_NAVIGATION_KEYS = {
    Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Home,
    Qt.Key.Key_End, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown, Qt.Key.Key_Shift, Qt.Key.Key_Control,
    Qt.Key.Key_Alt, Qt.Key.Key_Meta, Qt.Key.Key_AltGr, Qt.Key.Key_CapsLock,
}
_OPENERS = (":", "{", "(", "[")
BRACKET_SCAN_CHARS = 20_000  # how far to look for a bracket's partner before giving up


def is_navigation(event: QKeyEvent) -> bool:
    """Keys that only move the cursor or select: they never change the text."""
    return (
        event.key() in _NAVIGATION_KEYS
        or event.matches(QKeySequence.StandardKey.Copy)
        or event.matches(QKeySequence.StandardKey.SelectAll)
    )


class CodeEditor(QPlainTextEdit):
    """A plain-text code editor; one per open document."""

    zoom_changed = Signal(int)
    files_dropped = Signal(list)  # local paths dropped on the text: the window opens them in tabs

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        document = QTextDocument(self)
        document.setDocumentLayout(GhostLayout(document))  # room for ghost lines under a line
        self.setDocument(document)
        self.session: EditSession | None = None
        self.prose = False  # the text is prose (Markdown, plain text), not code: a review compares words
        self.indent_with_spaces = True
        self.indent_width = 4
        self.auto_close = True  # brackets and quotes typed get their closer (setting)
        self._closers = AutoCloser(self)
        self.extra_cursors = ExtraCursors(self)  # beside the main cursor (Ctrl+D, Alt+click)
        self.suggestion = InlineSuggestion(self)  # laid in at the cursor while typing (app/suggester.py)
        self.line_marks: dict[int, str] = {}  # line index: "added" | "modified" | "deleted" since the commit
        self.comment_marker: Marker | None = None  # the language's one-line comment, set with its highlighter
        self.syntax_check: Check | None = None  # the language's parse check (app/syntax_check.py), set with it too
        self.command_keys = default_command_keys()  # Sfumato's keys: never the text widget's (the window sets them)
        self.selection_after_undo: tuple[int, int, int] | None = None  # (undo steps, start, end): an accept's
        self._zoom = 0
        self._layers: dict[str, list[QTextEdit.ExtraSelection]] = {}
        self._ghosts: dict[int, Pieces] = {}  # block number: what is drawn under it (app/ghostlines.py)
        self._ghost_band = QColor()
        self._numbers = LineNumberArea(self)
        self._base_font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)  # at zoom 0
        self.setFont(self._base_font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self._held = 0  # while above 0, extra selections wait (``selections_held``)
        self.cursorPositionChanged.connect(self._mark_cursor)
        self.cursorPositionChanged.connect(self.suggestion.cursor_moved)
        self._numbers.fit()
        self._apply_tab_stop()
        self._mark_cursor()

    def show_text(self, text: str, progress: Callable[[float], None] | None = None) -> None:
        """``text`` in place of the editor's text, with no undo history; a long one is laid into a
        new document a part at a time (``document_fill``: ``progress`` hears how far), which the
        editor then shows. Made for a file just read: what was connected to the old document is not to the new."""
        if len(text) < document_fill.FILLED_IN_PARTS_CHARS:
            self.setPlainText(text)
            return
        old, document = self.document(), document_fill.filled_document(text, self.document(), progress)
        document.setParent(self)
        document.setDocumentLayout(GhostLayout(document))
        self.setDocument(document)
        old.deleteLater()

    @contextmanager
    def selections_held(self) -> Iterator[None]:
        """Apply the extra selections once, after edits that move the cursor several times and set
        layers (a draft taken out, written again and painted): setting them lays out every one,
        a draft's per-token ones too, and each cursor move set them twice (its line, its brackets),
        which made a pass's redraw miss a frame."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            self._mark_cursor()

    def _mark_cursor(self) -> None:
        """Mark the cursor's line and the bracket at the cursor with its partner."""
        if not self._held:
            self._layers["current-line"] = self._current_line()
            self.set_layer("brackets", self._brackets())
            self._numbers.update()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._numbers.place()
        if self._ghosts and self.lineWrapMode() != QPlainTextEdit.LineWrapMode.NoWrap:
            self._lay_out_ghosts()

    # --- extra selections, in named layers ----------------------------------------------------

    def set_layer(self, name: str, selections: list[QTextEdit.ExtraSelection]) -> None:
        """Replace one layer of extra selections (current line, find matches, a session's draft)."""
        self._layers[name] = selections
        if not self._held:
            self.setExtraSelections([item for layer in self._layers.values() for item in layer])

    def set_ghosts(self, ghosts: dict[int, Pieces], band: QColor) -> None:
        """Draw ``ghosts`` (block number: the pieces drawn under that block) on ``band``, in room
        the lines below make for them; no text of the document. An empty dict takes them away."""
        if ghosts or self._ghosts:
            self._ghosts, self._ghost_band = ghosts, band
            self._lay_out_ghosts()

    def _lay_out_ghosts(self) -> None:
        margin = self.document().documentMargin()
        width = None if self.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap else self.viewport().width() - 2 * margin
        self.document().documentLayout().ghosts = {
            number: lay_out(pieces, self.font(), self.tabStopDistance(), margin, width) for number, pieces in self._ghosts.items()
        }
        self.viewport().update()
        self._numbers.update()

    def set_line_marks(self, marks: dict[int, str]) -> None:
        if marks != self.line_marks:
            self.line_marks = marks
            self._numbers.update()

    def _current_line(self) -> list[QTextEdit.ExtraSelection]:
        selection = QTextEdit.ExtraSelection()
        color = self.palette().color(QPalette.ColorRole.Highlight)
        color.setAlpha(28)
        selection.format.setBackground(color)
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        selection.cursor = self.textCursor()
        selection.cursor.clearSelection()
        return [selection]

    def _brackets(self) -> list[QTextEdit.ExtraSelection]:
        """The bracket at (or just before) the cursor and its partner."""
        position = self.textCursor().position()
        start = max(0, position - BRACKET_SCAN_CHARS)
        around = QTextCursor(self.document())
        around.setPosition(start)
        around.setPosition(min(self.document().characterCount() - 1, position + BRACKET_SCAN_CHARS), QTextCursor.MoveMode.KeepAnchor)
        text = around.selectedText()  # line breaks are U+2029 here, which is no bracket either
        pair = matching_bracket(text, index_of(text, position - start))
        selections = []
        color = self.palette().color(QPalette.ColorRole.Highlight)
        color.setAlpha(70)
        for index in pair or ():
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(color)
            selection.cursor = QTextCursor(self.document())
            selection.cursor.setPosition(start + position_of(text, index))
            selection.cursor.setPosition(start + position_of(text, index + 1), QTextCursor.MoveMode.KeepAnchor)
            selections.append(selection)
        return selections

    # --- indentation --------------------------------------------------------------------------

    def set_indentation(self, spaces: bool, width: int) -> None:
        self.indent_with_spaces = spaces
        self.indent_width = width
        self._apply_tab_stop()

    def set_word_wrap(self, on: bool) -> None:
        """Wrap long lines at the edge (at a word boundary when there is one) or scroll sideways."""
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth if on else QPlainTextEdit.LineWrapMode.NoWrap)
        if self._ghosts:
            self._lay_out_ghosts()

    def set_show_whitespace(self, on: bool) -> None:
        option = self.document().defaultTextOption()
        flags = option.flags()
        flags = flags | QTextOption.Flag.ShowTabsAndSpaces if on else flags & ~QTextOption.Flag.ShowTabsAndSpaces
        option.setFlags(flags)
        self.document().setDefaultTextOption(option)

    def _apply_tab_stop(self) -> None:
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * self.indent_width)

    def _indent_unit(self) -> str:
        return " " * self.indent_width if self.indent_with_spaces else "\t"

    def _new_line_with_indent(self) -> None:
        cursor = self.textCursor()
        text = cursor.block().text()
        line = text[: index_of(text, cursor.positionInBlock())]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if line.rstrip().endswith(_OPENERS):
            before, after = around_cursor(self)
            if after and AUTO_CLOSED.get(before) == after:  # Enter in "{}": the closer goes a line down
                cursor.insertText("\n" + indent + self._indent_unit() + "\n" + indent)
                cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
                cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
                self.setTextCursor(cursor)
                self.ensureCursorVisible()
                return
            indent += self._indent_unit()
        cursor.insertText("\n" + indent)
        self.ensureCursorVisible()

    def _shift_lines(self, outward: bool) -> None:
        """Indent (or dedent) every line the selection touches, as one undo step."""
        first, last = linecommands.selected_blocks(self)
        edit = QTextCursor(self.document())
        edit.beginEditBlock()
        block = first
        while block.isValid():
            edit.setPosition(block.position())
            text = block.text()
            if not outward:
                edit.insertText(self._indent_unit())
            else:
                width = 1 if text.startswith("\t") else len(text[: self.indent_width]) - len(text[: self.indent_width].lstrip(" "))
                edit.setPosition(block.position() + width, QTextCursor.MoveMode.KeepAnchor)
                edit.removeSelectedText()
            if block == last:
                break
            block = block.next()
        edit.endEditBlock()

    # --- line commands (app/linecommands.py), each one undo step ------------------------------

    def toggle_comment(self) -> bool:
        """Comment out the selected lines, or uncomment them. False: no comment known."""
        if self.comment_marker is None:
            return False
        self._guarded(lambda: linecommands.toggle_comment(self, self.comment_marker))
        return True

    def duplicate_lines(self) -> None:
        self._guarded(lambda: linecommands.duplicate_lines(self))

    def move_lines(self, down: bool) -> None:
        self._guarded(lambda: linecommands.move_lines(self, down))

    # --- keys and edits -----------------------------------------------------------------------

    def event(self, event: QEvent) -> bool:
        """The window's shortcuts get Sfumato's keys first: the text widget does not claim them."""
        if event.type() == QEvent.Type.ShortcutOverride and is_command_key(event, self.command_keys):
            event.ignore()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if self.session is not None and self.session.handle_key(event):
            return
        if self.suggestion.handle_key(event):
            return
        if is_command_key(event, self.command_keys):  # no shortcut took it (none active): it does nothing
            return
        if self.extra_cursors and self.extra_cursors.handle_key(event):  # never during a session
            return
        self.extra_cursors.clear()
        if event.matches(QKeySequence.StandardKey.Undo):  # an accepted rewrite's undo selects the original
            self.safe_undo()
            return
        guard = self.session.user_edit() if self.session is not None and not is_navigation(event) else nullcontext()
        revision = self.document().revision()
        with guard:
            self._edit_key(event)
        self.suggestion.typed |= self.document().revision() != revision
        self.suggestion.key_done()

    # --- more cursors -------------------------------------------------------------------------

    def add_next_occurrence(self) -> None:
        """Ctrl+D: select the word, then add a cursor at each next place the selection occurs."""
        if self.session is None:
            self.extra_cursors.add_next_occurrence()

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt override
        alt_click = event.button() == Qt.MouseButton.LeftButton and event.modifiers() & Qt.KeyboardModifier.AltModifier
        if alt_click and self.session is None:
            self.extra_cursors.add_at(self.cursorForPosition(event.position().toPoint()).position())
            return
        self.extra_cursors.clear()
        super().mousePressEvent(event)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        painter = QPainter(self.viewport())
        paint_invisibles(self, painter, QRectF(event.rect()))
        if self.extra_cursors or self._ghosts:
            paint_ghosts(self, painter, event.rect(), self._ghost_band)
            self.extra_cursors.paint_carets(painter)
        painter.end()

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt override
        """A tooltip over an invisible character's mark names it."""
        if event.type() == QEvent.Type.ToolTip:
            name = invisible_at(self, QPointF(event.pos()))
            if name is not None:
                QToolTip.showText(event.globalPos(), name, self.viewport())
                return True
        return super().viewportEvent(event)

    def _edit_key(self, event: QKeyEvent) -> None:
        key = event.key()
        plain = not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        cursor = self.textCursor()
        typed = event.text()
        if self.auto_close and len(typed) == 1 and not event.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier) and self._closers.typed(typed):
            return
        if key == Qt.Key.Key_Backspace and plain and self.auto_close and self._closers.delete_empty_pair():
            return
        if key == Qt.Key.Key_Home and not event.modifiers() & ~(Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.KeypadModifier):
            self._smart_home(keep_anchor=bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier))
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and plain:
            self._new_line_with_indent()
        elif key == Qt.Key.Key_Tab and plain:
            if cursor.hasSelection() and self.document().findBlock(cursor.selectionStart()) != self.document().findBlock(cursor.selectionEnd()):
                self._shift_lines(outward=False)
            elif self.indent_with_spaces:
                column = cursor.positionInBlock()
                cursor.insertText(" " * (self.indent_width - column % self.indent_width))
            else:
                cursor.insertText("\t")
        elif key == Qt.Key.Key_Backtab:
            self._shift_lines(outward=True)
        else:
            super().keyPressEvent(event)

    def _smart_home(self, keep_anchor: bool) -> None:
        """Home goes to the line's first non-blank character, or to its start when already there."""
        cursor = self.textCursor()
        line = cursor.block().text()
        first = position_of(line, len(line) - len(line.lstrip(" \t")))
        column = 0 if cursor.positionInBlock() == first else first
        mode = QTextCursor.MoveMode.KeepAnchor if keep_anchor else QTextCursor.MoveMode.MoveAnchor
        cursor.setPosition(cursor.block().position() + column, mode)
        self.setTextCursor(cursor)

    def _guarded(self, edit: Callable[[], None]) -> None:
        with self.session.user_edit() if self.session is not None else nullcontext():
            edit()

    def inputMethodEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.suggestion.clear()  # an input method draws its own uncommitted text where a suggestion is laid
        self._guarded(lambda: super(CodeEditor, self).inputMethodEvent(event))

    def insertFromMimeData(self, source) -> None:  # noqa: N802 - Qt override
        self._guarded(lambda: super(CodeEditor, self).insertFromMimeData(source))

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            self.files_dropped.emit([url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()])
            event.acceptProposedAction()
            return
        self._guarded(lambda: super(CodeEditor, self).dropEvent(event))

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
            return
        super().dragEnterEvent(event)

    def dragMoveEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
            return
        super().dragMoveEvent(event)

    def contextMenuEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.end_session()  # the menu's undo/cut/paste act on the document directly
        super().contextMenuEvent(event)

    def end_session(self) -> bool:
        """Reject the infill session of this editor, if one runs or waits: the text is as it was.
        True when there was one."""
        if self.session is None:
            return False
        self.session.reject()
        return True

    def safe_undo(self) -> None:
        """Undo, ending an infill session first (its draft is not an undo step). Undoing an accepted
        rewrite selects the original text again, where it was (the first region's, of several)."""
        if self.end_session():
            return
        steps = self.document().availableUndoSteps()
        self.undo()
        if self.selection_after_undo is not None and self.selection_after_undo[0] == steps:
            linecommands.select(self, *self.selection_after_undo[1:])
            self.selection_after_undo = None

    def safe_redo(self) -> None:
        if not self.end_session():
            self.redo()

    def saved_text(self) -> str:
        """The text as it may be written to disk or a recovery copy: never a draft."""
        return self.session.text_without_draft() if self.session is not None else document_text(self.document())

    def is_modified(self) -> bool:
        """Whether the text differs from the last save, not counting an infill draft."""
        return self.session.modified_without_draft() if self.session is not None else self.document().isModified()

    # --- zoom ---------------------------------------------------------------------------------

    def zoom(self, steps: int) -> None:
        """Zoom by ``steps`` points (0 resets)."""
        self._zoom = 0 if steps == 0 else max(-8, min(40, self._zoom + steps))
        self.set_text_font(self._base_font)
        self.zoom_changed.emit(self._zoom)

    def set_text_font(self, font: QFont) -> None:
        """The font at zoom 0 (the settings' family and size); the zoom steps stay."""
        self._base_font = QFont(font)
        zoomed = QFont(font)
        zoomed.setPointSizeF(max(4.0, font.pointSizeF() + self._zoom))
        self.setFont(zoomed)
        self._apply_tab_stop()
        self._numbers.fit()
        if self._ghosts:
            self._lay_out_ghosts()

    def wheelEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoom(1 if event.angleDelta().y() > 0 else -1)
            return
        super().wheelEvent(event)

    def show_start_of(self, position: int) -> None:
        """Scroll sideways, if need be, so that ``position`` is in view (the cursor may go out of it:
        after a long line's rewrite its start is what to read, not where the cursor ended)."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        left, margin = self.cursorRect(cursor).left(), self.document().documentMargin()
        if not 0 <= left < self.viewport().width():
            bar = self.horizontalScrollBar()
            bar.setValue(bar.value() + left - round(margin))

    def go_to_line(self, line: int) -> None:
        block = self.document().findBlockByNumber(max(0, min(line - 1, self.blockCount() - 1)))
        cursor = QTextCursor(block)
        self.setTextCursor(cursor)
        self.centerCursor()
