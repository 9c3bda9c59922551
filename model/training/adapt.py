"""Adapt a pretrained base (SmolLM2-135M, or Gemma 3 270M with --base) to bidirectional block denoising with LoRA.

    python -m sfumato.model.training.adapt --out runs/adapt            # resumes from runs/adapt/last
    python -m sfumato.model.training.adapt --out runs/adapt --threads 2 --minutes 60
    python -m sfumato.model.training.adapt --export runs/adapt/last resources/models/sfumato-lm   # ship a checkpoint (fp16)

Each example is one infill as the engine lays it out (``sfumato.model.training.examples``): a
suffix, a prefix and a canvas holding the middle, masked as the engine's passes find it, or a fix.
Its loss (``sfumato.model.training.batches``) adds half a next-token loss on the end of the prompt,
which keeps the causal reading the base had, and optionally (``--distill W``) W times the KL
divergence from the base's own next-token distribution at the masked canvas positions: soft targets
that carry what the base knows beyond the one right token. On a GPU, ``--batch`` examples go
through at once and ``--workers`` processes make them, e.g.

    python -m sfumato.model.training.adapt --out runs/gpu --batch 128 --accumulate 1 --workers 14

Only LoRA weights train (``peft``; ``--rank`` widens a start adapter of a lower rank, the same model
with more to train); the checkpoint is a peft adapter folder, written atomically
with the optimiser state, so a killed run resumes where it stopped. Without a checkpoint of its
own, a run starts from the shipped adapter when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from sfumato.model.lm_base import BASES, SMOLLM2, TRAINED_PREFIX
from sfumato.model.project_context import document_header
from sfumato.model.training import other_languages
from sfumato.model.training.batches import batch_loss, collate
from sfumato.model.training.corpus import missing_documentation
from sfumato.model.training.examples import MAX_PREFIX, Vocabulary, make_example, self_example
from sfumato.model.training.lm_corpus import DocumentSampler

LORA_RANK = 16
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PROSE_SHARE = 0.3  # of examples: documentation (by units alone it would be ~6%)
SELF_SHARE = 0.5  # of examples, with --self-targets: the engine's own result to be written in fewer passes
POOL = 8  # batches' worth of examples drawn at a time and sorted by length


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/adapt"))
    p.add_argument("--start", type=Path, default=None, help="adapter folder to start from when --out has none")
    p.add_argument("--base", choices=sorted(BASES), default=None,
                   help="the pretrained base of a new run (a checkpoint's own base otherwise; SmolLM2 by default)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--minutes", type=float, default=600.0)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--anneal", action="store_true",
                   help="the learning rate falls linearly to a tenth over this run's minutes (a run that ends the training)")
    p.add_argument("--accumulate", type=int, default=1, help="batches per optimizer step")
    # 8 examples a step either way; one forward of 8 ran 230-249 tokens/s against 152 for 8 of one
    # (one thread, the shipped adapter, session 54): products of more rows use the cores better
    p.add_argument("--batch", type=int, default=8, help="examples per forward pass (on a GPU: 64 or more)")
    p.add_argument("--workers", type=int, default=0, help="processes that make examples (0: this one)")
    p.add_argument("--snapshot-minutes", type=float, default=0.0,
                   help="also export the adapter every so many minutes, to out/snapshot-STEP (0: never)")
    p.add_argument("--save-every", type=int, default=25, help="optimizer steps between checkpoints")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rank", type=int, default=LORA_RANK,
                   help="LoRA rank; a start adapter of a lower rank is widened to it (the same model, more to train)")
    p.add_argument("--distill", type=float, default=0.0,
                   help="weight of the KL divergence from the base's next-token distribution (0: off)")
    p.add_argument("--causal", type=float, default=0.0,
                   help="share of infill examples that mask nothing and take the loss at every position, read left to right")
    p.add_argument("--prefix", type=int, default=MAX_PREFIX,
                   help="the most tokens before the middle an example shows (exported with the adapter: the engine reads as many)")
    p.add_argument("--suffix-led", type=float, default=0.0,
                   help="share of examples whose middle is a line holding a name that only the suffix shows")
    p.add_argument("--prose", type=float, default=PROSE_SHARE, help="share of examples drawn from documentation")
    p.add_argument("--other", type=float, default=0.0,
                   help="share of examples drawn from JavaScript, shell and C of training packages (other_languages)")
    p.add_argument("--unwrap", type=float, default=0.0,
                   help="share of documentation files whose wrapped paragraphs are joined into one line each")
    p.add_argument("--self-targets", type=Path, default=None,
                   help="JSONL of the engine's own results (sfumato.model.training.self_targets): SELF_SHARE of examples")
    p.add_argument("--export", nargs=2, type=Path, metavar=("CHECKPOINT", "FOLDER"),
                   help="write CHECKPOINT's adapter to FOLDER in float16 (what git holds) and stop")
    return p.parse_args(argv)


def lora_config(rank: int):
    from peft import LoraConfig

    return LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=LORA_TARGETS, lora_dropout=0.0)


def adapter_rank(folder: Path) -> int:
    return json.loads((folder / "adapter_config.json").read_text())["r"]


def widen(model, adapter: Path) -> None:
    """Copy a trained adapter of a lower rank into the leading ranks of ``model``'s fresh LoRA.
    The fresh B columns are zero, so the widened model computes exactly what the adapter did and
    the extra ranks only add capacity from there (the update is B·A times each adapter's scaling)."""
    from safetensors.torch import load_file

    old = load_file(adapter / "adapter_model.safetensors")
    config = json.loads((adapter / "adapter_config.json").read_text())
    old_scaling = config["lora_alpha"] / config["r"]
    copied = 0
    with torch.no_grad():
        for name, module in model.named_modules():
            if f"{name}.lora_A.weight" not in old or not hasattr(module, "lora_A"):
                continue
            a, b = old[f"{name}.lora_A.weight"], old[f"{name}.lora_B.weight"]
            rank = a.shape[0]
            module.lora_A["default"].weight[:rank] = a
            module.lora_B["default"].weight.zero_()
            module.lora_B["default"].weight[:, :rank] = b * (old_scaling / module.scaling["default"])
            copied += 2
    if copied != len(old):
        raise ValueError(f"{adapter}: {len(old) - copied} of its {len(old)} tensors fit no module of the model")


def export(checkpoint: Path, folder: Path) -> None:
    """The adapter's config and its weights in float16: no optimiser state, half the bytes."""
    from safetensors.torch import load_file, save_file

    folder.mkdir(parents=True, exist_ok=True)
    weights = load_file(checkpoint / "adapter_model.safetensors")
    save_file({name: tensor.half().contiguous() for name, tensor in weights.items()}, folder / "adapter_model.safetensors")
    shutil.copy(checkpoint / "adapter_config.json", folder / "adapter_config.json")
    state = json.loads((checkpoint / "state.json").read_text())
    kept = {k: state[k] for k in ("step", "examples", "tokens")} | {"base": state.get("base", SMOLLM2.name)}
    if state.get("prefix", TRAINED_PREFIX) != TRAINED_PREFIX:  # the engine reads as many (lm_base.trained_prefix)
        kept["prefix"] = state["prefix"]
    (folder / "training.json").write_text(json.dumps(kept, indent=1))


def read_targets(path: Path | None) -> list[dict]:
    """The engine's own results (``self_targets``), skipping a line a running generator has half written."""
    records = []
    if path is None:
        return records
    with path.open() as lines:
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


class ExampleStream(IterableDataset):
    """Endless collated batches of ``args.batch`` examples; each data-loading worker draws its own.
    Examples are drawn ``POOL`` batches at a time and sorted by length, so a batch pads little."""

    def __init__(self, tokenizer, vocab: Vocabulary, args, seed: str):
        self.sampler = DocumentSampler("train", tokenizer, random.Random(), prose_share=args.prose,
                                       unwrap_share=args.unwrap, other_share=args.other)  # its file lists, found once and shared
        self.vocab, self.args, self.seed = vocab, args, seed

    def __iter__(self):
        worker = get_worker_info()
        rng = random.Random(f"{self.seed}:{worker.id if worker else 0}")
        self.sampler.rng = rng
        args, sampler, size = self.args, self.sampler, self.args.batch
        own = read_targets(args.self_targets)
        while True:
            pool = []
            while len(pool) < size * (POOL if size > 1 else 1):
                if own and rng.random() < SELF_SHARE:
                    example = self_example(rng.choice(own), rng, self.vocab)
                else:
                    window = sampler.next_window()
                    header = (self.vocab.encode(document_header(window.path.name))
                              if other_languages.is_other_language(window.unit) else [])
                    example = make_example(window.tokens, rng, self.vocab, window.at_start,
                                           lambda prefix, suffix: sampler.snippets(window, prefix, suffix),
                                           args.causal, args.prefix, args.suffix_led, header)
                if example is not None:
                    pool.append(example)
            pool.sort(key=lambda example: len(example.ids))
            groups = [pool[i : i + size] for i in range(0, len(pool), size)]
            rng.shuffle(groups)
            for group in groups:
                yield collate(group, self.vocab.special, distill=bool(args.distill))
            own = read_targets(args.self_targets)  # a generator may still be adding to them


def mixed_precision(device: str) -> bool:
    """Whether a step's products run in bfloat16 (autocast; the weights and their updates stay
    float32): on CUDA, and on a CPU that multiplies bfloat16 faster (``lm_bfloat16``; measured
    here with one thread, a step's CPU time 6.9 -> 5.2 s for the same 646 tokens, the losses within 1%)."""
    from sfumato.model.lm_bfloat16 import bfloat16_pays

    return device == "cuda" or bfloat16_pays()


def save_checkpoint(model, optimizer, state: dict, out: Path) -> None:
    staging = out / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    torch.save(optimizer.state_dict(), staging / "optimizer.pt")
    (staging / "state.json").write_text(json.dumps(state))
    last = out / "last"
    if last.exists():
        shutil.rmtree(out / "previous", ignore_errors=True)
        os.replace(last, out / "previous")
    os.replace(staging, last)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.export:
        export(*args.export)
        return
    if missing := missing_documentation():
        raise SystemExit(f"the training documentation is not installed: {missing} (without it the model learns no prose)")
    torch.set_num_threads(args.threads)
    from peft import PeftModel, get_peft_model

    from sfumato.model.lm_base import base_of, load_base, shipped_adapter

    last = args.out / "last"
    resume = last if (last / "adapter_config.json").is_file() else None
    base_spec = base_of(resume) if resume else BASES[args.base or SMOLLM2.name]
    shipped = shipped_adapter()
    if shipped is not None and base_of(shipped) != base_spec:
        shipped = None  # trained on another base: a new lineage starts from its base
    base, tokenizer = load_base(base_spec)
    vocab = Vocabulary.of(tokenizer)
    start = resume or args.start or shipped
    if start is not None and (Path(start) / "adapter_config.json").is_file():
        if resume is None and adapter_rank(Path(start)) < args.rank:
            model = get_peft_model(base, lora_config(args.rank))
            widen(model, Path(start))
            print(f"starting from {start}, widened to rank {args.rank}")
        else:
            model = PeftModel.from_pretrained(base, start, is_trainable=True)
            print(f"starting from {start}")
    else:
        model = get_peft_model(base, lora_config(args.rank))
        print("starting from the base")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    mixed = mixed_precision(device)
    print(f"products in bfloat16 (autocast): {mixed}")
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    state = {"step": 0, "examples": 0, "tokens": 0, "seed": args.seed, "log": []}
    if resume:
        optimizer.load_state_dict(torch.load(resume / "optimizer.pt", weights_only=True))
        state = json.loads((resume / "state.json").read_text())
    state["base"] = base_spec.name
    state["distill"] = args.distill  # the recipe a checkpoint was last trained with
    state["unwrap"] = args.unwrap
    state["causal"] = args.causal
    state["prefix"] = args.prefix
    state["suffix_led"] = args.suffix_led
    state["self_targets"] = str(args.self_targets) if args.self_targets else None
    stream = ExampleStream(tokenizer, vocab, args, seed=f"{args.seed}:{state['step']}")
    batches = iter(DataLoader(stream, batch_size=None, num_workers=args.workers, pin_memory=device == "cuda",
                              prefetch_factor=4 if args.workers else None))
    started = time.monotonic()
    deadline = started + 60 * args.minutes
    next_snapshot = 60 * args.snapshot_minutes if args.snapshot_minutes else None
    running = None
    while time.monotonic() < deadline:
        t0, wall0 = time.process_time(), time.monotonic()
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(args.accumulate):
            batch = {name: tensor.to(device, non_blocking=True) for name, tensor in next(batches).items()}
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=mixed):
                loss = batch_loss(model, batch, args.distill) / args.accumulate
            loss.backward()
            total += loss.item()
            state["examples"] += len(batch["ids"])
            state["tokens"] += int(batch["tokens"])
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scale = min(1.0, (state["step"] + 1) / 20)  # warm-up
        if args.anneal:
            scale *= 1.0 - 0.9 * min(1.0, (time.monotonic() - started) / (60 * args.minutes))
        for group in optimizer.param_groups:
            group["lr"] = args.lr * scale
        optimizer.step()
        state["step"] += 1
        running = total if running is None else 0.95 * running + 0.05 * total
        if state["step"] % 5 == 0:
            line = {"step": state["step"], "tokens": state["tokens"], "loss": round(running, 4),
                    "cpu_s_per_step": round(time.process_time() - t0, 1),
                    "s_per_step": round(time.monotonic() - wall0, 3)}
            state["log"].append(line)
            print(json.dumps(line), flush=True)
        if state["step"] % args.save_every == 0:
            save_checkpoint(model, optimizer, state, args.out)
        if next_snapshot is not None and next_snapshot <= time.monotonic() - started < 60 * args.minutes:
            save_checkpoint(model, optimizer, state, args.out)
            export(last, args.out / f"snapshot-{state['step']}")
            next_snapshot += 60 * args.snapshot_minutes
    save_checkpoint(model, optimizer, state, args.out)
    print(f"saved {last} after {state['step']} steps, {state['tokens']} tokens")


if __name__ == "__main__":
    main()
