"""One open document: its editor, its file and how the file's bytes are laid out."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext

from PySide6.QtCore import QTimer
from PySide6.QtGui import QTextCursor

from sfumato.app import fileio
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text
from sfumato.app.comments import line_comment_marker
from sfumato.app.gitdiff import MAX_COMPARED_CHARS, committed_text, line_changes
from sfumato.app.highlighter import attach_highlighter
from sfumato.app.indentation import detect_indentation
from sfumato.app.syntax_check import check_for
from sfumato.app.theme import current_style
from sfumato.model.project_context import PROSE_SUFFIXES
from sfumato.model.untrusted_text import INVISIBLE, invisible_report

MARKS_DELAY_MS = 300  # the changed-line marks follow typing after this pause


class Document:
    """A CodeEditor plus the path and TextFormat it was opened with (None path: untitled)."""

    def __init__(self, editor: CodeEditor, path: str | None = None, fmt: fileio.TextFormat | None = None):
        self.editor = editor
        self.path = path
        self.format = fmt or fileio.TextFormat()
        self.highlighter = None
        self.untitled_number = 0
        self.disk_stamp: tuple[int, int] | None = None  # (mtime_ns, size) of what was read or written
        self.longest_line = 0  # characters, when opened
        self.indentation: tuple[bool, int | None] | None = None  # as the file showed it when opened
        self.committed: str | None = None  # the text at git's HEAD, for the changed-line marks
        self.invisibles_on_disk: Counter[str] = Counter()  # bidi and zero-width characters of the file as read or written
        self._marks_timer = QTimer(editor)
        self._marks_timer.setSingleShot(True)
        self._marks_timer.setInterval(MARKS_DELAY_MS)
        self._marks_timer.timeout.connect(self.update_marks)
        editor.document().contentsChanged.connect(self._marks_timer.start)

    @classmethod
    def open(cls, path: str, editor: CodeEditor, progress: Callable[[float], None] | None = None) -> Document:
        """Read ``path`` into ``editor``; raises NotTextError / OSError and leaves ``editor`` empty.
        ``progress`` hears how much of a long text the editor holds (``CodeEditor.show_text``)."""
        text, fmt, longest = fileio.read_text(path)
        _check_editable(text)
        editor.show_text(text, progress)  # first: a long text comes in a new document, which the rest connects to
        document = cls(editor, os.path.abspath(path), fmt)
        document.disk_stamp = _stamp(document.path)
        document.longest_line = longest
        document.indentation = detect_indentation(text)
        document.invisibles_on_disk = invisibles_in(text)
        editor.document().setModified(False)
        document.rehighlight()
        # git runs once the event loop is back: reopening a session's files does not wait on it
        QTimer.singleShot(0, editor, document.refresh_committed)
        return document

    def refresh_committed(self) -> None:
        """Ask git again for the committed text (after a commit, say) and mark the lines anew."""
        self.committed = committed_text(self.path) if self.path else None
        self.update_marks()

    def update_marks(self) -> None:
        """Mark the lines that differ from the committed text (none outside git)."""
        document = self.editor.document()  # a text too large to compare is not even copied (40 MB: 250 ms)
        comparable = self.committed is not None and len(self.committed) + document.characterCount() <= MAX_COMPARED_CHARS
        changes = line_changes(self.committed, document_text(document)) if comparable else {}
        self.editor.set_line_marks(changes)

    def rehighlight(self) -> None:
        if self.highlighter is not None:
            self.highlighter.setDocument(None)
        self.highlighter = attach_highlighter(self.editor.document(), self.path, current_style())
        self.editor.comment_marker = line_comment_marker(self.highlighter.lexer.aliases) if self.highlighter is not None else None
        self.editor.syntax_check = check_for(self.highlighter.lexer.aliases) if self.highlighter is not None else None

    @property
    def name(self) -> str:
        return fileio.shown_path(os.path.basename(self.path)) if self.path else f"Untitled {self.untitled_number}"

    @property
    def is_prose(self) -> bool:
        """Markdown or plain text: its long lines are paragraphs (they wrap by default)."""
        return self.path is not None and self.path.lower().endswith(PROSE_SUFFIXES)

    @property
    def language(self) -> str:
        return self.highlighter.language if self.highlighter is not None else "Plain text"

    def save(self, path: str | None = None) -> None:
        """Write the text (never a draft) atomically; raises OSError / UnicodeEncodeError."""
        target = os.path.abspath(path or self.path)
        session = self.editor.session
        with session.draft_taken_out() if session is not None else nullcontext():
            text = self.editor.saved_text()
            fileio.write_text(target, text, self.format)
            self.editor.document().setModified(False)
        self.invisibles_on_disk = invisibles_in(text)
        renamed = target != self.path
        self.path = target
        self.disk_stamp = _stamp(target)
        if renamed:
            self.rehighlight()

    def new_invisibles(self) -> str:
        """"" or, named (``invisible_report``), the bidi and zero-width characters the text holds
        beyond those its file held: what saving would add (a model may have written them)."""
        added = invisibles_in(self.editor.saved_text()) - self.invisibles_on_disk
        return invisible_report("".join(added.elements()))

    def is_modified(self) -> bool:
        """Unsaved changes; an untitled document typed in and emptied again has nothing to lose."""
        if self.path is None and self.editor.document().isEmpty():
            return False
        return self.editor.is_modified()

    def disk_state(self) -> str:
        """"same", "changed" (another program wrote the file) or "deleted"."""
        if self.path is None:
            return "same"
        stamp = _stamp(self.path)
        if stamp is None:
            return "deleted"
        return "same" if stamp == self.disk_stamp else "changed"

    def reload(self) -> None:
        """Read the file again, as one undoable edit; raises NotTextError / OSError."""
        text, fmt, _ = fileio.read_text(self.path)
        _check_editable(text)
        self.editor.end_session()
        cursor = QTextCursor(self.editor.document())
        cursor.beginEditBlock()
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(text)
        cursor.endEditBlock()
        self.format = fmt
        self.disk_stamp = _stamp(self.path)
        self.invisibles_on_disk = invisibles_in(text)
        self.editor.document().setModified(False)


def invisibles_in(text: str) -> Counter[str]:
    """The bidi and zero-width characters ``text`` holds (none in ASCII: 40 MB of it is not searched)."""
    return Counter() if text.isascii() else Counter(INVISIBLE.findall(text))


def _check_editable(text: str) -> None:
    """NotTextError for text a QTextDocument would not hold exactly, so saving would change it:
    Qt makes U+2029 a line break and drops a U+FEFF at the start."""
    if "\u2029" in text or text.startswith("\ufeff"):
        raise fileio.NotTextError("it holds characters the editor would change on save (U+2029, or U+FEFF at the start)")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size
