"""Where a text of several lines leaves the block its gap sits in.

A gap in an indented line (``    return [MASK]``) belongs to that line's block. A model that has
written the gap's text goes on past it (to the next function at the margin: ``\\n\\n\\ndef``) until
the token budget cuts it mid-line. So such a text ends after its last line above the first line
it starts less indented than the gap's own line, as editors' block completions stop at a dedent.
"""

from __future__ import annotations


def indentation(line: str) -> int:
    """The width of ``line``'s leading white space, in characters."""
    return len(line) - len(line.lstrip(" \t"))


def scope_end(text: str, indent: int) -> int:
    """Where ``text``, written into a line indented ``indent`` characters, must end: just after the
    last line with text above the first later line that starts less indented (the blank lines
    between go too); -1 when it never leaves the block. A line whose first character is not
    written yet decides nothing."""
    end, at = -1, 0
    for k, line in enumerate(text.split("\n")):
        if k and line.strip() and indentation(line) < indent:
            return end
        if k == 0 or line.strip():
            end = at + len(line)
        at += len(line) + 1
    return -1
