"""The functions and classes a file defines, as its pygments lexer sees them, for Go to Symbol."""

from __future__ import annotations

from pygments.lexer import Lexer
from pygments.token import Keyword, Name, Text, Whitespace

MAX_SYMBOL_CHARS = 2_000_000  # a larger file is not lexed whole for its outline


def symbols(lexer: Lexer, text: str) -> list[tuple[str, int]]:
    """(name, 0-based line) of every function and class defined in ``text``, in order.

    A definition is a function or class name right after a keyword (``def f``, ``class C``,
    ``fn f``, ``int f``), which leaves out calls such as ``super().__init__()``.
    """
    if len(text) > MAX_SYMBOL_CHARS:
        return []
    found = []
    previous = None
    for position, token, value in lexer.get_tokens_unprocessed(text):
        if token in Text or token in Whitespace or not value.strip():
            continue
        if (token in Name.Function or token in Name.Class) and previous is not None and previous in Keyword:
            found.append((value, text.count("\n", 0, position)))
        previous = token
    return found
