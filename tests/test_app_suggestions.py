"""Suggestions while typing: the model's sure rest of a line is drawn after the cursor, never in the
document, until Tab takes it (one undo step), Ctrl+Right a word, typing carries it, or anything else
drops it; only typing at a line's end on a local model asks for one."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from test_app_support import FakeBackend, qasync_loop, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.commandkeys import session_keys
from sfumato.app.settings import DEFAULT_KEYS
from sfumato.app.textpositions import document_text
from sfumato.model.api import Candidate, Draft, TokenState

TYPED = "def area(width, height):\n    return width"
REST = " * height"


class Rest(FakeBackend):
    """Writes ``REST`` in two passes, each of its tokens ``sure`` likely."""

    def __init__(self, sure: float):
        super().__init__(passes=2)
        self.sure = sure

    def _drafts(self, count, alternatives, step, final):
        tokens = (TokenState(" *", self.sure, True), TokenState(" height", self.sure if final else 0.2, final))
        return (Draft(step, (Candidate(" * height" if final else " *#", tokens if final else (tokens[0], TokenState("#", 0.2, False))),),
                      final, forward_passes=step, generated_tokens=step),)


def type_lines(qtbot, editor) -> None:
    """``TYPED`` as a user types it: the editor indents the line after the colon."""
    qtbot.keyClicks(editor, TYPED.split("\n")[0])
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, TYPED.split("\n")[1].strip())


def typing_window(window, qtbot, backend):  # noqa: F811
    with_fake_model(window, qtbot, backend)
    editor = window.tabs.new_document().editor
    window.activateWindow()
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    qtbot.wait(600)  # the first rest: the text as opened is not the user's typing
    return editor


def test_a_sure_rest_of_the_line_is_shown_after_typing_and_tab_takes_it(qtbot, window):  # noqa: F811
    editor = typing_window(window, qtbot, Rest(0.95))
    type_lines(qtbot, editor)
    qtbot.waitUntil(lambda: editor.suggestion.shown, timeout=5000)
    assert editor.suggestion.text == REST
    assert document_text(editor.document()) == TYPED  # drawn, not written: saving now saves what was typed
    assert editor.saved_text() == TYPED
    assert "Tab takes it" in window.statusBar().currentMessage()
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == TYPED + REST and not editor.suggestion.shown
    editor.undo()  # the suggestion was one undo step
    assert document_text(editor.document()) == TYPED


def test_the_new_line_enter_made_is_suggested_too(qtbot, window):  # noqa: F811
    backend = Rest(0.95)
    editor = typing_window(window, qtbot, backend)
    qtbot.keyClicks(editor, "def area(width, height):")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: editor.suggestion.shown, timeout=5000)
    request = backend.requests[-1][0]
    assert request.prefix.endswith(":\n    ") and request.one_line and request.n_alternatives == 1
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == "def area(width, height):\n    " + REST


def test_the_ai_menu_turns_suggestions_off_and_takes_a_shown_one_away(qtbot, window):  # noqa: F811
    editor = typing_window(window, qtbot, Rest(0.95))
    type_lines(qtbot, editor)
    qtbot.waitUntil(lambda: editor.suggestion.shown, timeout=5000)
    assert window.menu_actions.suggest.isChecked()
    window.menu_actions.suggest.trigger()
    assert not window.settings.suggest_while_typing and not window.ai.suggester.enabled
    assert not editor.suggestion.shown and editor.textCursor().block().layout().preeditAreaText() == ""


def test_a_new_look_takes_a_shown_suggestion_away(qtbot, window):  # noqa: F811
    editor = typing_window(window, qtbot, Rest(0.95))
    type_lines(qtbot, editor)
    qtbot.waitUntil(lambda: editor.suggestion.shown, timeout=5000)
    window.toggle("theme", "dark")  # the text highlighted again: a suggestion would lose its faint colour
    assert not editor.suggestion.shown and editor.textCursor().block().layout().preeditAreaText() == ""


def test_an_unsure_rest_is_not_shown(qtbot, window):  # noqa: F811
    backend = Rest(0.5)
    editor = typing_window(window, qtbot, backend)
    type_lines(qtbot, editor)
    qtbot.waitUntil(lambda: len(backend.requests) == 1, timeout=5000)
    qtbot.wait(300)
    assert not editor.suggestion.shown
    qtbot.keyClick(editor, Qt.Key.Key_Tab)  # Tab indents as ever
    assert document_text(editor.document()) == TYPED + "    "


def test_prose_has_its_own_lower_bar(qtbot, window):  # noqa: F811
    backend = Rest(0.7)  # under code's bar, over prose's
    editor = typing_window(window, qtbot, backend)
    type_lines(qtbot, editor)
    qtbot.waitUntil(lambda: len(backend.requests) == 1, timeout=5000)
    qtbot.wait(300)
    assert not editor.suggestion.shown
    editor.prose = True  # a Markdown or plain-text file
    qtbot.keyClicks(editor, " and")
    qtbot.waitUntil(lambda: editor.suggestion.shown, timeout=5000)


def test_only_typing_at_a_line_end_on_a_local_model_asks(qtbot, window):  # noqa: F811
    backend = Rest(0.95)
    editor = typing_window(window, qtbot, backend)
    editor.setPlainText("x = 1\ny = 2\n")
    qtbot.wait(600)
    qtbot.keyClick(editor, Qt.Key.Key_Down)  # a move, no typing
    qtbot.wait(600)
    qtbot.keyClicks(editor, "z")  # typed, but the line goes on after the cursor
    qtbot.wait(600)
    assert backend.requests == []
    window.ai.suggester.enabled = False  # the setting off
    qtbot.keyClick(editor, Qt.Key.Key_End)
    qtbot.keyClicks(editor, " + y")
    qtbot.wait(600)
    window.ai.suggester.enabled = True
    window.ai._spec = "https://models.example.com/v1"  # a server: typing never sends text to it
    qtbot.keyClicks(editor, " + y")
    qtbot.wait(600)
    assert backend.requests == [] and not editor.suggestion.shown


def shown_in(qtbot, text: str) -> CodeEditor:
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.setPlainText(text)
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.suggestion.show(editor.textCursor().position(), REST, session_keys(DEFAULT_KEYS))
    return editor


def test_typing_the_suggestions_next_characters_carries_the_rest(qtbot):
    editor = shown_in(qtbot, TYPED)
    qtbot.keyClicks(editor, " *")
    assert editor.suggestion.shown and editor.suggestion.text == " height"
    qtbot.keyClicks(editor, "x")  # not what it says: gone
    assert not editor.suggestion.shown
    assert document_text(editor.document()) == TYPED + " *x"


def test_ctrl_right_takes_a_word_and_esc_drops_the_rest(qtbot):
    editor = shown_in(qtbot, TYPED)
    qtbot.keyClick(editor, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == TYPED + " *"
    assert editor.suggestion.text == " height"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert not editor.suggestion.shown and document_text(editor.document()) == TYPED + " *"


def test_a_move_or_an_edit_elsewhere_drops_it(qtbot):
    editor = shown_in(qtbot, TYPED)
    qtbot.keyClick(editor, Qt.Key.Key_Left)
    assert not editor.suggestion.shown
    editor = shown_in(qtbot, TYPED)
    cursor = editor.textCursor()
    cursor.setPosition(0)
    cursor.insertText("# area\n")  # the text changed under it (a replace, a reload)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert not editor.suggestion.shown and document_text(editor.document()) == "# area\n" + TYPED + "    "
    assert all(editor.document().findBlockByNumber(n).layout().preeditAreaText() == "" for n in range(3))  # nothing left drawn


def test_a_suggestion_is_laid_in_before_the_closer_auto_close_typed_and_goes_without_a_trace(qtbot):
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.show()
    qtbot.keyClicks(editor, "m = mean")
    editor.suggestion.show(editor.textCursor().position(), "(values)", session_keys(DEFAULT_KEYS))
    qtbot.keyClicks(editor, "(")  # auto-close types ")": the suggestion goes on inside the pair
    assert document_text(editor.document()) == "m = mean()"
    assert editor.suggestion.text == "values"  # its own ")" is the one already there
    layout = editor.textCursor().block().layout()
    assert layout.preeditAreaText() == "values"  # drawn in the line, before the ")"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert layout.preeditAreaText() == "" and document_text(editor.document()) == "m = mean()"
    editor.suggestion.show(editor.textCursor().position(), "values)", session_keys(DEFAULT_KEYS))
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == "m = mean(values)" and layout.preeditAreaText() == ""


def test_an_input_methods_text_takes_the_suggestions_place(qtbot):
    from PySide6.QtGui import QInputMethodEvent

    editor = shown_in(qtbot, TYPED)
    editor.inputMethodEvent(QInputMethodEvent("ni", []))  # composing: the input method's own preedit
    assert not editor.suggestion.shown
    assert editor.textCursor().block().layout().preeditAreaText() == "ni"
