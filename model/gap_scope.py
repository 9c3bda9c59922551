"""Where a text of several lines ends: where it leaves the block its gap sits in, or its lines
start repeating, or its token budget cut its last line.

A gap in an indented line (``    return [MASK]``) belongs to that line's block. A model that has
written the gap's text goes on past it (to the next function at the margin: ``\\n\\n\\ndef``) until
the token budget cuts it mid-line. So such a text ends after its last line above the first line
it starts less indented than the gap's own line, as editors' block completions stop at a dedent.
A small model that loops writes the same lines over and over (``if x is None: return None``
four times) until the budget cuts it: it ends before the first repeat.
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


def at_block_end(prefix: str, suffix: str) -> bool:
    """Whether a cursor between ``prefix`` and ``suffix`` sits on a blank, indented line that ends
    its block: the next line with text starts less indented (or there is none), so what is missing
    there may be several lines of that block, as an empty body under ``def f():`` is."""
    line = prefix.rsplit("\n", 1)[-1]
    rest, _, after = suffix.partition("\n")
    if not line or line.strip() or rest.strip():
        return False
    following = next((text for text in after.split("\n") if text.strip()), None)
    return following is None or indentation(following) < len(line)


def repeat_end(text: str, indent: int) -> int:
    """Where ``text`` (its first line written at column ``indent``) must end because its whole lines
    start repeating the lines just before them: just after the last line before the first repeat
    (blank lines never repeat; a run of lines with no word in it, ``(``, only at its third copy);
    -1 when none repeats. The last line is not whole until its line break is written."""
    written = text.split("\n")[:-1]
    lines = [(indentation(line) + (indent if k == 0 else 0), line.strip()) for k, line in enumerate(written)]
    starts = [0]
    for line in written:
        starts.append(starts[-1] + len(line) + 1)
    for j in range(1, len(lines)):
        for k in range(1, min(j, len(lines) - j) + 1):
            if lines[j] != lines[j - k] or lines[j : j + k] != lines[j - k : j]:
                continue
            run = lines[j - k : j]
            if not any(line for _, line in run):  # blank lines are not text written again
                continue
            if any(any(c.isalnum() for c in line) for _, line in run) or lines[j + k : j + 2 * k] == run:
                return starts[j] - 1
    return -1


def whole_lines_end(text: str, indent: int) -> int:
    """Where ``text`` (its first line written at column ``indent``), cut by its token budget, ends:
    after its last line that closes what it opened, the next line written not indented under it
    and its brackets balanced; -1 when it has no such line (a text of one line keeps what it has)."""
    lines = text.split("\n")
    following, later = [""] * len(lines), ""  # each line's next line with text
    for k in range(len(lines) - 1, -1, -1):
        following[k] = later
        later = lines[k] if lines[k].strip() else later
    end, at, depth = -1, 0, 0
    for k, line in enumerate(lines[:-1]):
        at += len(line)
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        width = indentation(line) + (indent if k == 0 else 0)
        if line.strip() and following[k] and depth <= 0 and indentation(following[k]) <= width:
            end = at
        at += 1
    return end
