"""The masked-diffusion backend on tiny random BERT / ModernBERT checkpoints built here.

Random weights write nonsense; the tests assert lengths, what the model is fed, end-token and
growth handling, determinism, cancel and the shape of the drafts. Output-layer biases stand in
for a trained model's habits (always ending at once, never ending).
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import pytest
import torch

from sfumato.model.api import CancelFlag, Cancelled, EngineError, InfillRequest, TemplateRequest
from sfumato.model.gap_fill import gap_request
from sfumato.model.loading import load_backend
from sfumato.model.masked_diffusion import (
    MaskedDiffusionBackend,
    masked_diffusion_family,
    predicts_next_position,
)
from sfumato.model.masked_samplers import SAMPLERS
from sfumato.model.tokenizer import encode_text


def build_bert(folder, tokenizer, bias: dict[int, float] | None = None, max_positions: int = 128, seed: int = 0):
    """Save a ~0.3M-parameter BertForMaskedLM with ``tokenizer``; ``bias`` shifts chosen output logits."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=max_positions, pad_token_id=tokenizer.pad_token_id,
    )
    model = BertForMaskedLM(config)
    with torch.no_grad():
        for token_id, value in (bias or {}).items():
            model.get_output_embeddings().bias[token_id] = value
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def load_masked(folder, **options) -> MaskedDiffusionBackend:
    """The backend the loader builds for ``folder`` on the CPU, wrapped again with constructor ``options``."""
    loaded = load_backend(str(folder), device="cpu")
    assert isinstance(loaded, MaskedDiffusionBackend)
    return MaskedDiffusionBackend(loaded.model, loaded.tokenizer, loaded.info, **options)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, project_tokenizer):
    return build_bert(tmp_path_factory.mktemp("bert"), project_tokenizer)


@pytest.fixture(scope="module")
def backend(bert_dir):
    return load_masked(bert_dir)


@pytest.fixture(scope="module")
def endless(tmp_path_factory, project_tokenizer):
    """A model that never predicts EOS or pad, with a 4-token first estimate."""
    ends = {project_tokenizer.eos_token_id: -1e4, project_tokenizer.pad_token_id: -1e4}
    folder = build_bert(tmp_path_factory.mktemp("endless"), project_tokenizer, ends)
    return load_masked(folder, span_tokens=4)


@pytest.fixture(scope="module")
def eager_to_end(tmp_path_factory, project_tokenizer):
    """A model that predicts EOS everywhere with high confidence."""
    folder = build_bert(tmp_path_factory.mktemp("eos"), project_tokenizer, {project_tokenizer.eos_token_id: 20.0})
    return load_masked(folder)


@contextmanager
def fed_inputs(backend):
    """Record the input_ids (B, T) of every forward pass."""
    seen = []
    handle = backend.model.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs["input_ids"].clone()), with_kwargs=True
    )
    try:
        yield seen
    finally:
        handle.remove()


def final_texts(backend, request):
    *_, last = backend.stream([request])
    return [candidate.text for candidate in last[0].candidates]


def test_infill_feeds_prefix_and_suffix_untouched_and_drafts_have_the_right_shape(backend, project_tokenizer):
    requests = [
        InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n\nprint(add(1, 2))\n", max_new_tokens=6,
                      steps=3, seed=1, n_alternatives=2),
        InfillRequest(prefix="x", suffix="", max_new_tokens=4, steps=4, seed=2),
    ]
    with fed_inputs(backend) as seen:
        drafts = list(backend.stream(requests))
    prefix = [project_tokenizer.bos_token_id, *encode_text(project_tokenizer, requests[0].prefix)]
    suffix = encode_text(project_tokenizer, requests[0].suffix)
    assert [ids.shape[0] for ids in seen] == [3, 3, 3, 1]  # alternatives and requests batched; finished rows leave
    for ids in seen[:3]:
        row = ids[0].tolist()
        assert row[: len(prefix)] == prefix and row[len(prefix) + 6 :] == suffix
    assert all(len(tuple_) == 2 for tuple_ in drafts)
    assert [tuple_[0].batch_passes for tuple_ in drafts] == list(range(1, len(drafts) + 1))
    assert all(draft.final for draft in drafts[-1]) and not all(draft.final for draft in drafts[0])
    assert len(drafts[-1][0].candidates) == 2 and len(drafts[-1][1].candidates) == 1
    for tuple_ in drafts:
        for draft in tuple_:
            for candidate in draft.candidates:
                assert "".join(token.text for token in candidate.tokens) == candidate.text
    first = drafts[-1][0]
    assert len(first.tokens) == 6 and first.text and all(token.accepted for token in first.tokens)
    assert first.forward_passes == 3 and first.generated_tokens == 6


