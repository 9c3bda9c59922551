"""The training script on a tiny config: the objective learns, checkpoints resume, export loads."""

from __future__ import annotations

import json
import random

import pytest
import torch

from sfumato.model.training import examples, train
from sfumato.model.training.corpus import Document
from sfumato.model.api import InfillRequest
from sfumato.model.layout import Layout
from sfumato.model.loading import load_backend
from sfumato.model.tokenizer import decode_ids, load_tokenizer

TINY = ["--hidden", "32", "--layers", "2", "--heads", "2", "--head-dim", "16", "--ffn", "64",
        "--canvas", "8", "--prompt", "48", "--batch", "4", "--threads", "1"]

SOURCE = '''def add(a, b):
    """Return the sum of a and b."""
    return a + b


class Counter:
    def __init__(self):
        self.count = 0

    def increment(self, step=1):
        self.count += step
        return self.count
'''


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(train.TOKENIZER_DIR)


def test_examples_follow_the_engine_layout(tokenizer):
    layout = Layout(tokenizer)
    maker = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, prompt_length=48, canvas_length=8)
    rng = random.Random(0)
    for _ in range(200):
        example = maker.sample(rng)
        assert len(example.prompt) <= 48
        assert example.prompt[:2] == [layout.bos, layout.fim_prefix]
        assert len(example.canvas) == 8
        ids = [i for i in example.canvas if i != layout.pad]
        assert layout.mask not in example.canvas
        # padding only after the end of the middle
        assert example.canvas[len(ids):] == [layout.pad] * (8 - len(ids))
    single = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, 48, 64)
    texts = {decode_ids(tokenizer, single.sample(rng).canvas).split("<eos>")[0] for _ in range(300)}
    assert "    return a + b" in texts  # a whole line is one of the middles


def test_suffix_prefix_middle_examples_run_the_prefix_into_the_middle(tokenizer):
    layout = Layout(tokenizer, "spm")
    maker = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, 48, 64, fim_order="spm")
    rng = random.Random(0)
    for _ in range(100):
        example = maker.sample(rng)
        if example.prompt[2] != layout.fim_suffix:
            assert example.prompt[2:].count(layout.gaps[0]) == 1  # a joint fill keeps its own layout
            continue
        assert example.prompt[:2] == [layout.bos, layout.fim_prefix] and len(example.prompt) <= 48
        middle = decode_ids(tokenizer, example.canvas).split("<eos>")[0]
        prefix = decode_ids(tokenizer, example.prompt[example.prompt.index(layout.fim_middle) + 1 :])
        assert (prefix + middle) in SOURCE  # the prefix ends where the middle begins
    psm = Layout(tokenizer).fim_prompt([10, 11], [20], budget=16)
    assert layout.fim_prompt([10, 11], [20], budget=16) == [psm[0], psm[1], psm[4], 20, psm[-1], 10, 11]


def test_the_next_token_loss_can_cover_every_prompt_position_and_the_first_middle_token(tokenizer):
    args = train.parse_args(["--out", "unused", "--max-steps", "1", "--ar-positions", "0", "--self-cond", "0", *TINY])
    model = train.build_model(tokenizer, args)
    maker = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, args.prompt, args.canvas, "spm")
    batch = maker.batch(random.Random(1), args.batch)
    _, ar_loss = train.forward_losses(model, batch, args, torch.Generator().manual_seed(0), tokenizer.mask_token_id)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    hidden = model.model.encoder(input_ids=ids, attention_mask=mask, position_ids=torch.arange(ids.shape[1])[None]).last_hidden_state
    logits = model.lm_head(hidden).float()
    cap = model.final_logit_softcapping
    logits = torch.tanh(logits / cap) * cap if cap else logits
    following = torch.cat([ids[:, 1:], batch["canvas"][:, :1]], dim=1)  # the last prompt token predicts the middle's first
    expected = torch.nn.functional.cross_entropy(logits[mask], following[mask])
    torch.testing.assert_close(ar_loss, expected)


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_a_few_steps_reduce_the_loss(tokenizer, optimizer):
    args = train.parse_args(["--out", "unused", "--max-steps", "1", "--lr", "3e-3", "--optimizer", optimizer, *TINY])
    model = train.build_model(tokenizer, args)
    maker = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, args.prompt, args.canvas)
    rng = random.Random(0)
    batch = maker.batch(rng, args.batch)
    optimizers = train.make_optimizers(model, args)
    assert len(optimizers) == (2 if optimizer == "muon" else 1)
    losses = []
    for step in range(25):
        generator = torch.Generator().manual_seed(step % 3)
        canvas_loss, ar_loss = train.forward_losses(model, batch, args, generator, tokenizer.mask_token_id)
        loss = canvas_loss + args.ar_weight * ar_loss
        assert torch.isfinite(loss)
        for each in optimizers:
            each.zero_grad()
        loss.backward()
        for each in optimizers:
            each.step()
        losses.append(loss.item())
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3


