"""A gap inside a line ends at the cut the model finds the rest of the line likeliest after."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import InfillRequest, ModelInfo  # noqa: E402
from sfumato.model.gap_cut import CutQueries, cut_candidates  # noqa: E402


def test_cuts_fall_at_word_starts_and_at_the_end():
    pieces = [b" machine", b",", b" and", b" keep", b"ing", b" it"]
    assert cut_candidates(pieces) == [1, 2, 3, 5, 6]  # never between " keep" and "ing"
    assert cut_candidates(pieces, first=2) == [2, 3, 5, 6]


def reference_score(model, prompt, text, suffix, k) -> float:
    """log p(text[:k] + suffix | prompt), read plainly left to right."""
    ids = torch.tensor([prompt + text[:k] + suffix])
    log_probs = model(input_ids=ids).logits[0].log_softmax(-1)
    targets = ids[0, len(prompt):]
    return float(log_probs[len(prompt) - 1 : -1].gather(1, targets[:, None]).sum())


def test_the_tree_of_queries_scores_each_cut_as_a_plain_reading_would(tiny_lm):
    prompt, text, suffix = [5, 17, 99, 240, 7], [301, 12, 977, 45, 630, 88], [410, 29, 3001]
    candidates = [1, 3, 4, 6]
    q = CutQueries.build(text, suffix, candidates)
    p = len(prompt)
    mask = torch.zeros(p + len(q.ids), p + len(q.ids), dtype=torch.bool)
    mask[:p, :p] = torch.tril(torch.ones(p, p, dtype=torch.bool))
    mask[p:, :p] = True
    mask[p:, p:] = q.mask
    with torch.no_grad():
        logits = tiny_lm(input_ids=torch.tensor([prompt + q.ids]), attention_mask=mask[None, None],
                         position_ids=torch.tensor([list(range(p)) + [p + o for o in q.offsets]])).logits[0]
        scores = {k: reference_score(tiny_lm, prompt, text, suffix, k) for k in candidates}
    assert q.scores(logits[p - 1], logits[p:]) == pytest.approx([scores[k] for k in candidates], abs=1e-4)
    assert q.best(logits[p - 1], logits[p:]) == max(scores, key=scores.get)


def test_a_gap_inside_a_line_is_cut_at_a_word_start_of_what_the_model_wrote(tiny_lm, smol_tokenizer, monkeypatch):
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="Keep a copy of your files on another ", suffix=" and check it now and then.\n",
                            max_new_tokens=16, one_line=True, seed=2)
    assert backend._row(request, 0).gap_suffix
    assert not backend._row(InfillRequest(prefix="x = ", suffix="\ny = 2\n", one_line=True), 0).gap_suffix
    cut = [d[0] for d in backend.stream([request])][-1].text
    monkeypatch.setattr(backend, "_cut_gaps", lambda rows, last_logits, cache: None)
    whole = [d[0] for d in backend.stream([request])][-1].text
    assert cut and whole.startswith(cut)
    assert len(cut) == len(whole) or not whole[len(cut)].isalnum()
