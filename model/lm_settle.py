"""Which tokens a pass of the embedded engine settles, and the guesses the next pass is shown.

A canvas position is settled (its token final), shown a guess (still open, but the pass reads the
guessed token there), or masked. Settled and guessed positions read the canvas left to right, as
the causal base read its text; a masked one reads every position both ways, as the adapter was
trained to denoise (a rewrite's text, the threshold rule).

Self-speculative decoding: each pass settles the leftmost open position from the logits that
predict it (they read only settled text). When the token settled is the guess the pass showed
there, the logits after it read the right text too, so the next position settles in the same pass,
and so on while the guesses hold. The text is what one token a pass would write; the guesses decide
how many tokens a pass settles. They come from the text itself: where its last tokens occur earlier
in the prompt or the text, what followed them there (prompt lookup; on held-out lines 1.10 -> 1.61
tokens a pass over the denoiser's own parallel guesses, which then added almost nothing, so masked
positions after the guesses are no longer read: ``lm_row.read_end``). On a CPU a pass's cost grows
with the positions it reads while guesses far ahead seldom hold, so there a pass is shown at most
``most_guesses`` (the engine's ``CPU_GUESSES``): the same text, in more passes that cost less.

With a sampler bound (``InfillRequest.sampler_bound``) no guess is shown: every masked position
whose token is at least that likely settles (Fast-dLLM's threshold rule), at least the leftmost.
"""

from __future__ import annotations

import math

import torch

from sfumato.model.gap_scope import repeat_end, scope_end
from sfumato.model.lm_drafts import row_states
from sfumato.model.lm_layout import SpecialIds
from sfumato.model.lm_row import Row, after_lone_space, heal_position, stop_loop
from sfumato.model.lm_vocabulary import CanvasVocabulary
from sfumato.model.suffix_overlap import stop_at

END_BAR = 0.3  # a greedy row ends only where its ends (the end token; for one line, line breaks) are this likely in all
BRANCH_SEARCH = 64  # tokens a branch's first word is looked for among


