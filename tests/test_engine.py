"""The DiffusionGemma backend on a tiny random model: drafts, EOS, canvases, rewrite, seeds, cancel."""

import pytest
import torch

from sfumato.model.api import CancelFlag, Cancelled, InfillRequest, TemplateRequest
from sfumato.model.loading import load_backend


def run(backend, *requests):
    drafts = list(backend.stream(list(requests)))
    return drafts, drafts[-1]


def steer(monkeypatch, backend, boost_from=None, ban=()):
    """Make the random model emit EOS from canvas position ``boost_from`` on, or never emit ``ban``."""
    original = backend.model.forward
    eos = backend.tokenizer.eos_token_id

    def forward(*args, **kwargs):
        out = original(*args, **kwargs)
        if boost_from is not None:
            out.logits[:, boost_from:, eos] = 1e3
        for token_id in ban:
            out.logits[..., token_id] = -1e3
        return out

    monkeypatch.setattr(backend.model, "forward", forward)


def test_request_streams_drafts_then_a_final_text(tiny_backend):
    drafts, last = run(tiny_backend, InfillRequest(prefix="def f(x):\n    ", suffix="\n", max_new_tokens=12, seed=0))
    assert len(drafts) >= 2
    assert all(not d.final for (d,) in drafts[:-1]) and last[0].final
    draft = last[0]
    assert draft.text and draft.generated_tokens <= 12
    assert "".join(t.text for t in draft.tokens) == draft.text
    steps = [d.batch_passes for (d,) in drafts]
    assert steps == sorted(steps)
    # intermediate drafts carry per-token confidence and accepted flags
    middle = drafts[0][0]
    assert all(0.0 <= t.confidence <= 1.0 for t in middle.tokens)
    assert any(not t.accepted for t in middle.tokens)


def test_eos_closes_a_short_middle(monkeypatch, tiny_backend):
    steer(monkeypatch, tiny_backend, boost_from=3, ban=[tiny_backend.tokenizer.pad_token_id])
    _, last = run(tiny_backend, InfillRequest(prefix="x = ", suffix="\n", max_new_tokens=40, seed=1))
    assert last[0].generated_tokens == 3  # everything from the EOS on is dropped


def test_long_middle_continues_canvas_after_canvas(monkeypatch, tiny_backend):
    tok = tiny_backend.tokenizer
    steer(monkeypatch, tiny_backend, ban=[tok.eos_token_id, tok.pad_token_id])
    assert tiny_backend.canvas_length == 16
    _, last = run(tiny_backend, InfillRequest(prefix="a", max_new_tokens=40, seed=2))
    assert last[0].generated_tokens == 40  # three canvases, cut at the budget


def test_strength_zero_returns_the_text_exactly(tiny_backend):
    text = "total = price * (1 + tax)  # 中文 😀"
    _, last = run(tiny_backend, InfillRequest(prefix="x\n", suffix="\n", init_text=text, strength=0.0, seed=3))
    assert last[0].text == text


def test_partial_strength_keeps_the_rest_of_the_text(monkeypatch, tiny_backend):
    tok = tiny_backend.tokenizer
    steer(monkeypatch, tiny_backend, ban=[tok.eos_token_id, tok.pad_token_id])
    text = "one two three four five six seven eight"
    ids = tok.encode(text, add_special_tokens=False, split_special_tokens=True)
    _, last = run(tiny_backend, InfillRequest(init_text=text, strength=0.5, max_new_tokens=len(ids), seed=4))
    pieces = [token.text for token in last[0].candidates[0].tokens]  # canvas order, one per token
    kept = sum(piece == tok.decode([token_id]) for piece, token_id in zip(pieces, ids))
    assert kept >= len(ids) // 2 and last[0].text != text


def test_same_seed_same_output_and_seeds_differ(tiny_backend):
    request = InfillRequest(prefix="import ", max_new_tokens=10, seed=7)
    _, first = run(tiny_backend, request)
    _, again = run(tiny_backend, request)
    _, other = run(tiny_backend, InfillRequest(prefix="import ", max_new_tokens=10, seed=8))
    assert first[0].text == again[0].text
    assert first[0].text != other[0].text


