"""Train the embedded DiffusionGemma on fill-in-the-middle examples from the local corpus.

    python -m sfumato.model.training.train --out checkpoints/small                      # CPU, fp32
    python -m sfumato.model.training.train --out checkpoints/small --device cuda --dtype bf16 --workers 14
    python -m sfumato.model.training.train --out checkpoints/small --export resources/models/sfumato-small

One training step (shapes for batch B, prompt width P, canvas length C, vocabulary V):

1. Examples are cut from train-split documents at character positions (``sfumato.model.training.examples``; in
   ``--workers`` processes on a GPU) and laid out exactly as the engine lays out a request
   (``sfumato.model.layout``): prefix, suffix and middle are tokenised separately, as the editor
   tokenises them, so the model never relies on a token that straddles the cursor.
   prompt ``<bos><fim_prefix>prefix<fim_suffix>suffix<fim_middle>`` (left-padded to P),
   canvas ``middle <eos> <pad>...`` (C). Middles longer than a canvas are trained block by block:
   the earlier blocks are appended to the prompt, as DiffusionGemma's outer loop does at inference.
2. The causal encoder reads the prompt into a KV cache; its hidden states also give a next-token
   loss on the prompt (the lm_head is tied to the embeddings), supervision that costs no extra pass.
3. Each canvas is corrupted at its own noise level t ~ U(0, 1) (stratified over the batch): every
   position independently becomes ``<mask>`` (absorbing noise, MDLM/LLaDA) or a uniform random token
   (DiffusionGemma's stock noise) with probability t.
4. With probability ``--self-cond`` a first decoder pass without gradients predicts the canvas and
   its logits are fed back as self-conditioning, as the sampler does from its previous step.
5. Loss = cross-entropy on the corrupted canvas positions (B, C, V) + ``--ar-weight`` x next-token
   loss on the prompt (B, P, V).

The learning rate follows warmup then cosine decay over ``--max-steps`` or, when a wall-clock
budget is given instead, over ``--budget-minutes`` of training time (so a run fits a deadline).
Checkpoints (``ckpt.pt``: weights, optimizer, data and noise RNG states) are written atomically
every ``--save-minutes``; running the same command again resumes from the last one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm
from transformers import DiffusionGemmaForBlockDiffusion
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    DiffusionGemmaGenerationConfig,
    EntropyBoundSamplerConfig,
)

from sfumato.model.training import examples
from sfumato.model.training.architecture import small_config
from sfumato.model.training.examples import ExampleMaker, batch_stream
from sfumato.model.tokenizer import load_tokenizer

TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "resources" / "tokenizer"


def corrupt(canvas: torch.Tensor, noise: str, mask_id: int, vocab_size: int, generator: torch.Generator):
    """Noise each row at its own level t (stratified over the batch); returns (noised, noised_mask, t)."""
    B, C = canvas.shape
    offset = torch.rand((), generator=generator)
    t = ((offset + torch.arange(B) / B) % 1.0).clamp_min(1.0 / C)  # (B,)
    noised_mask = torch.rand((B, C), generator=generator) < t[:, None]
    # At least one noised position per row, so every row is supervised.
    none = ~noised_mask.any(dim=1)
    noised_mask[none, torch.randint(C, (int(none.sum()),), generator=generator)] = True
    if noise == "mask":
        fill = torch.full_like(canvas, mask_id)
    else:
        fill = torch.randint(vocab_size, canvas.shape, generator=generator)
    return torch.where(noised_mask, fill, canvas), noised_mask, t


def forward_losses(model, batch, args, generator: torch.Generator, mask_id: int):
    """(canvas loss, prompt next-token loss) for one batch; see the module docstring."""
    device = next(model.parameters()).device
    input_ids = batch["input_ids"].to(device)
    attention_mask = batch["attention_mask"].to(device)
    canvas = batch["canvas"]
    B, P = input_ids.shape
    C = canvas.shape[1]
    vocab_size = model.config.text_config.vocab_size
    noised, noised_mask, _ = corrupt(canvas, args.noise, mask_id, vocab_size, generator)
    noised, noised_mask, canvas = noised.to(device), noised_mask.to(device), canvas.to(device)

    # Same positions and masks as DiffusionGemma's generate(): left padding, positions from 0,
    # the canvas right after the prompt, attending to every real prompt token and the whole canvas.
    position_ids = torch.arange(P, device=device).unsqueeze(0)
    decoder_position_ids = torch.arange(P, P + C, device=device).unsqueeze(0)
    decoder_attention_mask = F.pad(attention_mask, (0, C), value=True)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")
    with autocast:
        encoded = model.model.encoder(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
        cache = encoded.cache
        self_conditioning = None
        if args.self_cond > 0 and torch.rand((), generator=generator) < args.self_cond:
            with torch.no_grad():
                self_conditioning = model(
                    cache=cache,
                    decoder_input_ids=noised,
                    decoder_attention_mask=decoder_attention_mask,
                    decoder_position_ids=decoder_position_ids,
                ).logits.detach()
        logits = model(
            cache=cache,
            decoder_input_ids=noised,
            self_conditioning_logits=self_conditioning,
            decoder_attention_mask=decoder_attention_mask,
            decoder_position_ids=decoder_position_ids,
        ).logits  # (B, C, V)
    canvas_loss = F.cross_entropy(logits[noised_mask].float(), canvas[noised_mask])

    ar_loss = torch.zeros((), device=device)
    if args.ar_weight > 0:
        # Next-token targets of the causal encoder: the prompt shifted by one, and at its last position
        # the canvas's first token (the prompt ends where the middle begins, in either FIM order).
        shifted = torch.cat([input_ids[:, 1:], canvas[:, :1]], dim=1)  # (B, P)
        targets = shifted.masked_fill(~attention_mask, -100)
        if args.ar_positions:
            # K random positions per row (K = --ar-positions): on CPU the vocabulary projection over
            # every prompt position would cost more than the whole canvas loss.
            K = min(args.ar_positions, P)
            scores = torch.rand(targets.shape, generator=generator).to(device).masked_fill(targets < 0, -1.0)
            picked = scores.topk(K, dim=1).indices  # (B, K), invalid positions only where a row has fewer than K
            hidden = encoded.last_hidden_state.gather(1, picked.unsqueeze(-1).expand(-1, -1, encoded.last_hidden_state.shape[-1]))
            targets = targets.gather(1, picked)
        else:
            hidden = encoded.last_hidden_state  # every prompt position
        with autocast:
            prompt_logits = model.lm_head(hidden)  # (B, K or P, V)
        cap = model.final_logit_softcapping
        prompt_logits = torch.tanh(prompt_logits.float() / cap) * cap if cap else prompt_logits.float()
        ar_loss = F.cross_entropy(prompt_logits.reshape(-1, vocab_size), targets.reshape(-1), ignore_index=-100)
    return canvas_loss, ar_loss


def make_optimizers(model, args) -> list[torch.optim.Optimizer]:
    """AdamW (β 0.9/0.95) for every parameter, or with ``--optimizer muon`` torch.optim.Muon for the
    layers' 2-D weight matrices (attention, MLP, self-conditioning projections) and AdamW for the rest:
    the embeddings (tied with the output layer), norms, the router and the 3-D expert tensors.
    Muon's update is scaled to AdamW's RMS (``match_rms_adamw``, Moonshot's "Muon is scalable"), so
    both share ``--lr`` and its schedule."""
    matrices, decay, no_decay = [], [], []
    for name, param in model.named_parameters():
        if args.optimizer == "muon" and param.ndim == 2 and min(param.shape) > 1 and "embed" not in name:
            matrices.append(param)
        else:
            (decay if param.ndim >= 2 else no_decay).append(param)
    adamw = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    if not matrices:
        return [adamw]
    muon = torch.optim.Muon(matrices, lr=args.lr, weight_decay=args.weight_decay, adjust_lr_fn="match_rms_adamw")
    return [muon, adamw]


def learning_rate(progress: float, args) -> float:
    """Linear warmup over ``--warmup`` steps is applied by the caller; cosine to 10% over progress."""
    progress = min(1.0, max(0.0, progress))
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def run_weights(path: Path) -> dict:
    """An earlier run's weights and shape ({"args", "model"}): its ``ckpt.pt``, or a model folder it
    exported (the shipped model, when the checkpoint is gone)."""
    if not path.is_dir():
        return torch.load(path, weights_only=False)
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(path, dtype=torch.float32)
    text = model.config.text_config
    shape = {"hidden": text.hidden_size, "layers": text.num_hidden_layers, "heads": text.num_attention_heads,
             "head_dim": text.head_dim, "ffn": text.intermediate_size, "canvas": model.config.canvas_length,
             "noise": json.loads((path / "sfumato.json").read_text())["canvas_noise"]}
    return {"args": shape, "model": model.state_dict()}


_LAYER_KEY = re.compile(r"^(model\.(?:encoder\.language_model|decoder)\.layers\.)(\d+)(\..+)$")


def deepened(source: dict, args) -> dict[str, torch.Tensor]:
    """Weights for a deeper model that computes what ``source`` (an earlier run's checkpoint) did.

    New layer j copies source layer ``j * n_source // n_new``. A source layer's second copy starts
    gated shut: its post-attention and post-feed-forward norm weights are zero, so it adds nothing
    to the residual stream, yet their gradients are not zero, so training opens it.
    """
    saved = source["args"]
    for key in ("hidden", "heads", "head_dim", "ffn", "canvas", "noise"):
        if saved[key] != getattr(args, key):
            raise SystemExit(f"--init-from: the source run has --{key.replace('_', '-')} {saved[key]}; only --layers may differ")
    n_source, n_new = saved["layers"], args.layers
    if n_new < n_source:
        raise SystemExit(f"--init-from: the source has {n_source} layers; a run may only add layers")
    copies = [j * n_source // n_new for j in range(n_new)]
    weights = {}
    for name, value in source["model"].items():
        match = _LAYER_KEY.match(name)
        if not match:
            weights[name] = value
            continue
        head, index, tail = match.group(1), int(match.group(2)), match.group(3)
        for j, copied in enumerate(copies):
            if copied != index:
                continue
            shut = j > 0 and copies[j - 1] == index
            gate = tail in (".post_attention_layernorm.weight", ".post_feedforward_layernorm.weight")
            weights[f"{head}{j}{tail}"] = torch.zeros_like(value) if shut and gate else value.clone()
    return weights


def build_model(tokenizer, args) -> DiffusionGemmaForBlockDiffusion:
    config = small_config(
        tokenizer,
        hidden_size=args.hidden,
        num_layers=args.layers,
        num_heads=args.heads,
        head_dim=args.head_dim,
        intermediate_size=args.ffn,
        canvas_length=args.canvas,
    )
    config.text_config._attn_implementation = "sdpa"
    torch.manual_seed(args.seed)
    return DiffusionGemmaForBlockDiffusion(config)


def dev_batches(tokenizer, args, n_batches: int = 4) -> list[dict[str, torch.Tensor]]:
    """Fixed batches from the held-out dev part: the validation loss compares runs step for step."""
    maker = ExampleMaker(examples.dev_documents(args.sources), tokenizer, args.prompt, args.canvas, args.fim_order)
    rng = random.Random(1234)
    return [maker.batch(rng, args.batch) for _ in range(n_batches)]


@torch.no_grad()
def dev_loss(model, batches, args, mask_id: int) -> tuple[float, float]:
    model.eval()
    generator = torch.Generator().manual_seed(99)
    no_sc = argparse.Namespace(**{**vars(args), "self_cond": 0.0})
    totals = [0.0, 0.0]
    for batch in batches:
        canvas_loss, ar_loss = forward_losses(model, batch, no_sc, generator, mask_id)
        totals[0] += canvas_loss.item()
        totals[1] += ar_loss.item()
    model.train()
    return totals[0] / len(batches), totals[1] / len(batches)


def save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def default_generation_config(tokenizer, canvas_length: int, max_new_tokens: int = 64) -> DiffusionGemmaGenerationConfig:
    """Sampler settings shipped until ``sfumato.model.training.evaluate --tune`` has chosen them on the dev part."""
    return DiffusionGemmaGenerationConfig(
        max_new_tokens=max_new_tokens,
        max_denoising_steps=canvas_length,
        sampler_config=EntropyBoundSamplerConfig(entropy_bound=0.5),
        t_min=0.05,
        t_max=0.2,
        stability_threshold=1,
        confidence_threshold=0.005,
        bos_token_id=tokenizer.bos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )


def averaged(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of several state dicts of one model (computed in fp32, kept in each
    tensor's dtype). Averaging the last checkpoints of a run smooths out the noise of its final
    steps: for the shipped run, 7 copies over its last 3,600 steps gained 1.2 points of dev
    teacher-forced accuracy over the last checkpoint alone."""
    return {name: (sum(state[name].float() for state in states) / len(states)).to(states[0][name].dtype) for name in states[0]}


def export_model(model, tokenizer, out: Path, noise: str, prompt_length: int, dtype: str, joint_gaps: bool = True,
                 fim_order: str = "psm"):
    """Write a Hugging Face model folder the engine loads: weights, config, tokenizer, sfumato.json."""
    out.mkdir(parents=True, exist_ok=True)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    copy = DiffusionGemmaForBlockDiffusion(model.config)
    copy.load_state_dict(model.state_dict())
    copy.to(torch_dtype)
    copy.generation_config = default_generation_config(tokenizer, model.config.canvas_length)
    copy.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    profile = {
        "format": 1,
        "prompt_layout": "fim",
        "fim_order": fim_order,
        "canvas_noise": noise,
        "context_tokens": prompt_length,
        # trained on multi-gap examples: the engine may fill a template's gaps jointly on one canvas
        "joint_gaps": joint_gaps and examples.KIND_WEIGHTS["gaps"] > 0,
    }
    (out / "sfumato.json").write_text(json.dumps(profile, indent=2) + "\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="checkpoint folder (resumed when it holds ckpt.pt)")
    p.add_argument("--tokenizer", default=str(TOKENIZER_DIR))
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=32)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--canvas", type=int, default=32, help="canvas length C")
    p.add_argument("--prompt", type=int, default=128, help="prompt budget P in tokens")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--noise", choices=["mask", "uniform"], default="mask")
    p.add_argument("--self-cond", type=float, default=0.5, help="probability of a self-conditioning pass")
    p.add_argument("--ar-weight", type=float, default=0.5, help="weight of the prompt next-token loss")
    p.add_argument("--ar-positions", type=int, default=32, help="prompt positions per row given the next-token loss (0: every one)")
    p.add_argument("--fim-order", choices=["psm", "spm"], default="psm",
                   help="prompt order: prefix-suffix-middle, or suffix-prefix-middle (the prefix runs into the middle, see sfumato.model.layout)")
    p.add_argument("--optimizer", choices=["adamw", "muon"], default="adamw",
                   help="muon: torch.optim.Muon for the layers' weight matrices, AdamW for the rest")
    p.add_argument("--sources", nargs="+", metavar="SOURCE",
                   help="train on these corpus sources only (model.corpus.source_roots; default: every one found)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--max-steps", type=int, default=0, help="schedule length in steps (0: use --budget-minutes)")
    p.add_argument("--budget-minutes", type=float, default=0.0, help="schedule length in training minutes")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="what a training minute is: wall time, or this process's CPU time (equal-compute comparisons on a shared machine)")
    p.add_argument("--save-minutes", type=float, default=5.0)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init-from", metavar="CKPT",
                   help="start a new run from an earlier run's ckpt.pt or exported model folder; --layers may add layers (see deepened)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--workers", type=int, default=0,
                   help="processes making examples (0: in the training process, exact resume; a GPU needs several)")
    p.add_argument("--export", metavar="DIR", help="export the checkpoint in --out as a model folder and exit")
    p.add_argument("--export-dtype", choices=["fp32", "bf16", "fp16"], default="fp16")
    p.add_argument("--average-with", nargs="+", default=[], metavar="CKPT",
                   help="with --export: export the mean of the run's weights and these earlier copies of its ckpt.pt")
    p.add_argument("--no-joint-gaps", dest="joint_gaps", action="store_false",
                   help="export a model whose template gaps the engine fills one by one (when joint filling measured worse)")
    args = p.parse_args(argv)
    if not args.export and not args.max_steps and not args.budget_minutes:
        p.error("give --max-steps or --budget-minutes")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "ckpt.pt"
    tokenizer = load_tokenizer(args.tokenizer)
    mask_id = tokenizer.mask_token_id

    state = torch.load(ckpt_path, weights_only=False) if ckpt_path.exists() else None
    if state is not None:  # the architecture and objective are those the run started with
        saved = state["args"]
        for key in ("hidden", "layers", "heads", "head_dim", "ffn", "canvas", "prompt", "noise", "seed"):
            setattr(args, key, saved[key])
        args.fim_order, args.optimizer = saved.get("fim_order", "psm"), saved.get("optimizer", "adamw")
    model = build_model(tokenizer, args)
    if state is not None:
        model.load_state_dict(state["model"])
    elif args.init_from:
        model.load_state_dict(deepened(run_weights(Path(args.init_from)), args))

    if args.export:
        if state is None:
            raise SystemExit(f"{ckpt_path}: no checkpoint to export")
        if args.average_with:
            earlier = [torch.load(path, weights_only=False)["model"] for path in args.average_with]
            model.load_state_dict(averaged([state["model"], *earlier]))
        export_model(model, tokenizer, Path(args.export), args.noise, args.prompt, args.export_dtype, args.joint_gaps,
                     args.fim_order)
        print(f"exported {ckpt_path} (step {state['step']}) to {args.export}")
        return

    device = torch.device(args.device)
    model.to(device).train()
    optimizers = make_optimizers(model, args)
    rng = random.Random(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    step, trained_seconds, tokens_seen = 0, 0.0, 0
    if state is not None:
        saved = state["optimizer"]
        for optimizer, saved_state in zip(optimizers, saved if isinstance(saved, list) else [saved], strict=True):
            optimizer.load_state_dict(saved_state)
        rng.setstate(state["rng"])
        generator.set_state(state["generator"])
        step, trained_seconds, tokens_seen = state["step"], state["trained_seconds"], state["tokens_seen"]

    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters; resuming at step {step}" if step else f"model: {n_params / 1e6:.2f}M parameters")
    maker = ExampleMaker(examples.train_documents(args.sources), tokenizer, args.prompt, args.canvas, args.fim_order)
    stream = batch_stream(maker, args.batch, rng, args.workers, seed=f"{args.seed}:{step}")
    dev = dev_batches(tokenizer, args)
    log = (out / "log.jsonl").open("a")

    def progress() -> float:
        return step / args.max_steps if args.max_steps else trained_seconds / (60 * args.budget_minutes)

    def checkpoint() -> None:
        save_checkpoint(
            ckpt_path,
            {
                "model": model.state_dict(),
                "optimizer": [optimizer.state_dict() for optimizer in optimizers],
                "rng": rng.getstate(),
                "generator": generator.get_state(),
                "step": step,
                "trained_seconds": trained_seconds,
                "tokens_seen": tokens_seen,
                "args": vars(args),
            },
        )

    clock = time.process_time if args.clock == "cpu" else time.monotonic
    bar = tqdm(total=args.max_steps or None, initial=step, unit="step", dynamic_ncols=True)
    last_save = time.monotonic()
    window_tokens, window_start = 0, time.monotonic()
    while progress() < 1.0:
        t0 = clock()
        lr = learning_rate(progress(), args) * min(1.0, (step + 1) / args.warmup)
        for optimizer in optimizers:
            for group in optimizer.param_groups:
                group["lr"] = lr
        batch = next(stream)
        canvas_loss, ar_loss = forward_losses(model, batch, args, generator, mask_id)
        loss = canvas_loss + args.ar_weight * ar_loss
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for optimizer in optimizers:
            optimizer.step()
        step += 1
        n_canvas = batch["canvas"].numel()
        tokens_seen += n_canvas + int(batch["attention_mask"].sum())
        window_tokens += n_canvas
        trained_seconds += clock() - t0
        bar.update(1)
        if step % 10 == 0:
            rate = window_tokens / (time.monotonic() - window_start)
            bar.set_postfix(loss=f"{canvas_loss.item():.3f}", ar=f"{ar_loss.item():.3f}", lr=f"{lr:.1e}", canvas_tok_s=f"{rate:.0f}")
            window_tokens, window_start = 0, time.monotonic()
        if step % args.eval_every == 0 or progress() >= 1.0:
            dev_canvas, dev_ar = dev_loss(model, dev, args, mask_id)
            record = {"step": step, "minutes": trained_seconds / 60, "tokens_seen": tokens_seen,
                      "train_canvas_loss": canvas_loss.item(), "train_ar_loss": ar_loss.item(),
                      "dev_canvas_loss": dev_canvas, "dev_ar_loss": dev_ar, "lr": lr}
            log.write(json.dumps(record) + "\n")
            log.flush()
            bar.write(json.dumps(record))
        if time.monotonic() - last_save > 60 * args.save_minutes or progress() >= 1.0:
            checkpoint()
            last_save = time.monotonic()
    bar.close()
    checkpoint()


if __name__ == "__main__":
    main()
