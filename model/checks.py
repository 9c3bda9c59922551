"""Cheap checks of a candidate text in its place: does the document still read as code?

Each check looks at a window of the document around the region with the candidate put in, so
that a truncated start of the prefix (the editor sends ~3,000 characters) does not spoil it:

* ``parses``: for Python, the window from the nearest line above that starts at column 0 to the
  next such line below parses with ``ast`` (this also checks that the indentation fits); None
  when the window does not parse with any text in the region (not Python, or cut mid-block);
* ``bracket_errors``: brackets that close nothing or stay open in the candidate's lines, for any
  language, with strings and comments skipped as pygments' Python lexer sees them (the one lexer
  used, whatever the language);
* ``unknown_names``: identifiers of the candidate that appear nowhere in the document, the
  project context, Python's builtins or keywords, and that the candidate does not define.

The reranker compares candidates with these; no check alone decides.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Sequence
from functools import lru_cache

from pygments.lexers import PythonLexer
from pygments.token import Comment, String

WINDOW_LINES = 60  # at most this many lines each side of the region
IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
DEFINES = re.compile(r"\b(?:def|class|import|as|for|global|nonlocal|lambda)\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:=(?!=)|:=|,\s*\w+\s*=)")
KNOWN = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self", "cls"}
PAIRS = {")": "(", "]": "[", "}": "{"}


def window(prefix: str, text: str, suffix: str) -> str:
    """The lines around the region, from the last column-0 line above to the next one below."""
    before = prefix.split("\n")
    after = suffix.split("\n")
    head = before[-1]
    before = before[:-1][-WINDOW_LINES:]
    start = next((i for i in range(len(before) - 1, -1, -1) if before[i][:1].strip()), 0)
    first = after[0]
    after = after[1 : WINDOW_LINES + 1]
    end = next((i for i, line in enumerate(after) if line[:1].strip() and not line.startswith((")", "]", "}"))), len(after))
    return "\n".join([*before[start:], head + text + first, *after[:end]])


def parses(prefix: str, text: str, suffix: str) -> bool:
    try:
        ast.parse(window(prefix, text, suffix))
    except (SyntaxError, ValueError):
        return False
    return True


@lru_cache(maxsize=1)
def _python_lexer():
    return PythonLexer(stripnl=False, ensurenl=False)


def bracket_errors(text: str) -> int:
    """Closing brackets without an opener plus openers left open, outside strings and comments."""
    stack: list[str] = []
    errors = 0
    for token_type, value in _python_lexer().get_tokens(text):
        if token_type in String or token_type in Comment:
            continue
        for char in value:
            if char in "([{":
                stack.append(char)
            elif char in PAIRS:
                if stack and stack[-1] == PAIRS[char]:
                    stack.pop()
                else:
                    errors += 1
    return errors + len(stack)


def unknown_names(text: str, prefix: str, suffix: str, context: Sequence[str] = ()) -> int:
    """How many distinct names ``text`` uses that nothing around it knows or it defines itself."""
    used = set(IDENTIFIER.findall(_code_only(text)))
    if not used:
        return 0
    defined = {name for match in DEFINES.finditer(text) for name in match.groups() if name}
    known = KNOWN | defined
    unknown = used - known
    if not unknown:
        return 0
    around = set(IDENTIFIER.findall(prefix)) | set(IDENTIFIER.findall(suffix))
    for snippet in context:
        around |= set(IDENTIFIER.findall(snippet))
    return len(unknown - around)


def _code_only(text: str) -> str:
    """``text`` without its string and comment contents (their words are not names)."""
    return "".join(value for token_type, value in _python_lexer().get_tokens(text)
                   if token_type not in String and token_type not in Comment)