def test_alternatives_are_one_batch_and_differ(tiny_backend):
    drafts, last = run(tiny_backend, InfillRequest(prefix="class ", max_new_tokens=10, seed=5, n_alternatives=3))
    assert all(len(d.candidates) == 3 for (d,) in drafts)
    assert len({c.text for c in last[0].candidates}) > 1


def test_batched_requests_get_one_draft_each(tiny_backend):
    requests = [InfillRequest(prefix="a", max_new_tokens=5, seed=1), InfillRequest(prefix="bbbb bbbb", max_new_tokens=20, seed=1)]
    drafts = list(tiny_backend.stream(requests))
    assert all(len(pair) == 2 for pair in drafts)
    assert drafts[-1][0].generated_tokens <= 5 and drafts[-1][1].generated_tokens <= 20


def test_cancel_stops_within_one_pass_and_leaves_no_state(tiny_backend):
    request = InfillRequest(prefix="def ", max_new_tokens=16, seed=11, steps=8)
    _, reference = run(tiny_backend, request)
    cancel = CancelFlag()
    stream = tiny_backend.stream([request], cancel)
    next(stream)
    cancel.set()
    with pytest.raises(Cancelled):
        next(stream)
    _, after = run(tiny_backend, request)
    assert after[0].text == reference[0].text


def test_template_gives_one_draft_per_gap(tiny_backend):
    template = TemplateRequest(("a = ", "\nb = ", "\nc = ", "\n"), (3, 4, 5), seed=1)
    last = list(tiny_backend.stream_template(template))[-1]
    assert len(last) == 3 and all(d.final for d in last)
    assert [d.generated_tokens <= n for d, n in zip(last, (3, 4, 5))] == [True] * 3


def test_uniform_noise_model_also_decodes(tmp_path, project_tokenizer):
    from conftest import build_tiny_model

    folder = build_tiny_model(tmp_path / "uniform", project_tokenizer, noise="uniform")
    backend = load_backend(str(folder), device="cpu")
    _, last = run(backend, InfillRequest(prefix="x", max_new_tokens=8, seed=0))
    assert last[0].final and last[0].generated_tokens <= 8


