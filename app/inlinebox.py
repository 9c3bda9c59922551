"""The small box shown at the selection on Ctrl+K: rewrite strength, what it will do to the
selection, and, for instruction-tuned models, an instruction. Enter runs the rewrite, Esc closes
the box."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QSlider

from sfumato.app.codeeditor import CodeEditor


class InlineBox(QFrame):
    submitted = Signal(float, str)  # strength, instruction ("" when none)

    def __init__(self, editor: CodeEditor, strength: float, with_instruction: bool,
                 effect: Callable[[float], str] | None = None):
        """``effect``: what a strength does to the selection, in words (none when the model is not known yet)."""
        super().__init__(editor.viewport())
        self._editor = editor
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.strength = QSlider(Qt.Orientation.Horizontal)
        self.strength.setRange(5, 100)
        self.strength.setValue(round(strength * 100))
        self.strength.setFixedWidth(120)
        self.strength.setToolTip("How much of the selection changes: low keeps most of it")
        self._effect = effect
        self.value = QLabel(self._value_text(self.strength.value()))
        self.strength.valueChanged.connect(self._on_strength)
        self.instruction = QLineEdit(placeholderText="Instruction (optional)")
        self.instruction.setVisible(with_instruction)
        self.instruction.setMinimumWidth(220)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(QLabel("Rewrite strength"))
        layout.addWidget(self.strength)
        layout.addWidget(self.value)
        layout.addWidget(self.instruction)
        layout.addSpacing(12)
        layout.addWidget(QLabel("⏎ run · Esc close"))
        self.adjustSize()
        self._place()

    def _value_text(self, percent: int) -> str:
        return f"{percent}% · {self._effect(percent / 100)}" if self._effect else f"{percent}%"

    def _on_strength(self, percent: int) -> None:
        self.value.setText(self._value_text(percent))
        self.adjustSize()
        self._place()

    def _place(self) -> None:
        """Under the selection's last line, so it hides none of the lines the user reads while
        choosing (the ``def`` and docstring above); with no room there, at the right edge beside
        the selection's first line; always inside the viewport."""
        selection = self._editor.textCursor()
        first, last = QTextCursor(selection), QTextCursor(selection)
        first.setPosition(selection.selectionStart())
        last.setPosition(max(selection.selectionStart(), selection.selectionEnd() - 1))  # a final line break ends the line
        area = self._editor.viewport().rect()
        x, y = self._editor.cursorRect(first).left(), self._editor.cursorRect(last).bottom() + 2
        if y + self.height() > area.bottom():
            x, y = area.right(), self._editor.cursorRect(first).top()
        self.move(QPoint(max(0, min(x, area.width() - self.width())), max(0, min(y, area.height() - self.height()))))

    def open(self) -> None:
        self.show()
        self.raise_()
        (self.instruction if self.instruction.isVisible() else self.strength).setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.submitted.emit(self.strength.value() / 100, self.instruction.text().strip())
            self.close_box()
        elif event.key() == Qt.Key.Key_Escape:
            self.close_box()
        else:
            super().keyPressEvent(event)

    def close_box(self) -> None:
        self.hide()
        self.deleteLater()
        self._editor.setFocus()