def test_checkpoints_resume_and_export(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE.replace("a + b", f"a + b + {i}")) for i in range(5)]
    monkeypatch.setattr(examples, "train_documents", lambda sources=None: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda sources=None: documents[:1])
    out = tmp_path / "run"
    train.main(["--out", str(out), "--max-steps", "3", "--eval-every", "2", *TINY])
    assert torch.load(out / "ckpt.pt", weights_only=False)["step"] == 3
    train.main(["--out", str(out), "--max-steps", "5", "--eval-every", "2", *TINY])
    state = torch.load(out / "ckpt.pt", weights_only=False)
    assert state["step"] == 5
    steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert steps == [2, 3, 4, 5]  # the resumed run continued, it did not start over

    folder = tmp_path / "model"
    train.main(["--out", str(out), "--export", str(folder)])
    assert json.loads((folder / "sfumato.json").read_text())["canvas_noise"] == "mask"
    backend = load_backend(str(folder), device="cpu")
    exported = dict(backend.model.named_parameters())
    for name, value in state["model"].items():
        if name in exported:
            torch.testing.assert_close(exported[name].float(), value.float(), atol=1e-2, rtol=1e-2)
    drafts = list(backend.stream([InfillRequest(prefix="def add(a, b):\n", suffix="\n", max_new_tokens=8, seed=0)]))
    assert drafts[-1][0].final
    assert json.loads((folder / "sfumato.json").read_text())["joint_gaps"] is True
    train.main(["--out", str(out), "--export", str(folder), "--no-joint-gaps"])
    assert json.loads((folder / "sfumato.json").read_text())["joint_gaps"] is False


def test_a_muon_suffix_prefix_middle_run_resumes_and_exports_its_prompt_order(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE) for i in range(3)]
    monkeypatch.setattr(examples, "train_documents", lambda sources=None: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda sources=None: documents[:1])
    out, folder = tmp_path / "run", tmp_path / "model"
    flags = ["--eval-every", "2", "--optimizer", "muon", "--fim-order", "spm", "--ar-positions", "0", *TINY]
    train.main(["--out", str(out), "--max-steps", "2", *flags])
    train.main(["--out", str(out), "--max-steps", "3", *flags[:2], *TINY])  # resumes with the run's own choices
    state = torch.load(out / "ckpt.pt", weights_only=False)
    assert state["step"] == 3 and len(state["optimizer"]) == 2 and state["args"]["optimizer"] == "muon"
    train.main(["--out", str(out), "--export", str(folder)])
    assert json.loads((folder / "sfumato.json").read_text())["fim_order"] == "spm"
    backend = load_backend(str(folder), device="cpu")
    prompt = backend.prompt_ids(InfillRequest(prefix="def add(a, b):\n", suffix="\n"))
    assert prompt[2] == backend.layout.fim_suffix and decode_ids(tokenizer, prompt).endswith("def add(a, b):\n")


def test_an_export_can_average_the_run_with_earlier_copies_of_its_checkpoint(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE) for i in range(3)]
    monkeypatch.setattr(examples, "train_documents", lambda sources=None: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda sources=None: documents[:1])
    out = tmp_path / "run"
    train.main(["--out", str(out), "--max-steps", "2", "--eval-every", "2", *TINY])
    earlier = tmp_path / "earlier.pt"
    earlier.write_bytes((out / "ckpt.pt").read_bytes())
    train.main(["--out", str(out), "--max-steps", "4", "--eval-every", "2", *TINY])
    first = torch.load(earlier, weights_only=False)["model"]
    last = torch.load(out / "ckpt.pt", weights_only=False)["model"]
    folder = tmp_path / "model"
    train.main(["--out", str(out), "--export", str(folder), "--export-dtype", "fp32", "--average-with", str(earlier)])
    exported = dict(load_backend(str(folder), device="cpu").model.named_parameters())
    name = next(n for n in exported if n in last and not torch.equal(first[n], last[n]))
    torch.testing.assert_close(exported[name].float(), (first[name].float() + last[name].float()) / 2)


