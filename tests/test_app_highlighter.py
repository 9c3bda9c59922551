"""Syntax highlighting: state carried across lines, big files stay plain or are swept lazily."""

from __future__ import annotations

from PySide6.QtGui import QTextDocument

from sfumato.app import highlighter
from sfumato.app.highlighter import PygmentsHighlighter, attach_highlighter, lex_line, lexer_for


def test_a_multi_line_string_is_one_token_across_lines():
    lexer = lexer_for("example.py", "")
    stack = ["root"]
    lines = ['x = """start', "middle", 'end""" + 1']
    kinds = [[str(token) for _, token, _ in lex_line(lexer, line + "\n", stack)] for line in lines]
    assert all("String" in kind for kind in kinds[1])
    assert any("Number" in kind for kind in kinds[2])
    assert stack == ["root"]


def test_the_lexer_comes_from_the_name_then_the_content():
    assert lexer_for("notes.md", "").name == "Markdown"
    assert lexer_for(None, "#!/bin/bash\necho hi\n").name.startswith("Bash")
    assert lexer_for("data.unknown-extension", "just some words") is None


def test_a_document_over_the_size_limit_stays_plain(monkeypatch):
    monkeypatch.setattr(highlighter, "MAX_HIGHLIGHT_CHARS", 1000)
    document = QTextDocument("x = 1\n" * 500)
    assert attach_highlighter(document, "big.py", "default") is None


def test_long_files_are_highlighted_in_sweeps_down_to_the_last_line(qtbot, monkeypatch):
    monkeypatch.setattr(highlighter, "FIRST_LINES", 10)
    monkeypatch.setattr(highlighter, "LINES_PER_SWEEP", 7)
    document = QTextDocument("value = 'text'  # comment\n" * 100)
    lighter = PygmentsHighlighter(document, lexer_for("a.py", ""), "default")
    last = document.lastBlock().previous()
    qtbot.waitUntil(lambda: not lighter.sweeping, timeout=10000)
    assert len(last.layout().formats()) >= 3


def test_a_lexer_with_its_own_token_types_gets_their_parents_style(qtbot):
    document = QTextDocument("key: plain value\nother: 'quoted'\n")
    lighter = attach_highlighter(document, "config.yaml", "default")  # YAML yields Literal.Scalar.Plain
    assert lighter is not None and lighter.language == "YAML"
    qtbot.waitUntil(lambda: bool(document.firstBlock().layout().formats()))  # not stopped by an unknown token type
