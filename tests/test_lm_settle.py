"""Self-speculative settling: the guesses a pass was shown settle only where the causal reading
agrees, so the text is what one token a pass writes, in fewer passes."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import InfillRequest, ModelInfo
from sfumato.model.lm_layout import SpecialIds
from sfumato.model.lm_row import Row
from sfumato.model.lm_settle import Settler
from sfumato.model.lm_vocabulary import CanvasVocabulary


@pytest.fixture(scope="module")
def settler(smol_tokenizer):
    special = SpecialIds.of(smol_tokenizer)
    return Settler(CanvasVocabulary(smol_tokenizer, special), special)


def word_ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False).input_ids


def logits_for(tokens, vocab_size):
    """[C, V] logits whose best token at position i is tokens[i]."""
    logits = torch.zeros(len(tokens), vocab_size)
    for i, token in enumerate(tokens):
        logits[i, token] = 10.0
    return logits


def open_row(size):
    return Row([0], b"", 64, False, 0.0, torch.Generator(), canvas=[-1] * size, masked=[True] * size, confidence=[0.0] * size)


def test_a_pass_settles_one_token_and_guesses_on_from_where_the_text_occurred_before(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids) + 1)
    row.prompt = [0, *ids]  # the prompt holds the line once already
    settler.settle(row, logits_for(ids + [settler.special.end], len(settler.table)))
    assert row.canvas[0] == ids[0] and row.masked[1:] == [True] * len(ids)
    assert [row.guess[i] for i in range(1, len(ids))] == ids[1:]


def test_a_settler_that_guesses_at_most_k_positions_shows_the_first_k(smol_tokenizer):
    special = SpecialIds.of(smol_tokenizer)
    settler = Settler(CanvasVocabulary(smol_tokenizer, special), special, most_guesses=2)
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids) + 1)
    row.prompt = [0, *ids]
    settler.settle(row, logits_for(ids + [settler.special.end], len(settler.table)))
    assert row.canvas[0] == ids[0] and row.guess == {1: ids[1], 2: ids[2]}


def test_without_an_earlier_occurrence_nothing_is_guessed(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids) + 1)
    settler.settle(row, logits_for(ids + [settler.special.end], len(settler.table)))
    assert row.canvas[0] == ids[0] and row.guess == {}


def test_a_guess_at_a_position_the_pass_did_not_read_is_drawn_as_noise(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids) + 1)
    row.prompt = [0, *ids]
    logits = logits_for(ids + [settler.special.end], len(settler.table))
    logits[3:] = 0.0  # the pass read the canvas only up to position 2
    settler.settle(row, logits)
    assert row.confidence[2] > 0.1 and row.confidence[3] == 0.0 and row.guess[3] == ids[3]


def test_guesses_that_hold_settle_in_one_pass_and_a_wrong_one_is_replaced_and_ends_the_pass(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids) + 4)
    row.canvas[0], row.masked[0] = ids[0], False
    row.guess = {1: ids[1], 2: ids[2], 3: word_ids(smol_tokenizer, " +")[0]}
    truth = ids + [settler.special.end] * 4
    settler.settle(row, logits_for(truth, len(settler.table)))
    assert row.canvas[:4] == ids[:4]  # 1 and 2 held; 3 was wrong and takes the causal reading's token
    assert row.masked[4:] == [True] * (len(row.canvas) - 4)
    assert row.guess == {}  # and the text so far occurs nowhere before: nothing to guess


def test_a_masked_position_decides_nothing_after_it(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    row = open_row(len(ids))
    row.canvas[0], row.masked[0] = ids[0], False
    row.guess = {2: ids[2]}  # position 1 is read as a mask: its logits are a guess, not a reading
    settler.settle(row, logits_for(ids, len(settler.table)))
    assert row.canvas[1] == ids[1] and row.masked[2]


def test_a_sampler_bound_settles_by_the_bar_and_shows_no_guesses(smol_tokenizer, tiny_lm):
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="x = ", suffix="\n", max_new_tokens=6, seed=1)
    assert backend._row(request, 0).speculate and backend._row(request, 0).accept == 1.0
    bounded = backend._row(replace(request, sampler_bound=0.1), 0)
    assert not bounded.speculate and bounded.accept < 1.0


def test_speculation_writes_the_text_of_one_token_a_pass(smol_tokenizer, tiny_lm):
    """In float32 the causal reading does not depend on what else a pass holds, so the guesses
    change how many passes a text takes and never the text."""
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    for seed, request in enumerate([InfillRequest(prefix="def f(x):\n    ", suffix="\n", one_line=True, max_new_tokens=12),
                                    InfillRequest(prefix="value = ", suffix="\nprint(value)\n", max_new_tokens=40)]):
        request = replace(request, seed=seed)
        backend.settler.most_guesses = None  # guesses to the canvas's end, as on a GPU
        fast = list(backend.stream([request]))[-1][0]
        slow = list(backend.stream([replace(request, sampler_bound=1e-9)]))[-1][0]
        backend.settler.most_guesses = 2
        capped = list(backend.stream([request]))[-1][0]
        assert fast.text == slow.text == capped.text
        assert fast.forward_passes <= capped.forward_passes <= slow.forward_passes


def test_a_draft_shows_the_guesses_unsettled_and_the_result_holds_none(smol_tokenizer, tiny_lm):
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    drafts = [d[0] for d in backend.stream([InfillRequest(prefix="value = ", suffix="\n", max_new_tokens=12, seed=3)])]
    first, final = drafts[0], drafts[-1]
    assert any(t.text and not t.accepted for t in first.tokens)  # a guess (what followed these tokens in the prompt), drawn as unsure
    assert [t.text for t in first.tokens if t.accepted] == [first.tokens[0].text]  # one settled so far
    assert all(t.accepted for t in final.tokens)


def test_what_followed_the_texts_last_tokens_in_the_prompt_is_guessed_after_them(settler, smol_tokenizer):
    ids = word_ids(smol_tokenizer, " return width * height")
    plus = word_ids(smol_tokenizer, " +")[0]
    row = open_row(len(ids) + 2)
    row.prompt = word_ids(smol_tokenizer, "area = width * height\n")
    row.canvas[:2], row.masked[:2] = ids[:2], [False, False]
    denoiser = ids[:3] + [plus] + [settler.special.end] * 3  # the denoiser would guess " +" after " *"
    settler.settle(row, logits_for(denoiser, len(settler.table)))
    assert row.canvas[2] == ids[2]
    assert row.guess[3] == ids[3]  # " width *" was followed by " height" in the prompt


def spread_logits(settler, tokenizer, chances: dict[str, float]) -> torch.Tensor:
    """[1, V] logits giving each text's token its chance (the rest spread thin over the vocabulary)."""
    probs = torch.full((len(settler.table),), 1e-9)
    for text, chance in chances.items():
        probs[word_ids(tokenizer, text)[0]] = chance
    return probs.log()[None]


