"""Syntax highlighting with pygments, one line at a time.

Qt asks for one block (line) at a time and rehighlights the following lines only while their
starting state changes, so an edit costs a few lines, not the file. For pygments' regex lexers
(nearly all of them; not the extended ones, whose callbacks need the whole text) the lexer's state stack is carried from line to line, so multi-line strings
and comments come out right; other lexers see each line on its own. Documents above
``MAX_HIGHLIGHT_CHARS`` and lines above ``MAX_LINE_CHARS`` stay plain text: a 10 MB log opens
instantly instead of freezing the window; below that limit the first lines are highlighted at
once and the rest in small sweeps between events, so a large file opens without a freeze.
"""

from __future__ import annotations

from collections.abc import Iterator

from pygments.lexer import ExtendedRegexLexer, Lexer, RegexLexer
from pygments.lexers import get_lexer_for_filename, guess_lexer
from pygments.styles import get_style_by_name
from pygments.token import Error, Token, _TokenType
from pygments.util import ClassNotFound
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

MAX_HIGHLIGHT_CHARS = 2_000_000
MAX_LINE_CHARS = 5_000
FIRST_LINES = 1_000  # highlighted at once; the rest in sweeps between events
LINES_PER_SWEEP = 300


def lexer_for(file_name: str | None, text: str) -> Lexer | None:
    """A lexer from the file name, else guessed from the content; None for plain text."""
    try:
        if file_name:
            return get_lexer_for_filename(file_name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        pass
    if not text.strip():
        return None
    try:
        lexer = guess_lexer(text[:4096], stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if lexer.name == "Text only" else lexer


def lex_line(lexer: RegexLexer, text: str, stack: list[str]) -> Iterator[tuple[int, _TokenType, str]]:
    """Tokens of one line for a regex lexer, continuing from ``stack``; updates ``stack`` in place.

    The same walk over ``lexer._tokens`` that pygments does for a whole text, stopped at the end
    of the line so the state can be handed to the next one.
    """
    definitions = lexer._tokens
    rules = definitions[stack[-1]]
    pos = 0
    while pos < len(text):
        for match_at, action, new_state in rules:
            match = match_at(text, pos)
            if not match:
                continue
            if action is not None:
                if type(action) is _TokenType:
                    yield pos, action, match.group()
                else:
                    yield from action(lexer, match)
            pos = match.end()
            if new_state is not None:
                _change_state(stack, new_state)
                rules = definitions[stack[-1]]
            break
        else:
            if text[pos] == "\n":
                stack[:] = ["root"]
                rules = definitions["root"]
            else:
                yield pos, Error, text[pos]
            pos += 1


def _change_state(stack: list[str], new_state: object) -> None:
    if isinstance(new_state, tuple):
        for state in new_state:
            if state == "#pop":
                if len(stack) > 1:
                    stack.pop()
            elif state == "#push":
                stack.append(stack[-1])
            else:
                stack.append(state)
    elif isinstance(new_state, int):
        if abs(new_state) >= len(stack):
            del stack[1:]
        else:
            del stack[new_state:]
    elif new_state == "#push":
        stack.append(stack[-1])


class PygmentsHighlighter(QSyntaxHighlighter):
    """Highlights a QTextDocument with a pygments lexer and style (by its pygments name)."""

    def __init__(self, document: QTextDocument, lexer: Lexer, style_name: str):
        self._lexer = lexer
        self._formats: dict[_TokenType, QTextCharFormat] = {}
        self._stacks: list[tuple[str, ...]] = [("root",)]
        self._stack_ids: dict[tuple[str, ...], int] = {("root",): 0}
        self._ready_until = FIRST_LINES - 1  # lines below stay plain until the sweep reaches them
        super().__init__(document)
        self._style = get_style_by_name(style_name)
        self._sweep = QTimer(self)
        self._sweep.setInterval(0)
        self._sweep.timeout.connect(self._highlight_more)
        if document.blockCount() > FIRST_LINES:
            self._sweep.start()

    @property
    def sweeping(self) -> bool:
        """True while lines further down are still waiting for their colours."""
        return self._sweep.isActive()

    def _highlight_more(self) -> None:
        """Highlight the next LINES_PER_SWEEP lines; the event loop runs between sweeps."""
        document = self.document()
        if document is None or self._ready_until >= document.blockCount() - 1:
            self._sweep.stop()
            return
        first = self._ready_until + 1
        self._ready_until += LINES_PER_SWEEP
        # Lines not yet reached keep state -1, so Qt's rehighlight runs on through this chunk
        # (each line's new state differs from -1) and stops at its end.
        self.rehighlightBlock(document.findBlockByNumber(first))

    @property
    def language(self) -> str:
        return self._lexer.name

    @property
    def lexer(self) -> Lexer:
        return self._lexer

    @property
    def style_name(self) -> str:
        return self._style.name

    def set_style(self, style_name: str) -> None:
        if style_name == self._style.name:
            return
        self._style = get_style_by_name(style_name)
        self._formats.clear()
        self.rehighlight()

    def _format(self, token: _TokenType) -> QTextCharFormat:
        cached = self._formats.get(token)
        if cached is None:
            styled = token
            while not self._style.styles_token(styled):  # a lexer's own token (YAML's Scalar.Plain): its parent's style
                styled = styled.parent
            spec = self._style.style_for_token(styled)
            cached = QTextCharFormat()
            if spec["color"]:
                cached.setForeground(QColor("#" + spec["color"]))
            if spec["bgcolor"] and token is not Token:
                cached.setBackground(QColor("#" + spec["bgcolor"]))
            if spec["bold"]:
                cached.setFontWeight(QFont.Weight.Bold)
            if spec["italic"]:
                cached.setFontItalic(True)
            if spec["underline"]:
                cached.setFontUnderline(True)
            self._formats[token] = cached
        return cached

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if self.currentBlock().blockNumber() > self._ready_until:
            return
        if len(text) > MAX_LINE_CHARS:
            self.setCurrentBlockState(self.previousBlockState())
            return
        if isinstance(self._lexer, RegexLexer) and not isinstance(self._lexer, ExtendedRegexLexer):
            previous = self.previousBlockState()
            stack = list(self._stacks[previous] if previous >= 0 else ("root",))
            tokens = list(lex_line(self._lexer, text + "\n", stack))
            self.setCurrentBlockState(self._state_id(tuple(stack)))
        else:
            tokens = list(self._lexer.get_tokens_unprocessed(text))
            self.setCurrentBlockState(0)
        for start, token, value in tokens:
            if start >= len(text):
                break
            if token is not Token.Text and token is not Token.Text.Whitespace:
                self.setFormat(start, min(len(value), len(text) - start), self._format(token))

    def _state_id(self, stack: tuple[str, ...]) -> int:
        state = self._stack_ids.get(stack)
        if state is None:
            state = self._stack_ids[stack] = len(self._stacks)
            self._stacks.append(stack)
        return state


def attach_highlighter(document: QTextDocument, file_name: str | None, style_name: str) -> PygmentsHighlighter | None:
    """A highlighter for ``document``, or None when it is plain text or too large to highlight."""
    if document.characterCount() > MAX_HIGHLIGHT_CHARS:
        return None
    lexer = lexer_for(file_name, document.toPlainText()[:4096])
    return PygmentsHighlighter(document, lexer, style_name) if lexer is not None else None