def test_worker_processes_make_the_batches(tmp_path, monkeypatch, tokenizer):
    """The GPU path: examples made in worker processes, each with a stream of its own."""
    documents = [Document("stdlib", f"m{i}.py", SOURCE.replace("a + b", f"a + b + {i}")) for i in range(5)]
    maker = examples.ExampleMaker(documents, tokenizer, 48, 8)
    stream = examples.batch_stream(maker, 4, random.Random(0), workers=2, seed="0:0")
    batches = [next(stream) for _ in range(4)]
    assert all(b["canvas"].shape == (4, 8) and b["input_ids"].shape[0] == 4 for b in batches)
    assert not torch.equal(batches[0]["canvas"], batches[1]["canvas"])  # two workers, two streams

    monkeypatch.setattr(examples, "train_documents", lambda sources=None: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda sources=None: documents[:1])
    out = tmp_path / "run"
    train.main(["--out", str(out), "--max-steps", "2", "--eval-every", "2", "--workers", "1", *TINY])
    assert torch.load(out / "ckpt.pt", weights_only=False)["step"] == 2


def test_a_deeper_run_starts_from_an_earlier_one_computing_the_same(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE.replace("a + b", f"a + b + {i}")) for i in range(5)]
    monkeypatch.setattr(examples, "train_documents", lambda sources=None: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda sources=None: documents[:1])
    train.main(["--out", str(tmp_path / "shallow"), "--max-steps", "2", *TINY])
    source = torch.load(tmp_path / "shallow" / "ckpt.pt", weights_only=False)
    deep_tiny = [*TINY[:2], "--layers", "3", *TINY[4:]]
    assert TINY[2:4] == ["--layers", "2"]
    args = train.parse_args(["--out", "unused", "--max-steps", "1", "--self-cond", "0", *deep_tiny])
    shallow_args = train.parse_args(["--out", "unused", "--max-steps", "1", "--self-cond", "0", *TINY])
    shallow, deep = train.build_model(tokenizer, shallow_args), train.build_model(tokenizer, args)
    shallow.load_state_dict(source["model"])
    deep.load_state_dict(train.deepened(source, args))
    maker = examples.ExampleMaker(documents, tokenizer, args.prompt, args.canvas)
    batch = maker.batch(random.Random(3), 4)
    losses = [train.forward_losses(m, batch, args, torch.Generator().manual_seed(5), tokenizer.mask_token_id) for m in (shallow, deep)]
    torch.testing.assert_close(losses[0], losses[1])  # the added layer starts as the identity
    sum(losses[1]).backward()
    gate = deep.model.decoder.layers[1].post_attention_layernorm.weight  # layers 0 and 1 both copy layer 0
    assert torch.all(gate == 0) and gate.grad.abs().sum() > 0  # shut, but training can open it

    with pytest.raises(SystemExit):
        train.deepened(source, train.parse_args(["--out", "unused", "--max-steps", "1", *deep_tiny[:-2], "--hidden", "48"]))

    # from the exported folder instead of the checkpoint (the shipped model, when checkpoints are gone)
    train.main(["--out", str(tmp_path / "shallow"), "--export", str(tmp_path / "exported"), "--export-dtype", "fp32"])
    again = train.build_model(tokenizer, args)
    again.load_state_dict(train.deepened(train.run_weights(tmp_path / "exported"), args))
    again_loss = train.forward_losses(again, batch, args, torch.Generator().manual_seed(5), tokenizer.mask_token_id)
    torch.testing.assert_close(again_loss, losses[0])


def test_the_corpus_leaves_out_packages_whose_licence_metadata_is_copyleft():
    from sfumato.model.training.corpus import restricted_packages

    restricted = restricted_packages()
    assert {"PySide6", "shiboken6", "tqdm", "hypothesis"} <= restricted  # LGPL/GPL, MPL, MPL
    assert not {"numpy", "transformers", "torch", "pygments"} & restricted  # BSD, Apache, BSD, BSD


def test_tuning_takes_the_fastest_sampler_within_two_points_of_the_best_exact_match():
    from sfumato.model.training.evaluate import choose_sampler

    sweep = [
        {"entropy_bound": 0.1, "exact_match": 0.30, "char_similarity": 0.80, "tokens_per_pass": 1.5},
        {"entropy_bound": 1.0, "exact_match": 0.285, "char_similarity": 0.795, "tokens_per_pass": 4.0},
        {"entropy_bound": 3.0, "exact_match": 0.25, "char_similarity": 0.78, "tokens_per_pass": 7.0},
    ]
    assert choose_sampler(sweep)["entropy_bound"] == 1.0
    sweep[1]["char_similarity"] = 0.70  # as exact, but its misses are further off: not good enough
    assert choose_sampler(sweep)["entropy_bound"] == 0.1
    counted = [  # exact match as a count out of 100 tasks: exactly 2 points is within the slack
        {"entropy_bound": 0.1, "exact_match": 5 / 100, "char_similarity": 0.43, "tokens_per_pass": 1.7},
        {"entropy_bound": 0.3, "exact_match": 3 / 100, "char_similarity": 0.43, "tokens_per_pass": 2.1},
    ]
    assert choose_sampler(counted)["entropy_bound"] == 0.3
