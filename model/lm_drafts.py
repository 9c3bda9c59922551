"""What the editor is shown of the embedded engine's rows: per-token states and one Draft per pass."""

from __future__ import annotations

from dataclasses import dataclass

from sfumato.model.api import Candidate, Draft, TokenState
from sfumato.model.gap_scope import repeat_end, scope_end, whole_lines_end
from sfumato.model.lm_row import Row
from sfumato.model.suffix_overlap import cut_at_stop, cut_states, without_overlap
from sfumato.model.token_text import split_text

CONFIDENT_PROBABILITY = 0.5  # a result whose tokens average less than this is marked not confident


def row_states(row: Row, table: list[bytes], end: int, at_stop: bool = True) -> tuple[TokenState, ...]:
    """Per-token text of everything the row has written, open positions unsettled: shown the
    guess the next pass reads there (``sfumato.model.lm_settle``), or empty; the healed start and
    what follows a closing newline or end are left out, and unless ``at_stop`` is False, what runs
    into the suffix or leaves the gap's block. A heavy rewrite's line that stays (``Row.keeps_line``)
    is the line as it was."""
    if row.keeps_line:
        return (TokenState(row.replaces, 1.0, True),)
    ids = (row.written + row.canvas)[: row.cut]
    settled = ([True] * len(row.written) + [not m for m in row.masked])[: row.cut]
    confidence = (row.written_confidence + row.confidence)[: row.cut]
    shown = [t if ok else row.guess.get(i - len(row.written), end) for i, (t, ok) in enumerate(zip(ids, settled))]
    pieces = split_text(table, shown)
    heal = row.heal.decode("utf-8", "replace")
    states = []
    for index, (piece, ok, conf) in enumerate(zip(pieces, settled, confidence)):
        if heal and ok:  # the healed text is the prompt's, not the result's
            cut = len(piece) if heal.startswith(piece) else len(heal) if piece.startswith(heal) else 0
            piece, heal = piece[cut:], heal[cut:]
        elif heal:  # a guess while the healed text is still being spelt would show the prompt's text again
            piece = ""
        if row.one_line and "\n" in piece:
            states.append(TokenState(piece.split("\n", 1)[0], conf, ok))
            break
        if shown[index] == end and ok:
            break
        states.append(TokenState(piece, conf, ok))
    if row.cut_chars:
        states = list(cut_states(states, len("".join(state.text for state in states)) - row.cut_chars))
    if not at_stop:
        return tuple(states)
    states = cut_at_stop(states, row.stop, row.stop_space)
    states = cut_states(states, scope_end("".join(state.text for state in states), row.scope))
    if row.lines:
        states = cut_states(states, repeat_end("".join(state.text for state in states), row.scope))
        if row.ran_out:
            states = cut_states(states, whole_lines_end("".join(state.text for state in states), row.scope))
    return without_overlap(states, row.before, row.after)


def kept_generated(row: Row) -> int:
    """Tokens the model wrote that the result keeps (not those cut after its end, not pinned ones)."""
    if row.keeps_line:
        return 0
    return min(row.generated, len(row.written) + sum(not m for m in row.masked))


@dataclass
class Spent:
    """A request's first alternative over the parts of a rewrite already done."""

    passes: int = 0
    tokens: int = 0  # written by the model and kept
    confidence: float = 0.0  # summed over the settled tokens
    settled: int = 0

    def add(self, row: Row, states: tuple[TokenState, ...]) -> None:
        settled = [state.confidence for state in states if state.accepted]
        self.passes += row.passes
        self.tokens += kept_generated(row)
        self.confidence += sum(settled)
        self.settled += len(settled)


def group_draft(group: list[Row], group_states: list[tuple[TokenState, ...]], passes: int, final: bool,
                written: list[list[TokenState]], after: str, spent: Spent) -> Draft:
    """The group's candidates: each alternative's parts done, its current part, the selection's rest."""
    candidates, seen = [], set()
    for states_now, before in zip(group_states, written):
        states = (*before, *states_now, TokenState(after, 1.0, True))
        states = tuple(state for state in states if state.text or not state.accepted)
        text = "".join(state.text for state in states)
        if final and text in seen:
            continue
        seen.add(text)
        candidates.append(Candidate(text, states))
    best = group[0]
    settled = [state.confidence for state in group_states[0] if state.accepted]
    count = len(settled) + spent.settled
    confident = bool(count) and (sum(settled) + spent.confidence) / count >= CONFIDENT_PROBABILITY
    return Draft(batch_passes=passes, candidates=tuple(candidates), final=final, forward_passes=spent.passes + best.passes,
                 generated_tokens=spent.tokens + kept_generated(best), confident=confident or not final)
