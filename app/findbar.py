"""Find / replace bar (case, whole word, regular expression) shown under the editor.

As the query is typed every match is marked, the first one from the cursor is selected, and the
bar counts them ("3 of 12").
"""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression, Qt, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut, QTextCursor, QTextDocument
from PySide6.QtWidgets import QCheckBox, QGridLayout, QLabel, QLineEdit, QPushButton, QTextEdit, QWidget

from sfumato.app.codeeditor import CodeEditor

MAX_MARKED = 5_000  # matches marked and counted; beyond this the count says "5000+"


def replace_every(document: QTextDocument, pattern, flags: QTextDocument.FindFlag, replacement) -> int:
    """Replace each match of ``pattern`` with ``replacement(match cursor)``, as one undo step; the count."""
    cursor = QTextCursor(document)
    edit = QTextCursor(document)
    edit.beginEditBlock()
    count = 0
    while True:
        cursor = document.find(pattern, cursor, flags)
        if cursor.isNull() or not cursor.hasSelection():
            break
        cursor.insertText(replacement(cursor))
        count += 1
    edit.endEditBlock()
    return count


class FindBar(QWidget):
    """Searches the editor given by ``set_editor``; ``message`` reports misses and counts."""

    message = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.editor: CodeEditor | None = None
        self.find_text = QLineEdit(placeholderText="Find")
        self.replace_text = QLineEdit(placeholderText="Replace with")
        self.case = QCheckBox("Aa")
        self.case.setToolTip("Match case")
        self.word = QCheckBox("Word")
        self.word.setToolTip("Whole words only")
        self.regex = QCheckBox(".*")
        self.regex.setToolTip("Regular expression")
        self.status = QLabel()
        layout = QGridLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.find_text, 0, 0)
        layout.addWidget(self.replace_text, 1, 0)
        for column, (label, slot) in enumerate(
            (("Next", lambda: self.find(False)), ("Previous", lambda: self.find(True))), start=1
        ):
            button = QPushButton(label)
            button.clicked.connect(slot)
            layout.addWidget(button, 0, column)
        self.replace_button = QPushButton("Replace")  # shown with the replace field
        self.replace_all_button = QPushButton("All")
        for column, (button, slot) in enumerate(((self.replace_button, self.replace), (self.replace_all_button, self.replace_all)), start=1):
            button.clicked.connect(slot)
            layout.addWidget(button, 1, column)
        layout.addWidget(self.case, 0, 3)
        layout.addWidget(self.word, 0, 4)
        layout.addWidget(self.regex, 0, 5)
        layout.addWidget(self.status, 1, 3, 1, 3)
        close = QPushButton("✕")
        close.setFlat(True)
        close.clicked.connect(self.hide)
        layout.addWidget(close, 0, 6)
        self.find_text.returnPressed.connect(lambda: self.find(False))
        self.find_text.textChanged.connect(self._incremental)
        for box in (self.case, self.word, self.regex):
            box.toggled.connect(self._incremental)
        self._matches: list[int] = []  # start positions of the marked matches
        self.replace_text.returnPressed.connect(self.replace)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self._close)

    def set_editor(self, editor: CodeEditor | None) -> None:
        if self.editor is not None and self.editor is not editor:
            self.editor.set_layer("find", [])
        self.editor = editor
        if self.isVisible():
            self._mark_all()

    def open(self, replace: bool) -> None:
        for widget in (self.replace_text, self.replace_button, self.replace_all_button):
            widget.setVisible(replace)
        if self.editor is not None and self.editor.textCursor().hasSelection():
            self.find_text.setText(self.editor.textCursor().selectedText())
        self.show()
        self.find_text.setFocus()
        self.find_text.selectAll()

    def _close(self) -> None:
        self.hide()
        if self.editor is not None:
            self.editor.set_layer("find", [])
            self.editor.setFocus()

    def _incremental(self) -> None:
        """The query changed: mark every match and select the first one from the selection's start."""
        self._mark_all()
        if self.editor is None or not self._matches:
            return
        start = QTextCursor(self.editor.document())
        start.setPosition(self.editor.textCursor().selectionStart())
        found = self._search(start, backward=False)
        if found is not None:
            self.editor.setTextCursor(found)
            self._count(found)

    def _mark_all(self) -> None:
        self._matches = []
        if self.editor is None:
            return
        pattern = self._pattern()
        selections = []
        if pattern is not None:
            color = self.editor.palette().color(QPalette.ColorRole.Highlight)
            color.setAlpha(60)
            document = self.editor.document()
            cursor = QTextCursor(document)
            while len(self._matches) < MAX_MARKED:
                cursor = document.find(pattern, cursor, self._flags(False))
                if cursor.isNull() or not cursor.hasSelection():
                    break
                self._matches.append(cursor.selectionStart())
                selection = QTextEdit.ExtraSelection()
                selection.format.setBackground(color)
                selection.cursor = QTextCursor(cursor)
                selections.append(selection)
            if not self._matches:
                self._say("Not found")
        self.editor.set_layer("find", selections)

    def _count(self, found: QTextCursor) -> None:
        total = f"{MAX_MARKED}+" if len(self._matches) >= MAX_MARKED else str(len(self._matches))
        if found.selectionStart() in self._matches:
            self.status.setText(f"{self._matches.index(found.selectionStart()) + 1} of {total}")

    def _flags(self, backward: bool) -> QTextDocument.FindFlag:
        flags = QTextDocument.FindFlag(0)
        if backward:
            flags |= QTextDocument.FindFlag.FindBackward
        if self.case.isChecked():
            flags |= QTextDocument.FindFlag.FindCaseSensitively
        if self.word.isChecked():
            flags |= QTextDocument.FindFlag.FindWholeWords
        return flags

    def _pattern(self) -> str | QRegularExpression | None:
        text = self.find_text.text()
        if not text:
            return None
        if not self.regex.isChecked():
            return text
        expression = QRegularExpression(text)
        if not self.case.isChecked():
            expression.setPatternOptions(QRegularExpression.PatternOption.CaseInsensitiveOption)
        if not expression.isValid():
            self._say(f"Bad expression: {expression.errorString()}")
            return None
        return expression

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.message.emit(text)

    def _search(self, start: QTextCursor, backward: bool) -> QTextCursor | None:
        pattern = self._pattern()
        if pattern is None or self.editor is None:
            return None
        document = self.editor.document()
        found = document.find(pattern, start, self._flags(backward))
        if found.isNull():  # wrap around
            edge = QTextCursor(document)
            edge.movePosition(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
            found = document.find(pattern, edge, self._flags(backward))
        return None if found.isNull() else found

    def find(self, backward: bool = False) -> bool:
        if self.editor is None:
            return False
        found = self._search(self.editor.textCursor(), backward)
        if found is None:
            self._say("Not found")
            return False
        self.status.clear()
        self.editor.setTextCursor(found)
        self._count(found)
        return True

    def _matches_selection(self) -> bool:
        cursor = self.editor.textCursor()
        if not cursor.hasSelection():
            return False
        probe = QTextCursor(self.editor.document())
        probe.setPosition(cursor.selectionStart())
        found = self._search(probe, backward=False)
        return found is not None and (found.selectionStart(), found.selectionEnd()) == (cursor.selectionStart(), cursor.selectionEnd())

    def _replacement(self, cursor: QTextCursor) -> str:
        if not self.regex.isChecked():
            return self.replace_text.text()
        match = self._pattern().match(cursor.selectedText())
        result = self.replace_text.text()
        for group in range(match.lastCapturedIndex(), -1, -1):
            result = result.replace(f"\\{group}", match.captured(group))
        return result

    def replace(self) -> None:
        if self.editor is None:
            return
        self.editor.end_session()
        if self._matches_selection():
            cursor = self.editor.textCursor()
            cursor.insertText(self._replacement(cursor))
        self._mark_all()
        self.find(False)

    def replace_all(self) -> None:
        """Replace every match as one undo step."""
        if self.editor is None or self._pattern() is None:
            return
        self.editor.end_session()
        count = replace_every(self.editor.document(), self._pattern(), self._flags(False), self._replacement)
        self._mark_all()
        self._say(f"Replaced {count} occurrence{'s' * (count != 1)}")
