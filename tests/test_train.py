"""The training script on a tiny config: the objective learns, checkpoints resume, export loads."""

from __future__ import annotations

import json
import random

import pytest
import torch

from model.training import examples, train
from model.training.corpus import Document
from model.api import InfillRequest
from model.layout import Layout
from model.loading import load_backend
from model.tokenizer import decode_ids, load_tokenizer

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


def test_a_few_steps_reduce_the_loss(tokenizer):
    args = train.parse_args(["--out", "unused", "--max-steps", "1", *TINY])
    model = train.build_model(tokenizer, args)
    maker = examples.ExampleMaker([Document("stdlib", "x.py", SOURCE)], tokenizer, args.prompt, args.canvas)
    rng = random.Random(0)
    batch = maker.batch(rng, args.batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(25):
        generator = torch.Generator().manual_seed(step % 3)
        canvas_loss, ar_loss = train.forward_losses(model, batch, args, generator, tokenizer.mask_token_id)
        loss = canvas_loss + args.ar_weight * ar_loss
        assert torch.isfinite(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3


def test_checkpoints_resume_and_export(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE.replace("a + b", f"a + b + {i}")) for i in range(5)]
    monkeypatch.setattr(examples, "train_documents", lambda: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda: documents[:1])
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


def test_an_export_can_average_the_run_with_earlier_copies_of_its_checkpoint(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE) for i in range(3)]
    monkeypatch.setattr(examples, "train_documents", lambda: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda: documents[:1])
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

    monkeypatch.setattr(examples, "train_documents", lambda: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda: documents[:1])
    out = tmp_path / "run"
    train.main(["--out", str(out), "--max-steps", "2", "--eval-every", "2", "--workers", "1", *TINY])
    assert torch.load(out / "ckpt.pt", weights_only=False)["step"] == 2


def test_a_deeper_run_starts_from_an_earlier_one_computing_the_same(tmp_path, monkeypatch, tokenizer):
    documents = [Document("stdlib", f"m{i}.py", SOURCE.replace("a + b", f"a + b + {i}")) for i in range(5)]
    monkeypatch.setattr(examples, "train_documents", lambda: documents)
    monkeypatch.setattr(examples, "dev_documents", lambda: documents[:1])
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
    from model.training.corpus import restricted_packages

    restricted = restricted_packages()
    assert {"PySide6", "shiboken6", "tqdm", "hypothesis"} <= restricted  # LGPL/GPL, MPL, MPL
    assert not {"numpy", "transformers", "torch", "pygments"} & restricted  # BSD, Apache, BSD, BSD
