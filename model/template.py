"""``[MASK]`` gaps in a template: finding them and putting fills back.

``[MASK]`` marks a gap of the default length; ``[MASK:n]`` hints ``n`` tokens. Markers are
matched exactly (no nesting); anything else that looks like a marker stays text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GAP_PATTERN = re.compile(r"\[MASK(?::(\d{1,6}))?\]")
DEFAULT_GAP_TOKENS = 32
MAX_GAP_TOKENS = 1024


@dataclass(frozen=True)
class Gap:
    start: int  # character offsets of the marker in the template
    end: int
    max_new_tokens: int


def within_its_line(prefix: str, suffix: str) -> bool:
    """A gap with text before or after it on its line (``math.[MASK](16)``, ``total = [MASK]``) is
    filled within that line, as Ctrl+K at a cursor is; one alone on its line may write several."""
    return bool(prefix.rsplit("\n", 1)[-1].strip() or suffix.split("\n", 1)[0].strip())


def find_gaps(text: str, default_tokens: int = DEFAULT_GAP_TOKENS) -> list[Gap]:
    """Every marker in ``text``; a hint of 0 or above MAX_GAP_TOKENS raises ValueError."""
    gaps = []
    for match in GAP_PATTERN.finditer(text):
        hint = match.group(1)
        tokens = default_tokens if hint is None else int(hint)
        if not 1 <= tokens <= MAX_GAP_TOKENS:
            raise ValueError(f"gap at offset {match.start()}: length {tokens} is outside 1..{MAX_GAP_TOKENS}")
        gaps.append(Gap(match.start(), match.end(), tokens))
    return gaps


def segments_of(text: str, gaps: list[Gap]) -> tuple[str, ...]:
    """The text around ``gaps``: one more segment than gaps."""
    bounds = [0] + [offset for gap in gaps for offset in (gap.start, gap.end)] + [len(text)]
    return tuple(text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2))


def apply_fills(text: str, gaps: list[Gap], fills: list[str]) -> str:
    """``text`` with each gap's marker replaced by its fill."""
    if len(gaps) != len(fills):
        raise ValueError("one fill per gap")
    segments = segments_of(text, gaps)
    return "".join(segment + fill for segment, fill in zip(segments, fills)) + segments[-1]
