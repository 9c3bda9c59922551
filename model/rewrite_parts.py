"""A long selection fixed a few lines at a time, each part a canvas of the length the model
trained on; cut into single lines, the lines a heavy rewrite chooses from (``sfumato.model.line_rewrite``).

The embedded model learnt to denoise canvases of 16-32 tokens; a selection of many lines in one
canvas is outside that. The selection is cut at line starts (after the line break and the
indentation) into parts of at most ``PART_TOKENS`` tokens; the engine fixes part k (a light
rewrite) with the parts before it, as fixed, in its prefix and the parts after it, as they are,
in its suffix. A heavy rewrite reads its selection to choose the lines it writes again, at most
``READ_TOKENS`` at a time (``reading_windows``); a line longer than that is refused
(``refuse_long_lines``), by a light rewrite too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from sfumato.model.api import EngineError, InfillRequest

PART_TOKENS = 24  # with the canvas's room to grow (a quarter more), within the 32 of training
# Of a selection, the most tokens one forward reads (read whole, 100 KB took 18 GB), and the longest
# line a rewrite takes
READ_TOKENS = 2048
LINE_START = re.compile(r"(?:\n[ \t]*)+(?=\S)")  # line breaks, blank lines and the indentation after them


def split_selection(text: str, count_tokens: Callable[[str], int], budget: int = PART_TOKENS) -> list[tuple[str, str]]:
    """``text`` as consecutive (part, break) pairs that join back to it: each part holds whole
    lines, at most ``budget`` tokens (a line longer than that is a part of its own), and its break
    is the line break and indentation before the next part's text, which no rewrite changes."""
    lines: list[tuple[str, str]] = []
    start = 0
    for m in LINE_START.finditer(text):
        lines.append((text[start : m.start()], m.group()))
        start = m.end()
    lines.append((text[start:], ""))
    merged = [lines[0]]
    for part, brk in lines[1:]:
        head, head_break = merged[-1]
        if count_tokens(head + head_break + part) <= budget:
            merged[-1] = (head + head_break + part, brk)
        else:
            merged.append((part, brk))
    return merged


def part_request(request: InfillRequest, plan: list[tuple[str | None, str]], index: int, written: str,
                 heavy: bool) -> InfillRequest:
    """The request for part ``index`` of a rewrite: the parts before it as ``written``, those after
    as they are; in a heavy rewrite, a one-line infill."""
    if len(plan) == 1 and not heavy:
        return request
    around = {"prefix": request.prefix + written, "suffix": text_after(plan, index) + request.suffix}
    if heavy:
        return replace(request, **around, init_text=None, strength=1.0, one_line=True)
    return replace(request, **around, init_text=plan[index][0])


def text_after(plan: list[tuple[str | None, str]], index: int) -> str:
    """The selection's text after part ``index``, as it was: its line break and the parts after it."""
    return plan[index][1] + "".join(part + brk for part, brk in plan[index + 1 :])


def reading_windows(text: str, count_tokens: Callable[[str], int]) -> list[tuple[str, str, str]]:
    """``text`` as (the text before, a window, the text after): windows of whole lines, at most
    ``READ_TOKENS`` tokens each (one when the text fits); a longer line is refused."""
    if count_tokens(text) <= READ_TOKENS:  # one count (cutting into windows counts each one's lines again and again)
        return [("", text, "")]
    parts = split_selection(text, count_tokens, READ_TOKENS)
    refuse_long_lines([part for part, _ in parts], count_tokens)
    return [("".join(p + b for p, b in parts[:k]), part, text_after(parts, k)) for k, (part, _) in enumerate(parts)]


def refuse_long_lines(parts: list[str], count_tokens: Callable[[str], int]) -> None:
    """EngineError for a part (whole lines) over ``READ_TOKENS`` tokens: one line that long
    (minified code, a data blob) is more than a rewrite reads at once."""
    for part in parts:
        if len(part.encode("utf-8")) > READ_TOKENS and (tokens := count_tokens(part)) > READ_TOKENS:  # a token is a byte or more
            raise EngineError(f"a selected line has {tokens:,} tokens; a rewrite takes lines of at most {READ_TOKENS:,}")