class Settler:
    """Settles a row's tokens from one pass's logits and guesses the rest for the next pass (``settle``)."""

    def __init__(self, vocabulary: CanvasVocabulary, special: SpecialIds, most_guesses: int | None = None):
        self.vocabulary, self.special, self.table = vocabulary, special, vocabulary.table
        self.most_guesses = most_guesses  # positions a pass is shown guesses at (None: to the canvas's end)

    def settle(self, row: Row, logits: torch.Tensor) -> None:
        """Settle what this pass's ``logits`` [C, V] (i-1 predicts i; zero where not read) decide, then guess on."""
        logits = logits[: len(row.canvas)]
        shown, row.guess = row.guess, {}
        while True:
            position, token = self._settle_leftmost(row, logits)
            if position is None or row.done:
                break
            if shown.get(position) != token or position + 1 >= len(row.canvas) or not row.masked[position + 1]:
                break  # the logits after this position did not read its token: they decide nothing
        if row.accept < 1.0 and not row.done:
            self._settle_sure(row, logits)
        if row.speculate and not row.done:
            self._guess_from_context(row, logits)

    def _guess_from_context(self, row: Row, logits: torch.Tensor) -> None:
        """Where the text's last tokens (3, else 2, else 1) occur earlier in the prompt or the text,
        guess that what followed them there follows now (prompt lookup: code repeats its names and
        phrases). Each guess is checked before it settles, so guesses change how many passes a text
        takes, never the text. A guess is drawn as likely as this pass found it where the pass
        read the text before it, else as noise (the model has not weighed it)."""
        start = next((i for i, masked in enumerate(row.masked) if masked), None)
        if start is None:
            return
        history = row.prompt + row.written + row.canvas[:start]
        for n in (3, 2, 1):
            key = history[-n:]
            found = next((j for j in range(len(history) - n - 1, -1, -1) if history[j : j + n] == key), None)
            if len(key) == n and found is not None:
                room = len(row.canvas) - start if self.most_guesses is None else min(len(row.canvas) - start, self.most_guesses)
                for i, token in enumerate(history[found + n : found + n + room], start):
                    if row.masked[i]:
                        row.guess[i] = token
                self._draw_guesses(row, logits)
                return

    def _draw_guesses(self, row: Row, logits: torch.Tensor) -> None:
        """Each guess's confidence: its probability among what the row may write where this pass
        read the position (its logits are not zero), else 0. One softmax over the guessed positions."""
        positions = list(row.guess)
        if not positions:
            return
        rows = logits[positions]
        read = rows.any(-1).tolist()
        chance = rows.masked_fill(self.vocabulary.blocked(len(positions), row.no_breaks), -math.inf).softmax(-1)
        for k, i in enumerate(positions):
            row.confidence[i] = float(chance[k, row.guess[i]]) if read[k] else 0.0

    def _choose(self, row: Row, logits: torch.Tensor, positions: list[int]) -> tuple[list[int], list[float]]:
        """(the token each of ``positions`` would take under the row's rules, its probability)."""
        heal_at, left = heal_position(row, self.table)
        spaced_at = after_lone_space(row, self.table)
        logits = logits[positions].clone()
        blocked = self.vocabulary.blocked(len(positions), row.no_breaks)
        must_write = row.must_write and self._text_start(row) is not None
        for k, position in enumerate(positions):
            if position == heal_at:  # the healed text may be spelt by parts of a character, as the prompt held it
                logits[k, ~self.vocabulary.heal_allowed(left)] = -math.inf
                blocked[k] = self.vocabulary.unwritable | self.vocabulary.heal_spaces(left, row.lone_space)
                if must_write:
                    blocked[k] |= self.vocabulary.heal_breaks(left) | row.avoid_healed
            elif must_write and row.masked[position]:
                # a blank line or a gap inside a line gets text: nothing ends it before its text, and it does
                # not begin as the text after it does (that copy would be cut as running into it: nothing left)
                blocked[k] |= self.vocabulary.breaks | row.avoid
                blocked[k, self.special.end] = True
            if position == spaced_at:
                blocked[k] |= self.vocabulary.spaced
        logits[blocked] = -math.inf
        probs = logits.softmax(-1)
        if row.temperature:
            sampled = torch.multinomial((logits / row.temperature).softmax(-1), 1, generator=row.generator)[:, 0]
        else:
            sampled = self._greedy(row, probs, [position == heal_at for position in positions])
        return sampled.tolist(), probs.gather(1, sampled[:, None])[:, 0].tolist()

    def _greedy(self, row: Row, probs: torch.Tensor, healing: list[bool]) -> torch.Tensor:
        """The likeliest token of each row of ``probs``, deciding first whether the text ends there:
        it does only where all its ends together are ``END_BAR`` likely. Where the next word is
        uncertain, a line break could be the likeliest single token at 7% while 93% went on
        (``This is a`` ended a sentence); the end competes as one choice, not token by token."""
        ends = self.vocabulary.line_ends if row.one_line else self.vocabulary.text_ends
        end_mass = probs[:, ends].sum(-1)
        goes_on = (end_mass < END_BAR) & (end_mass < 1.0) & ~torch.tensor(healing, device=probs.device)
        best = probs.argmax(-1)
        again = goes_on & ends[best]  # an end leads where the text goes on: the likeliest of the rest (few rows)
        if again.any():
            best[again] = probs[again].masked_fill(ends, 0.0).argmax(-1)
        return best

    def _settle_leftmost(self, row: Row, logits: torch.Tensor) -> tuple[int | None, int | None]:
        """Settle the leftmost open position (the healed text's, while it is being spelt); (where, what)."""
        open_ = [i for i, masked in enumerate(row.masked) if masked]
        if not open_ or open_[0] > self._end_index(row):  # past a settled end nothing is kept
            self.close_at_end(row)
            return None, None
        position = open_[0]
        (token,), (chance,) = self._choose(row, logits, [position])
        if row.first_word_rank and self._first_word(row, position, token):
            token, chance = self._branch(row, logits, position)
        self._set(row, position, token, chance)
        return position, token

    def _first_word(self, row: Row, position: int, token: int) -> bool:
        """Whether ``token`` at ``position`` begins the text's first word: after the healed text
        (where that is white space) and any white space, never inside the prefix's last word."""
        heal_at, left = heal_position(row, self.table)
        if heal_at == position:
            return not left.strip() and bool(self.table[token][len(left) :].strip())
        return heal_at is None and self._text_start(row) == position and bool(self.table[token].strip())

    def _branch(self, row: Row, logits: torch.Tensor, position: int) -> tuple[int, float]:
        """A branch's first word: the likelier first words are ruled out one after another (tokens
        of white space alone do not count) and the row's rules choose among the rest; drawn with the
        model's own probability of it."""
        banned, passed = logits.clone(), 0
        for _ in range(BRANCH_SEARCH):
            (token,), _ = self._choose(row, banned, [position])
            if self._first_word(row, position, token):
                if passed == row.first_word_rank:
                    break
                passed += 1
            banned[position, token] = -math.inf
        return token, float(logits[position].float().softmax(-1)[token])

    def _settle_sure(self, row: Row, logits: torch.Tensor) -> None:
        """The threshold rule: every masked position at least ``row.accept`` likely settles."""
        if heal_position(row, self.table)[0] is not None:  # the healed text is spelt left to right first
            return
        positions = [i for i in range(self._end_index(row) + 1) if row.masked[i]]
        if not positions:
            return
        for i, token, chance in zip(positions, *self._choose(row, logits, positions)):
            if row.done:  # an end settled: the canvas is cut there
                break
            if chance >= row.accept:
                self._set(row, i, token, chance)

    def _set(self, row: Row, position: int, token: int, confidence: float) -> None:
        row.canvas[position], row.masked[position], row.confidence[position] = token, False, confidence
        row.generated += 1
        self.close_at_end(row)
        if (row.one_line or row.lines) and not row.done:  # a rewrite's repeats may be the user's
            stop_loop(row)

    def _text_start(self, row: Row) -> int | None:
        """The canvas position the text's first character goes to while only the heal and white
        space are settled before it; None once the text has begun (or its start is not open)."""
        if row.written:
            return None
        for i in range(len(row.canvas)):
            if row.masked[i]:
                return i
            if self._piece(row, i).strip():
                return None
        return None

    def _piece(self, row: Row, index: int) -> bytes:
        """The bytes canvas position ``index`` adds to the text after the healed start."""
        if not row.heal:
            return self.table[row.canvas[index]]
        before = sum(len(self.table[t]) for t in row.written + row.canvas[:index])
        return self.table[row.canvas[index]][max(0, len(row.heal) - before) :]

    def _end_index(self, row: Row) -> int:
        """The first settled position that ends the text (an end, or a newline for one line); the
        last position when there is none."""
        for i, token in enumerate(row.canvas):
            if not row.masked[i] and (token == self.special.end or (row.one_line and b"\n" in self._piece(row, i))):
                return i
        return len(row.canvas) - 1

    def goes_on(self, row: Row) -> bool:
        """A settled canvas with no end in it and budget left: the text goes on in the next one."""
        return not row.done and not any(row.masked) and self.special.end not in row.canvas and row.budget > len(row.canvas)

    def close_at_end(self, row: Row) -> None:
        """A settled end (or a newline, for one line) after settled tokens closes the row."""
        end = self._end_index(row)
        closes = not row.masked[end] and (row.canvas[end] == self.special.end
                                          or row.one_line and b"\n" in self._piece(row, end))
        if any(row.masked[:end]) or row.masked[end]:
            return
        if closes:
            row.canvas, row.masked, row.confidence = row.canvas[: end + 1], row.masked[: end + 1], row.confidence[: end + 1]
            row.done = True
            return
        if not self.goes_on(row):
            row.ran_out = not row.done and row.budget <= len(row.canvas)
            row.done = True
        elif row.stop or row.scope or row.lines:  # the settled text has run into the suffix, left its block or repeats: the rest would be cut
            settled = []
            for state in row_states(row, self.table, self.special.end, at_stop=False):
                if not state.accepted:
                    break
                settled.append(state.text)
            text = "".join(settled)
            row.done = (stop_at(text, row.stop, row.stop_space) >= 0 or scope_end(text, row.scope) >= 0
                        or row.lines and repeat_end(text, row.scope) >= 0)
