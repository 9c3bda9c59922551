"""Each --quantize choice on a random DiffusionGemma with the released 26B-A4B checkpoint's layer shapes.

    python tools/precision_check.py --layers 6 --out runs/precision.json      (on a CUDA GPU)
    python tools/precision_check.py --device cpu --layers 1 --experts 4 --precisions none,int8 --repeats 1 --out /tmp/p.json

The model (random weights, the project's tokenizer, fewer layers than the real 30) is saved once
and loaded through ``sfumato.model.loading.load_backend`` at each precision, the editor's own path. For
each: the weights' bytes (measured, and as estimated from the config), peak GPU memory, load
time, the median time of one decoder pass over a 256-token canvas after a 512-token prompt, and
agreement with the unquantized model on the same prompt and canvas: the relative error of the
canvas logits (Frobenius norm of the difference over that of bf16's), the share of positions whose
top token is the same, and the mean total-variation distance of the two distributions. Random
weights make the text meaningless and the top token mostly the canvas token itself (its embedding
rides the residual stream), so the logits' relative error is the figure that shows quantization.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sfumato.model.quantization import grad_free, silence_import_noise  # noqa: E402

silence_import_noise()  # before anything imports transformers (and with it torchao)

from sfumato.model.loading import load_backend  # noqa: E402
from sfumato.model.memory import GB, estimate_weights  # noqa: E402
from sfumato.model.released import released_config  # noqa: E402
from sfumato.model.tokenizer import load_tokenizer  # noqa: E402

PROMPT_TOKENS = 512
TOKENIZER = Path(__file__).resolve().parent.parent / "resources" / "tokenizer"


def save_random_model(folder: Path, layers: int, experts: int, device: str) -> None:
    """A random bfloat16 model with the released shapes, the project's tokenizer and a FIM profile."""
    from transformers import DiffusionGemmaForBlockDiffusion
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
        DiffusionGemmaGenerationConfig,
        EntropyBoundSamplerConfig,
    )

    torch.manual_seed(0)
    config = released_config(layers, experts)
    with torch.device(device):
        model = DiffusionGemmaForBlockDiffusion._from_config(config, dtype=torch.bfloat16)
    tokenizer = load_tokenizer(TOKENIZER)
    model.generation_config = DiffusionGemmaGenerationConfig(
        max_denoising_steps=32, sampler_config=EntropyBoundSamplerConfig(entropy_bound=1.0), t_min=0.05, t_max=0.2,
        stability_threshold=1, confidence_threshold=0.005, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
    )
    model.save_pretrained(folder)
    del model
    tokenizer.save_pretrained(folder)
    profile = {"format": 1, "prompt_layout": "fim", "canvas_noise": "mask", "context_tokens": PROMPT_TOKENS}
    (folder / "sfumato.json").write_text(json.dumps(profile))


def pass_time_ms(backend, prompt_tokens: int = 512, repeats: int = 20) -> float:
    """Median wall time of one decoder pass (batch 1, full canvas) after a ``prompt_tokens`` prefill."""
    model = backend.model
    C = model.config.canvas_length
    device = backend.device
    times = []
    with grad_free(model):
        prompt = torch.randint(10, model.config.text_config.vocab_size, (1, prompt_tokens), device=device)
        cache = model.model.encoder(input_ids=prompt).cache
        canvas = torch.full((1, C), backend.tokenizer.mask_token_id, device=device)
        positions = torch.arange(prompt_tokens, prompt_tokens + C, device=device).unsqueeze(0)
        logits = None
        for _ in range(repeats + 2):
            t0 = time.perf_counter()
            logits = model(cache=cache, decoder_input_ids=canvas, self_conditioning_logits=logits,
                           decoder_position_ids=positions).logits
            times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times[2:])


@torch.no_grad()
def canvas_logits(backend, seed: int = 0) -> torch.Tensor:
    """Logits (float32, on the CPU) at every canvas position, for a fixed random prompt and canvas."""
    model = backend.model
    generator = torch.Generator().manual_seed(seed)
    vocab, C = model.config.text_config.vocab_size, model.config.canvas_length
    prompt = torch.randint(10, vocab, (1, PROMPT_TOKENS), generator=generator).to(backend.device)
    canvas = torch.randint(10, vocab, (1, C), generator=generator).to(backend.device)
    return model(input_ids=prompt, decoder_input_ids=canvas).logits[0].float().cpu()


def measure(folder: Path, device: str, quantize: str, reference: torch.Tensor | None, repeats: int) -> dict:
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    row: dict = {"quantize": quantize}
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    began = time.perf_counter()
    try:
        backend = load_backend(str(folder), device=device, quantize=quantize)
    except Exception as error:  # one precision failing must not hide the others' figures
        return {**row, "error": str(error).splitlines()[0]}
    row["load_s"] = round(time.perf_counter() - began, 1)
    config = DiffusionGemmaConfig.from_pretrained(folder)
    dtype = backend.info.precision.split("(")[-1].strip(") ")
    estimate = estimate_weights(lambda: DiffusionGemmaForBlockDiffusion._from_config(config), quantize, dtype)
    row.update(precision=backend.info.precision, weights_gb=round(backend.info.memory_bytes / GB, 2),
               estimate_gb=round(estimate.bytes / GB, 2))
    row["pass_ms"] = round(pass_time_ms(backend, prompt_tokens=PROMPT_TOKENS, repeats=repeats), 1)
    logits = canvas_logits(backend)
    if cuda:
        row["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / GB, 2)
    if reference is not None:
        row["logit_relative_error"] = round(float((logits - reference).norm() / reference.norm()), 5)
        row["top_token_agreement"] = round(float((logits.argmax(-1) == reference.argmax(-1)).float().mean()), 4)
        row["total_variation"] = round(float(0.5 * (logits.softmax(-1) - reference.softmax(-1)).abs().sum(-1).mean()), 5)
    row["_logits"] = logits
    del backend
    gc.collect()
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--layers", type=int, default=6, help="the real model has 30")
    parser.add_argument("--experts", type=int, default=128)
    parser.add_argument("--precisions", default="none,int8,int4,nf4")
    parser.add_argument("--repeats", type=int, default=10, help="timed decoder passes (median)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        began = time.perf_counter()
        save_random_model(folder, args.layers, args.experts, args.device)
        print(f"saved {args.layers}-layer model in {time.perf_counter() - began:.0f} s", flush=True)
        rows, reference = [], None
        for quantize in args.precisions.split(","):
            row = measure(folder, args.device, quantize, reference, args.repeats)
            logits = row.pop("_logits", None)
            if quantize == "none":
                reference = logits
            rows.append(row)
            print(json.dumps(row), flush=True)
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    report = {"device": device_name, "layers": args.layers, "experts": args.experts, "torch": torch.__version__,
              "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("| --quantize | weights GB (estimate) | peak GPU GB | pass ms, 256-token canvas | logits' relative error "
          "| top-token agreement | TV |")
    for row in rows:
        print(f"| {row['quantize']} | {row.get('weights_gb', '-')} ({row.get('estimate_gb', '-')}) | "
              f"{row.get('peak_gpu_gb', '-')} | {row.get('pass_ms', row.get('error', '-'))} | "
              f"{row.get('logit_relative_error', '-')} | {row.get('top_token_agreement', '-')} | "
              f"{row.get('total_variation', '-')} |")


if __name__ == "__main__":
    main()
