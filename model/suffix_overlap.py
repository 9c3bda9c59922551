"""A generated text that ends with the start of the text after the gap (the suffix).

A model that writes past its gap repeats what follows it: a docstring's closing quotes, a
sentence's period, a call's closing bracket. The engine already cuts a text where it runs into
several characters of the suffix; this is the short case, a text whose last characters are the
suffix's first ones. Whether they are doubled or meant twice is read from the line around the gap:
brackets and quotes that balance only without them, a doubled sentence mark, or three or more
marks repeated (closing quotes, ``);``).
"""

from __future__ import annotations

PAIRS = {")": "(", "]": "[", "}": "{"}
QUOTES = "\"'`"
SENTENCE_MARKS = ".,;:!?"
LONGEST = 8


def overlap_to_drop(text: str, before: str, after: str) -> int:
    """How many characters at the end of ``text`` repeat the start of ``after`` and should go.

    ``before`` is the line before the gap, ``after`` the text after it (its first line is read)."""
    line_after = after.split("\n", 1)[0]
    longest = 0
    for k in range(min(LONGEST, len(text), len(line_after)), 0, -1):
        if not line_after[:k].strip():
            break  # white space alone is not an overlap
        if text.endswith(line_after[:k]):
            longest = k
            break
    if not longest:
        return 0
    repeated = line_after[:longest]
    if any(c.isalnum() for c in repeated):
        return 0  # words are the stop string's business (several characters of them)
    if longest >= 3:
        return longest
    if all(c in SENTENCE_MARKS for c in repeated):
        return longest
    kept = before + text + line_after
    trimmed = before + text[:-longest] + line_after
    return longest if _imbalance(trimmed) < _imbalance(kept) else 0


def _imbalance(line: str) -> int:
    """Brackets that do not pair up on the line, plus quotes left open."""
    score = 0
    for close, open_ in PAIRS.items():
        score += abs(line.count(open_) - line.count(close))
    return score + sum(line.count(q) % 2 for q in QUOTES)
