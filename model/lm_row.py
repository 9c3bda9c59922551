"""The embedded engine's state for one canvas being denoised: the loop check on what it wrote, and
where its healed start (the prefix's last token, spelt again by the canvas) stands."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Row:
    """One canvas being denoised: one alternative of one request (or one gap of a template)."""

    prompt: list[int]
    heal: bytes  # the text the first generated token must start with (the prompt's dropped token)
    budget: int  # tokens it may still write
    one_line: bool  # the rest of a line: its newline ends the text
    temperature: float
    generator: torch.Generator
    canvas: list[int] = field(default_factory=list)
    masked: list[bool] = field(default_factory=list)
    confidence: list[float] = field(default_factory=list)
    written: list[int] = field(default_factory=list)  # committed tokens of earlier canvases
    written_confidence: list[float] = field(default_factory=list)
    stop: str = ""  # the start of the suffix: a text that runs into it ends before it
    stop_space: bool = False  # the suffix starts with white space (then so does the cut)
    scope: int = 0  # text of several lines ends where a line starts less indented (sfumato.model.gap_scope)
    lines: bool = False  # an infill of several lines: it ends where its lines repeat, and loses a line its budget cut
    ran_out: bool = False  # its token budget (or, for several lines, a loop) ended the text, not the model
    before: str = ""  # the prefix's last line and the suffix: a text ending with the suffix's start
    after: str = ""  # is trimmed of the repeat (sfumato.model.suffix_overlap)
    accept: float = 1.0  # with a sampler bound: a pass also settles every masked token at least this likely
    guess: dict[int, int] = field(default_factory=dict)  # canvas position -> the token the next pass reads there
    cached: int = 0  # leading canvas positions whose keys and values the cache holds (read with their settled tokens)
    no_breaks: bool = False  # a one-line rewrite: no token with a line break may be written
    # the healed text ends with a space that a space token alone may spell, as a number's (SmolLM2 joins
    # no space to a digit: `` `` + ``8080``); not after a sentence's end, where that is two spaces' first
    lone_space: bool = False
    must_write: bool = False  # the cursor on a blank line or inside one, a template's gap: the text may not start with its end
    cut: int | None = None  # the text ends after this many tokens (a loop was stopped, a gap's end was scored)
    cut_chars: int = 0  # ... and the last of them loses this many characters (a gap's end scored inside it)
    gap_suffix: list[int] = field(default_factory=list)  # a branch (sfumato.model.gap_cut): the suffix's start its score reads
    whole_line: bool = False  # a line a heavy rewrite writes again: scored whole (to its line break), never cut
    replaces: str | None = None  # ... and the line it writes again (its branches that keep its structure rank first)
    keeps_line: bool = False  # ... and no branch kept that structure: the line stays as it was
    selection_rest: int | None = None  # ... and how much of its suffix the selection still holds
    branch: bool = False  # one of a request's rows written from its first word's likeliest choices (sfumato.model.gap_cut)
    first_word_rank: int = 0  # a branch: its first word is the k-th likeliest after the likeliest
    score: float | None = None  # a branch's: its best cut's, or a whole line's (sfumato.model.gap_cut)
    fix_rounds: int = 0  # a light rewrite: rounds of proposed edits read so far
    fixing: bool = False  # ... and its last round made an edit: another round reads the text as edited
    avoid: torch.Tensor | bool = False  # [V] with must_write: tokens that would begin it as the text after it begins
    # [V] the same for the token that spells the heal; in a gap inside a line it may spell the heal as the
    # suffix begins (`"""` opens what it closes), not the heal and then the suffix's first words (`` port``)
    avoid_healed: torch.Tensor | bool = False
    done: bool = False
    passes: int = 0
    generated: int = 0  # tokens the model wrote (a rewrite's pinned ones do not count)

    @property
    def speculate(self) -> bool:
        """Open positions are shown the last pass's guesses (``sfumato.model.lm_settle``), unless a
        sampler bound asks for the threshold rule."""
        return self.accept >= 1.0


def read_end(row: Row, both_ways: bool = False) -> int:
    """Where a pass stops reading the canvas. A row that speculates settles its leftmost open
    token from the logits before it and the next ones from the logits its guesses give, and these
    read only the text to their left; so it is read up to its first masked position without a
    guess (a masked position read there would give only the denoiser's guess two tokens ahead,
    which prompt lookup's guesses beat; a pass over 4 positions costs ~70% of one over 16). A
    rewrite read ``both_ways`` and the threshold rule read every position."""
    if both_ways or not row.speculate:
        return len(row.canvas)
    end = row.cached
    while end < len(row.canvas) and (not row.masked[end] or end in row.guess):
        end += 1
    return end


LOOP_UNITS = 16  # the longest unit of tokens looked for


def _repeats(size: int) -> int:
    """How many copies of a unit of ``size`` tokens in a row make a loop: a sentence written three
    times over is one, a token needs six (a run of dashes may be meant)."""
    return 6 if size == 1 else 4 if size <= 6 else 3


def loop_cut(ids: list[int]) -> int | None:
    """Where ``ids`` should end when they close with a loop: after the first copy of the unit
    repeated; None when they do not."""
    for size in range(1, LOOP_UNITS + 1):
        span = size * _repeats(size)
        tail = ids[-span:]
        if len(tail) == span and all(tail[i] == tail[i + size] for i in range(span - size)):
            start = len(ids) - span
            while start > 0 and ids[start - 1] == ids[start - 1 + size]:  # the loop began before the tail
                start -= 1
            return start + size
    return None


def stop_loop(row: Row) -> None:
    """A line that has begun to write one unit of tokens over and over (``* height * height
    * height``) ends after the unit's first copy; a text of several lines so cut then ends as a
    budget's cut does, after its last line that closes what it opened (``gap_scope.whole_lines_end``)."""
    ids = list(row.written)
    for token, masked in zip(row.canvas, row.masked):
        if masked:
            break
        ids.append(token)
    cut = loop_cut(ids)
    if cut is not None:
        row.cut, row.done = cut, True
        row.ran_out = row.lines


def heal_only_tokens(row: Row, table: list[bytes]) -> int:
    """How many of a rewrite's first canvas tokens spell nothing but the healed text (the
    prefix's last token, e.g. a line break before the selection): renoised, they let the model
    rewrite the text before the selection (``\n`` came back as ``\n       ``)."""
    spelt = 0
    for i, token in enumerate(row.canvas):
        spelt += len(table[token])
        if spelt > len(row.heal):
            return i
    return len(row.canvas)


def after_lone_space(row: Row, table: list[bytes]) -> int | None:
    """The canvas position after a space alone that ended the healed text (``Row.lone_space``: `` ``
    after ``port =``, before a number's digits): the token there may not begin with white space (a
    space too many). None elsewhere."""
    end = _heal_walk(row, table)[2] if row.lone_space else None
    return end + 1 if end is not None and table[row.canvas[end]] == b" " else None


def heal_position(row: Row, table: list[bytes]) -> tuple[int | None, bytes]:
    """(the first canvas position still to match the healed text, the bytes it must match);
    (None, b"") once the settled tokens have spelt it all."""
    return _heal_walk(row, table)[:2]


def _heal_walk(row: Row, table: list[bytes]) -> tuple[int | None, bytes, int | None]:
    """``heal_position``'s pair, and the canvas index of the token that spelt the healed text's end
    (None while it is unspelt, or where a committed canvas spelt it)."""
    left = row.heal
    if not left:
        return None, b"", None
    for token in row.written:  # a committed canvas was settled: it spelt its part of the heal
        piece = table[token]
        if len(piece) >= len(left):
            return None, b"", None
        left = left[len(piece) :]
    for i, token in enumerate(row.canvas):
        piece = table[token]
        if row.masked[i] or not piece:
            return i, left, None
        if len(piece) >= len(left):
            return None, b"", i
        left = left[len(piece) :]
    return None, b"", None
