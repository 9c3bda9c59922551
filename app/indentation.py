"""Guessing how a file indents (tabs, or spaces and how many), so Tab and Enter follow the file."""

from __future__ import annotations

from collections import Counter

SAMPLE_LINES = 10_000
WIDTHS = (2, 3, 4, 8)


def detect_indentation(text: str) -> tuple[bool, int | None] | None:
    """(with spaces, width) as the file's lines show it; None when they do not say.

    Tabs win when more indented lines start with a tab than with spaces (width None: a tab is
    as wide as the settings say). The width of space indentation is the commonest step by which
    a line goes deeper than the line before it.
    """
    tabbed = spaced = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in text.split("\n", SAMPLE_LINES)[:SAMPLE_LINES]:
        if not line.strip():
            continue
        if line.startswith("\t"):
            tabbed += 1
            continue
        width = len(line) - len(line.lstrip(" "))
        if width:
            spaced += 1
        if width > previous and width - previous in WIDTHS:
            steps[width - previous] += 1
        previous = width
    if tabbed > spaced:
        return (False, None)
    if not steps:
        return None
    return (True, steps.most_common(1)[0][0])