def test_masks_are_drawn_as_unaccepted_guesses_that_settle(backend):
    drafts = [tuple_[0] for tuple_ in backend.stream([InfillRequest(max_new_tokens=8, steps=4, seed=3)])]
    accepted = [sum(token.accepted for token in draft.tokens) for draft in drafts]
    assert accepted == [2, 4, 6, 8]
    guesses = [token for token in drafts[0].tokens if not token.accepted]
    assert len(guesses) == 6 and all(0.0 < token.confidence <= 1.0 for token in guesses)


def test_fill_ends_early_at_an_end_token(eager_to_end):
    request = InfillRequest(prefix="a", suffix="b", max_new_tokens=16, steps=8, seed=0)
    drafts = [t[0] for t in eager_to_end.stream([request])]
    lengths = [len(draft.tokens) for draft in drafts]
    assert drafts[-1].final and drafts[-1].text == "" and drafts[-1].tokens == ()
    assert lengths[0] < 16 and lengths == sorted(lengths, reverse=True)
    assert len(drafts) < 8  # ended before the schedule ran out


def test_span_grows_until_the_cap_when_the_model_does_not_end(endless):
    drafts = [t[0] for t in endless.stream([InfillRequest(prefix="a", max_new_tokens=10, steps=5, seed=0)])]
    lengths = [len(draft.tokens) for draft in drafts]
    assert lengths[0] == 4 and 8 in lengths and lengths[-1] == 10
    assert lengths == sorted(lengths)
    assert drafts[-1].generated_tokens == 10 and all(token.accepted for token in drafts[-1].tokens)


def test_rewrite_renoises_only_the_strength_fraction(endless, project_tokenizer):
    init = "total = sum(values) / len(values)"
    init_ids = encode_text(project_tokenizer, init)
    multibyte = "naïve café — 日本語 🙂\r\n\t"
    unchanged = endless.stream([InfillRequest(prefix="x", init_text=multibyte, strength=0.0, max_new_tokens=1)])
    (only,) = list(unchanged)
    assert only[0].final and only[0].text == multibyte and only[0].forward_passes == 0
    assert "".join(token.text for token in only[0].tokens) == multibyte

    drafts = [t[0] for t in endless.stream([InfillRequest(init_text=init, strength=0.5, max_new_tokens=1, seed=4)])]
    kept = [i for i, token in enumerate(drafts[0].tokens) if token.accepted and token.confidence == 1.0]
    assert len(kept) == len(init_ids) - math.ceil(0.5 * len(init_ids))
    final = drafts[-1].tokens
    assert len(final) == len(init_ids)
    pieces = [project_tokenizer.decode([i]) for i in init_ids]
    assert all(final[i].text == pieces[i] for i in kept)


def test_three_gaps_are_filled_jointly_in_one_sequence(endless, project_tokenizer):
    segments = ("name = ", "\nage = ", "\ncity = ", "\n")
    template = TemplateRequest(segments, (3, 5, 4), steps=3, seed=5)
    with fed_inputs(endless) as seen:
        drafts = list(endless.stream_template(template))
    assert seen and all(ids.shape[0] == 1 for ids in seen)  # one sequence per pass
    assert len(seen) == len(drafts) and all(len(t) == 3 for t in drafts)
    row = seen[0][0].tolist()
    for segment in segments:  # every segment sits in the one sequence, in order
        ids = encode_text(project_tokenizer, segment)
        start = next(i for i in range(len(row)) if row[i : i + len(ids)] == ids)
        row = row[start + len(ids) :]
    assert all(draft.final for draft in drafts[-1])
    assert [len(draft.tokens) for draft in drafts[-1]] == [3, 5, 4]
    assert all(draft.text for draft in drafts[-1])


def test_template_too_long_for_the_window_falls_back_to_one_request_per_gap(tmp_path, project_tokenizer):
    folder = build_bert(tmp_path / "short", project_tokenizer, max_positions=24)
    backend = load_masked(folder)
    template = TemplateRequest(("a ", " b ", " c ", " d"), (10, 10, 10), steps=2, seed=0)
    with fed_inputs(backend) as seen:
        drafts = list(backend.stream_template(template))
    assert [ids.shape[0] for ids in seen] == [3, 3]  # the three gaps as three rows of one batch
    assert all(len(t) == 3 for t in drafts) and all(draft.final for draft in drafts[-1])
    requests = [gap_request(template, gap) for gap in range(3)]
    assert [r.prefix for r in requests] == ["a ", "a  b ", "a  b  c "]
    assert [r.suffix for r in requests] == [" b  c  d", " c  d", " d"]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_each_sampler_is_deterministic_under_a_seed(name, bert_dir):
    backend = load_masked(bert_dir, sampler=name)
    request = InfillRequest(prefix="for i in range(", suffix="):\n", max_new_tokens=8, steps=4, seed=11)

    def run():
        return [[d.text for d in t] for t in backend.stream([request])]

    first = run()
    assert first == run()
    assert first[-1][0] and len(first) <= 4


