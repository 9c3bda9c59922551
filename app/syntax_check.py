"""Whether a result leaves a file that parsed failing to parse, said before it is accepted.

The embedded model writes a heavy rewrite line by line, and a line can break the code around it
(``for item in items:`` written again as a ``return`` above the loop's old indented body). The
review then says so, with the line and the parser's message, where the file's language has a
parser here (Python by ``ast``, JSON, TOML: each text is read, never run) and the file as it was
parsed (a JSON file with comments never did, so it is never judged).

Text written at a cursor that only leaves the file unfinished at its end is not breaking it: Ctrl+K
on a file's last line writes ``def circle_perimeter(radius):``, whose body comes next (Python: what
``codeop`` calls incomplete input, which more text after it completes). A rewrite that leaves the
file so is said to break it: it may have lost the body that was there.
"""

from __future__ import annotations

import ast
import codeop
import functools
import json
import tomllib
import warnings
from collections.abc import Callable, Iterable

# characters: a larger file is not parsed on the UI thread (ast reads about 5 MB a second here, and a
# check parses the file twice)
LARGEST_CHECKED = 200_000

Check = Callable[[str], "str | None"]


def python_error(text: str) -> str | None:
    """Why ``text`` is not Python that parses (``line 3: unexpected indent``), or None."""
    try:
        with warnings.catch_warnings():  # an invalid escape in the user's strings warns: not a parse error
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}" if error.lineno else error.msg
    except (ValueError, RecursionError, MemoryError) as error:  # a NUL byte; nesting too deep to read
        return str(error) or type(error).__name__
    return None


def python_unfinished(text: str) -> bool:
    """Whether ``text`` fails to parse only by stopping unfinished at its end (a definition whose
    body is to come, an open bracket or string), so that more text after it could complete it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return codeop.compile_command(text, symbol="exec") is None
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return False


def json_error(text: str) -> str | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return f"line {error.lineno}: {error.msg}"
    except RecursionError:
        return "nested too deeply to read"
    return None


def toml_error(text: str) -> str | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return str(error)  # its message names the line and column
    return None


CHECKS: dict[str, Check] = {"python": python_error, "json": json_error, "toml": toml_error}  # by pygments alias
UNFINISHED: dict[Check, Callable[[str], bool]] = {python_error: python_unfinished}  # where a language can tell


def check_for(aliases: Iterable[str]) -> Check | None:
    """The parse check for a language by its pygments aliases; None where there is none."""
    return next((CHECKS[alias] for alias in aliases if alias in CHECKS), None)


def broken_by_result(check: Check | None, before: str, after: str, written_at_cursor: bool = False) -> str | None:
    """The parser's message where ``after`` (the file with the result) fails to parse and
    ``before`` (the file as it was) did not; None otherwise, or when either is too large to check,
    or when a result ``written_at_cursor`` only leaves the file unfinished at its end."""
    if check is None or max(len(before), len(after)) > LARGEST_CHECKED or _error(check, before) is not None:
        return None
    error = _error(check, after)
    if error and written_at_cursor and check in UNFINISHED and UNFINISHED[check](after):
        return None
    return error


@functools.lru_cache(maxsize=8)
def _error(check: Check, text: str) -> str | None:
    """``check(text)``, remembered: cycling through alternatives and back parses nothing twice."""
    return check(text)