def test_a_line_ends_only_where_its_ends_together_are_likely_not_where_one_break_leads(settler, smol_tokenizer):
    """``This is a`` + a break at 7% while ten words share the rest: the line goes on with the
    likeliest word; where breaks hold most of the mass, it ends; a text of several lines is not
    ended by a break, only by the end token."""
    from sfumato.model import lm_settle

    words = [" good", " great", " way", " safe", " simple", " strong", " quick", " clean", " fine", " nice"]
    uncertain = spread_logits(settler, smol_tokenizer, {"\n": 0.07, **{w: 0.06 + 0.001 * k for k, w in enumerate(words)}})
    certain = spread_logits(settler, smol_tokenizer, {"\n": 0.4, "\n\n": 0.3, " good": 0.3})
    assert 0.0 < lm_settle.END_BAR < 1.0
    row = open_row(1)
    row.one_line = True
    settler.settle(row, uncertain)
    assert settler.table[row.canvas[0]] == b" nice" and not row.done
    row = open_row(1)
    row.one_line = True
    settler.settle(row, certain)
    assert row.canvas[0] == word_ids(smol_tokenizer, "\n")[0] and row.done
    row = open_row(1)  # several lines: a break is text, not an end
    settler.settle(row, certain)
    assert row.canvas[0] == word_ids(smol_tokenizer, "\n")[0] and not row.done
    unsure_end = spread_logits(settler, smol_tokenizer, {w: 0.06 + 0.001 * k for k, w in enumerate(words)})
    unsure_end[0, settler.special.end] = math.log(0.2)
    row = open_row(2)  # ... and the end token, likeliest alone at 20%, does not end it either
    settler.settle(row, unsure_end)
    assert settler.table[row.canvas[0]] == b" nice" and not row.done


def settled_row(tokenizer, text, **fields):
    ids = word_ids(tokenizer, text)
    return Row([0], b"", len(ids), False, 0.0, torch.Generator(), canvas=ids, masked=[False] * len(ids),
               confidence=[1.0] * len(ids), **fields)


def test_a_text_of_several_lines_ends_before_its_lines_repeat_and_its_budget_cuts_it_at_a_closed_line(settler, smol_tokenizer):
    from sfumato.model.lm_drafts import row_states

    def text(row):
        return "".join(state.text for state in row_states(row, settler.table, settler.special.end))

    loop = "if x:\n        return None\n    if x:\n        return None\n    if"
    assert text(settled_row(smol_tokenizer, loop, scope=4, lines=True)) == "if x:\n        return None"
    assert text(settled_row(smol_tokenizer, loop, scope=4)) == loop  # a line or a rewrite: the user's repeats stay
    cut = "total = 0\n    for x in xs:\n        total +="
    row = settled_row(smol_tokenizer, cut, scope=4, lines=True)
    settler.close_at_end(row)  # the canvas is full and the budget spent: the budget ended it
    assert row.done and row.ran_out
    assert text(row) == "total = 0"  # the loop's body was cut, so the loop goes too
    assert text(settled_row(smol_tokenizer, cut, scope=4, lines=True)) == cut  # still being written: shown whole


def test_a_line_that_loops_inside_a_text_of_several_lines_ends_the_text_after_its_first_copy(settler, smol_tokenizer):
    """A loop body's line writing one unit over and over (``echo "${f} -${f} -${f} ...``, the
    17 edits' shell case) ends the text after the unit's first copy, as a one-line infill does;
    a rewrite (neither a line nor a text of lines) keeps what it reads."""
    ids = word_ids(smol_tokenizer, 'echo "${f}' + " -${f}" * 8)
    for lines in (True, False):
        row = open_row(len(ids))
        row.lines = lines
        for position, token in enumerate(ids):
            if row.done:
                break
            settler._set(row, position, token, 0.9)
        assert row.done == lines and row.ran_out == lines  # ended as a budget's cut is: at its last closed line
        if lines:  # cut where the repeating began (the unit as the tokens fall: ``{f} -$``)
            assert b"".join(settler.table[token] for token in row.canvas[: row.cut]) == b'echo "${f} -$'