def test_different_seeds_and_alternatives_differ(backend):
    texts = {final_texts(backend, InfillRequest(prefix="import ", max_new_tokens=6, steps=3, seed=s))[0]
             for s in range(3)}
    assert len(texts) > 1
    with fed_inputs(backend) as seen:
        request = InfillRequest(prefix="import ", max_new_tokens=6, steps=3, seed=0, n_alternatives=3)
        alternatives = final_texts(backend, request)
    assert {ids.shape[0] for ids in seen} == {3} and len(set(alternatives)) > 1


def test_cancel_stops_between_passes(backend):
    cancel = CancelFlag()
    with fed_inputs(backend) as seen:
        stream = backend.stream([InfillRequest(max_new_tokens=16, steps=16, seed=0)], cancel)
        next(stream)
        cancel.set()
        with pytest.raises(Cancelled):
            next(stream)
    assert len(seen) == 1


def test_dream_style_shift_reads_the_previous_position(bert_dir, project_tokenizer):
    """With the shift, the first gap position is predicted from the last prefix position."""
    plain = load_masked(bert_dir, temperature=0.0)
    shifted = MaskedDiffusionBackend(plain.model, project_tokenizer, plain.info, temperature=0.0, shift_logits=True)
    request = InfillRequest(prefix="value = ", suffix=" + 1", max_new_tokens=1, seed=0)
    with torch.no_grad():
        ids = [project_tokenizer.bos_token_id, *encode_text(project_tokenizer, "value = ")]
        gap = len(ids)
        ids += [project_tokenizer.mask_token_id, *encode_text(project_tokenizer, " + 1")]
        logits = plain.model(input_ids=torch.tensor([ids])).logits[0]
    suppressed = plain._suppressed
    for backend, position in ((plain, gap), (shifted, gap - 1)):
        row = logits[position].clone()
        row[suppressed] = -float("inf")
        expected = project_tokenizer.decode([int(row[: len(project_tokenizer)].argmax())])
        assert final_texts(backend, request) == [expected]


def test_modernbert_checkpoint_loads_and_fills_a_padded_batch(tmp_path, project_tokenizer):
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    torch.manual_seed(0)
    tok = project_tokenizer
    config = ModernBertConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=128, local_attention=16, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id, cls_token_id=tok.bos_token_id, sep_token_id=tok.eos_token_id,
    )
    ModernBertForMaskedLM(config).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    backend = load_masked(tmp_path)
    assert backend.info.backend == "masked-diffusion" and backend.info.parameters > 0
    requests = [InfillRequest(prefix="a", max_new_tokens=4, steps=2, seed=0),
                InfillRequest(prefix="a much longer prefix here", suffix="and more", max_new_tokens=4, steps=2, seed=0)]
    *_, last = backend.stream(requests)
    assert all(draft.final for draft in last)


def test_config_detection():
    assert masked_diffusion_family({"model_type": "bert", "architectures": ["BertForMaskedLM"]}) == "masked-lm"
    assert masked_diffusion_family({"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"]}) == "masked-lm"
    assert masked_diffusion_family({"model_type": "llada", "architectures": ["LLaDAModelLM"]}) == "llada"
    assert masked_diffusion_family({"model_type": "Dream", "architectures": ["DreamModel"]}) == "dream"
    assert masked_diffusion_family({"architectures": ["LLaDAModelLM"]}) == "llada"
    assert masked_diffusion_family({"model_type": "bert", "architectures": ["BertModel"]}) is None
    assert masked_diffusion_family({"model_type": "diffusion_gemma"}) is None
    assert predicts_next_position({"model_type": "Dream"})
    assert not predicts_next_position({"model_type": "llada"})
    assert predicts_next_position({"model_type": "llada", "shift_logits": True})


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_type": "llada", "architectures": ["LLaDAModelLM"]}, "LLaDAModelLM"),
        ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "GPT2LMHeadModel"),
    ],
)
def test_refusals_are_one_line_naming_the_architecture(tmp_path, config, named):
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(EngineError) as error:
        load_masked(tmp_path)
    assert named in str(error.value) and "\n" not in str(error.value)
