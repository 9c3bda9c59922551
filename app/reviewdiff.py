"""What a rewrite changed: its result against the original, per line, then per word or token.

The lines are matched first (difflib), so an unchanged line stays unchanged whatever happens
around it; inside each run of changed lines the words (prose) or tokens (code) are matched, so a
one-word edit of a long paragraph marks that word, not the paragraph. A token keeps the spaces
after it, and a line break is a token of its own. The result says which spans of the new text are
new and, for each run of changed lines that lost something, the original's text as pieces (removed or kept), to be
drawn under the last new line of that run (app/ghostlines.py). Nothing here touches a document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

_CODE_TOKENS = re.compile(r"\w+[ \t]*|[^\w\s][ \t]*|\n|[ \t]+|\s")  # identifiers, one symbol each, a line break
_PROSE_TOKENS = re.compile(r"[^\s]+[ \t]*|\n|[ \t]+|\s")  # words, with the punctuation they touch


@dataclass(frozen=True)
class Ghost:
    """The original text of a run of changed lines, drawn under line ``under`` of the new text;
    ``pieces`` are (text, removed) in order, the text's line breaks included. ``at_start``: the run
    begins on the original's first line, whose text before the region is not in the pieces."""

    under: int
    pieces: tuple[tuple[str, bool], ...]
    at_start: bool = False


@dataclass(frozen=True)
class ReviewDiff:
    """``added``: (start, end) indexes of the new text's new words or tokens; ``ghosts``: what
    the changed lines were."""

    added: tuple[tuple[int, int], ...]
    ghosts: tuple[Ghost, ...]


@lru_cache(maxsize=32)  # a review is drawn again at every edit made elsewhere in the document
def review_diff(original: str, new: str, prose: bool) -> ReviewDiff:
    """How ``new`` differs from ``original``: per word when ``prose``, per token for code."""
    pattern = _PROSE_TOKENS if prose else _CODE_TOKENS
    old_lines, new_lines = original.splitlines(keepends=True), new.splitlines(keepends=True)
    line_starts = [0]
    for line in new_lines:
        line_starts.append(line_starts[-1] + len(line))
    added, ghosts = [], []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        old_tokens = pattern.findall("".join(old_lines[i1:i2]))
        new_tokens = pattern.findall("".join(new_lines[j1:j2]))
        pieces, position = [], line_starts[j1]
        for kind, a1, a2, b1, b2 in SequenceMatcher(None, old_tokens, new_tokens, autojunk=False).get_opcodes():
            if a2 > a1:
                pieces.append(("".join(old_tokens[a1:a2]), kind != "equal"))
            width = len("".join(new_tokens[b1:b2]))
            if kind != "equal" and width:
                added.append((position, position + width))
            position += width
        if any(removed for _, removed in pieces):
            text, removed = pieces.pop()
            if text.removesuffix("\n"):  # the run's last line break ends the ghost, it adds no line
                pieces.append((text.removesuffix("\n"), removed))
            ghosts.append(Ghost(max(0, j2 - 1 if j2 > j1 else j1 - 1), tuple(pieces), i1 == 0))
    return ReviewDiff(tuple(added), tuple(ghosts))