def test_model_round_trips_through_save_and_load(tmp_path, tiny_backend):
    tiny_backend.model.save_pretrained(tmp_path)
    tiny_backend.tokenizer.save_pretrained(tmp_path)
    (tmp_path / "sfumato.json").write_text('{"prompt_layout": "fim", "canvas_noise": "mask", "context_tokens": 512}')
    again = load_backend(str(tmp_path), device="cpu")
    for a, b in zip(tiny_backend.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    assert again.model.generation_config.max_denoising_steps == tiny_backend.model.generation_config.max_denoising_steps
    request = InfillRequest(prefix="for i in ", max_new_tokens=8, seed=9)
    assert run(again, request)[1][0].text == run(tiny_backend, request)[1][0].text


def test_a_tiny_sampler_bound_accepts_one_token_per_pass(monkeypatch, tiny_backend):
    tok = tiny_backend.tokenizer
    steer(monkeypatch, tiny_backend, ban=[tok.eos_token_id, tok.pad_token_id])
    drafts, last = run(tiny_backend, InfillRequest(prefix="a", max_new_tokens=16, steps=16, sampler_bound=1e-9, seed=1))
    settled = [sum(t.accepted for t in d.tokens) for (d,) in drafts[:-1]]
    assert settled == list(range(1, len(settled) + 1))
    assert last[0].generated_tokens == 16 and last[0].forward_passes == 16


def test_checkpoints_without_fim_tokens_get_a_chat_prompt(tmp_path, project_tokenizer):
    """Released instruction-tuned checkpoints: no sfumato.json, a chat template, the user's instruction."""
    from conftest import build_tiny_model

    folder = build_tiny_model(tmp_path / "chat", project_tokenizer, noise="uniform")
    (folder / "sfumato.json").unlink()
    tokenizer = load_backend(str(folder), device="cpu").tokenizer
    tokenizer.chat_template = (
        "{% for m in messages %}<start>{{ m['role'] }}\n{{ m['content'] }}<end>\n{% endfor %}"
        "{% if add_generation_prompt %}<start>model\n{% endif %}"
    )
    tokenizer.save_pretrained(folder)
    backend = load_backend(str(folder), device="cpu")
    assert backend.info.instruction_tuned
    request = InfillRequest(
        prefix="def area(r):\n", suffix="\n\nprint(area(2))", init_text="    return 3.14 * r * r",
        instruction="use math.pi", max_new_tokens=8, seed=0,
    )
    prompt = backend.tokenizer.decode(backend.prompt_ids(request))
    for part in ("def area(r):\n", "print(area(2))", "return 3.14 * r * r", "use math.pi", "<start>model\n"):
        assert part in prompt
    _, last = run(backend, request)
    assert last[0].final

    document = "".join(f"total_{i} = measure({i})\n" for i in range(2000))
    before = backend.prompt_ids(InfillRequest(prefix=document, suffix="\n"))
    after = backend.prompt_ids(InfillRequest(prefix=document + "result = ", suffix="\n"))
    assert before[: len(before) // 2] == after[: len(before) // 2]  # typing keeps the prompt's start


def test_joint_template_fill_reads_each_gap_between_its_sentinels(monkeypatch, tmp_path, project_tokenizer):
    from conftest import build_tiny_model

    from sfumato.model.layout import Layout

    folder = build_tiny_model(tmp_path / "joint", project_tokenizer)
    (folder / "sfumato.json").write_text('{"prompt_layout": "fim", "canvas_noise": "mask", "joint_gaps": true}')
    backend = load_backend(str(folder), device="cpu")
    gaps = Layout(backend.tokenizer).gaps
    word = lambda text: backend.tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    script = [gaps[0], *word("alpha"), gaps[1], *word(" beta"), backend.tokenizer.eos_token_id]
    original = backend.model.forward

    def forward(*args, **kwargs):
        out = original(*args, **kwargs)
        for position, token_id in enumerate(script):
            out.logits[:, position, token_id] = 1e3
        return out

    monkeypatch.setattr(backend.model, "forward", forward)
    drafts = list(backend.stream_template(TemplateRequest(("x = ", "\ny =", "\n"), (4, 4), seed=0)))
    assert all(len(pair) == 2 for pair in drafts)
    assert [d.text for d in drafts[-1]] == ["alpha", " beta"]

    too_long = TemplateRequest(("x = ", "\ny =", "\n"), (10, 10), seed=0)  # 23 tokens > canvas of 16
    last = list(backend.stream_template(too_long))[-1]
    assert len(last) == 2 and all(d.final for d in last)


def test_interleaved_and_abandoned_streams_do_not_leak_inference_mode(tiny_backend):
    first = tiny_backend.stream([InfillRequest(prefix="a", max_new_tokens=8, seed=1)])
    second = tiny_backend.stream([InfillRequest(prefix="b", max_new_tokens=8, seed=2)])
    next(first)
    next(second)
    assert not torch.is_inference_mode_enabled()
    first.close()  # abandoned mid-run, as a cancelled editor session does
    assert list(second)[-1][0].final
    assert not torch.is_inference_mode_enabled()


def test_joint_fill_never_puts_a_sentinel_into_a_gap():
    from sfumato.model.diffusion_gemma import _RowState, _split_gaps

    g0, g1, a, b, c = 100, 101, 5, 6, 7
    state = _RowState([a, g0, b, g0, c, g1, a], [True] * 7, [1.0] * 7, 1, 1)
    parts = _split_gaps(state, [g0, g1])
    assert [p.ids for p in parts] == [[b], [a]]  # the repeated <gap_0> ends gap 0; c belongs nowhere
    assert [p.ids for p in _split_gaps(_RowState([g0, a, b], [True] * 3, [1.0] * 3, 1, 1), [g0, g1])] == [[a, b], []]


def test_sampled_tokens_follow_the_softmax_and_never_take_a_suppressed_token():
    import torch

    from sfumato.model.diffusion_gemma_library import distribution, sample_tokens

    torch.manual_seed(0)
    logits = torch.tensor([0.0, 1.0, 2.0, float("-inf"), -1.0]).expand(4, 5000, 5)
    counts = torch.bincount(sample_tokens(distribution(logits)[0]).flatten(), minlength=5).double() / logits[..., 0].numel()
    torch.testing.assert_close(counts, torch.softmax(logits[0, 0].double(), dim=-1), atol=0.01, rtol=0)
    assert counts[3] == 0
    pinned = torch.full((2, 3, 5), -1e4)
    pinned[..., 4] = 1e4
    assert sample_tokens(distribution(pinned)[0]).eq(4).all()


def test_entropy_acceptance_and_early_stop_from_one_distribution_match_the_librarys():
    """The engine computes the distribution once a pass; the library's sampler and stop each
    recompute it. Same inputs, same entropies, accepted positions and stop decisions."""
    import torch
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
        EntropyBoundSampler,
        EntropyBoundSamplerConfig,
        StableAndConfidentStoppingCriteria,
    )

    from sfumato.model.diffusion_gemma_library import StableAndConfident, accept_lowest_entropy, distribution

    torch.manual_seed(0)
    B, L, V = 3, 16, 50
    ours = StableAndConfident(2, 1.5)
    theirs = StableAndConfidentStoppingCriteria(stability_threshold=2, confidence_threshold=1.5)
    argmax = torch.randint(V, (B, L))
    for step in range(6):
        logits = torch.randn(B, L, V) * (1 + step)  # sharper each pass, so rows become confident
        logits[..., 7] = float("-inf")  # a suppressed token
        probs, entropy = distribution(logits)
        torch.testing.assert_close(entropy, torch.distributions.Categorical(logits=logits).entropy())
        torch.testing.assert_close(probs, torch.softmax(logits, dim=-1))
        current, denoised = torch.randint(V, (B, L)), torch.randint(V, (B, L))
        for bound in (1e-6, 0.5, 3.0, 100.0):
            library = EntropyBoundSampler(EntropyBoundSamplerConfig(entropy_bound=bound), L, V, 10)
            engine = EntropyBoundSampler(EntropyBoundSamplerConfig(entropy_bound=bound), L, V, 10)
            expected = library.accept_canvas(current, denoised, logits, 5)
            assert torch.equal(accept_lowest_entropy(engine, current, denoised, entropy), expected)
            assert torch.equal(engine.accepted_token_mask, library.accepted_token_mask)
        if step % 2 == 0:
            argmax = argmax.clone()
            argmax[step % B, step] += 1  # one row's argmax changes: it is not stable for a while
        assert torch.equal(ours(argmax, entropy), theirs(argmax, logits))


def test_a_row_that_stops_before_the_others_keeps_its_text_and_never_takes_mask_tokens(monkeypatch, tiny_backend):
    import torch

    class StopFirstRow:
        def __call__(self, argmax_canvas, entropy):
            return torch.arange(argmax_canvas.shape[0]) == 0

        def reset(self):
            pass

    from sfumato.model import diffusion_gemma_library

    monkeypatch.setattr(diffusion_gemma_library, "early_stop", lambda config: StopFirstRow())
    requests = [InfillRequest(prefix=f"value_{i} = ", max_new_tokens=12, seed=1, sampler_bound=1e-6) for i in range(3)]
    mask = tiny_backend.tokenizer.mask_token
    drafts = list(tiny_backend.stream(requests))
    assert len(drafts) > 2  # the other rows went on after the first stopped
    assert all(mask not in draft.text for step in drafts for draft in step)
    assert drafts[-1][0].text == drafts[0][0].text  # the stopped row's text is what it was when it stopped


def test_a_settled_canvas_takes_no_confirming_pass(monkeypatch, tiny_backend):
    steer(monkeypatch, tiny_backend, boost_from=3)  # positions 3.. are a sure EOS; 0-2 stay uncertain
    _, last = run(tiny_backend, InfillRequest(prefix="x = ", max_new_tokens=12, seed=2, sampler_bound=100.0))
    assert last[0].forward_passes == 1  # everything accepted in one pass: nothing left to confirm
    assert len(last[0].candidates[0].tokens) == 3
