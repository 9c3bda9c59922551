"""A light rewrite (a fix): the denoiser's proposed edits, read by the model left to right, the likeliest kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import InfillRequest, ModelInfo
from sfumato.model.light_rewrite import (
    MAX_ROUNDS,
    SequenceQueries,
    proposals,
    target_log_probs,
    typed_prior,
)


@pytest.fixture
def table(smol_tokenizer):
    from sfumato.model.lm_layout import SpecialIds
    from sfumato.model.lm_vocabulary import CanvasVocabulary

    return CanvasVocabulary(smol_tokenizer, SpecialIds.of(smol_tokenizer)).table


def encoder(smol_tokenizer):
    return lambda text: smol_tokenizer(text, add_special_tokens=False).input_ids


def sure_of(canvas: list[int], vocabulary: int, instead: dict[int, tuple[int, float]]) -> torch.Tensor:
    """[C, V] probabilities: each typed token 0.9, except where ``instead`` puts another token first."""
    probs = torch.full((len(canvas), vocabulary), 1e-6)
    for i, token in enumerate(canvas):
        probs[i, token] = 0.9
        if i in instead:
            other, p = instead[i]
            probs[i, token], probs[i, other] = 0.05, p
    return probs


def texts(smol_tokenizer, sequences) -> list[str]:
    return [smol_tokenizer.decode(ids) for ids in sequences]


def test_a_slip_split_in_two_is_proposed_whole_and_no_word_is_dropped(smol_tokenizer, table):
    encode = encoder(smol_tokenizer)
    canvas = encode(" retrun result")  # " ret", "run", " result"
    fix = encode(" return")[0]
    out = proposals(canvas, sure_of(canvas, len(table), {0: (fix, 0.6)}), 0, table, encode, b"")
    assert out[0] == canvas  # the text as typed comes first
    assert " return result" in texts(smol_tokenizer, out)  # the fix took the place of "run" too
    assert all(text.endswith(" result") for text in texts(smol_tokenizer, out))  # a whole word is never taken
    assert len({tuple(ids) for ids in out}) == len(out)


def test_a_doubled_letter_is_proposed_deleted(smol_tokenizer, table):
    encode = encoder(smol_tokenizer)
    canvas = encode(" hostnamee(x)")  # " hostname", "e", "(", "x", ")"
    out = proposals(canvas, sure_of(canvas, len(table), {1: (encode("(")[0], 0.5)}), 0, table, encode, b"")
    assert " hostname(x)" in texts(smol_tokenizer, out)


def test_nothing_is_proposed_where_the_denoiser_agrees_or_before_the_first_position(smol_tokenizer, table):
    encode = encoder(smol_tokenizer)
    canvas = encode("\n    retrun result")  # the healed line break and indentation, then the selection
    assert proposals(canvas, sure_of(canvas, len(table), {}), 1, table, encode, b"\n") == [canvas]
    out = proposals(canvas, sure_of(canvas, len(table), {0: (encode("\n")[0], 0.8)}), 1, table, encode, b"\n")
    assert out == [canvas]  # the heal is the prompt's text: never edited


def reference_score(model, prompt, ids) -> float:
    """log p(ids | prompt), read plainly left to right."""
    x = torch.tensor([prompt + ids])
    log_probs = model(input_ids=x).logits[0].log_softmax(-1)
    return float(log_probs[len(prompt) - 1 : -1].gather(1, x[0, len(prompt):, None]).sum())


def test_the_sequences_side_by_side_score_as_each_read_alone(tiny_lm, read_queries):
    prompt, suffix = [5, 17, 99, 240, 7], [410, 29]
    sequences = [[301, 12, 977], [301, 88], [630, 12, 977, 45]]
    q = SequenceQueries.build(sequences, suffix)
    p, logits = len(prompt), read_queries(prompt, q)
    with torch.no_grad():
        alone = [reference_score(tiny_lm, prompt, seq + suffix) for seq in sequences]
        first_token = tiny_lm(input_ids=torch.tensor([prompt])).logits[0, -1].softmax(-1)[sequences[1][0]]
    read = target_log_probs(logits[p:], lambda chunk: chunk, q.targets, 5)  # a few positions at a time
    assert q.scores(logits[p - 1], read) == pytest.approx(alone, abs=1e-4)
    assert q.scores(logits[p - 1], read, prior=3.0)[0] == pytest.approx(alone[0] + 3.0, abs=1e-4)
    probs = q.token_probs(logits[p - 1], read)(1)
    assert len(probs) == 2 and probs[0] == pytest.approx(float(first_token), abs=1e-5)


def test_a_lower_strength_keeps_more_of_the_text():
    assert typed_prior(0.3) == pytest.approx(8.0)
    assert typed_prior(0.1) > typed_prior(0.3) > typed_prior(0.45) > 0


def test_a_fix_takes_the_edit_the_model_reads_likeliest(tiny_lm, smol_tokenizer):
    """A model that favours " return" everywhere: the light rewrite of ``retrun result`` proposes
    it at the slip and in place of the other word, and the reading prefers the shorter, whole fix;
    the text as edited is read again, round after round, until a round keeps it."""
    import copy

    from sfumato.model.lm_engine import LmDenoiserBackend
    from sfumato.model.lm_layout import SpecialIds

    favoured = smol_tokenizer(" return", add_special_tokens=False).input_ids
    model = copy.deepcopy(tiny_lm)
    model.lm_head.register_forward_hook(lambda module, args, out: out.index_add(
        -1, torch.tensor(favoured), torch.full((*out.shape[:-1], 1), 12.0)))
    backend = LmDenoiserBackend(model, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="def total(values):\n    result = sum(values)\n   ", suffix="\n", init_text=" retrun result",
                            strength=0.3, seed=1, n_alternatives=2)
    drafts = [d[0] for d in backend.stream([request])]
    first, final = drafts[0], drafts[-1]
    assert first.text == " return result"  # the first round fixed the slip
    assert first.forward_passes == 2 and first.generated_tokens == 1  # the scoring pass and the reading; one token written
    # each round after an edit reads the text again (this model goes on to a second " return")
    assert 1 < len(drafts) <= MAX_ROUNDS and final.forward_passes == 2 * len(drafts)
    assert [d.final for d in drafts] == [False] * (len(drafts) - 1) + [True]
    assert SpecialIds.of(smol_tokenizer).end not in smol_tokenizer(final.text).input_ids
    unchanged = [d[0] for d in backend.stream([InfillRequest(prefix="x = 1\n", suffix="\n", init_text="retrun result",
                                                              strength=0.0)])][-1]
    assert unchanged.text == "retrun result"
