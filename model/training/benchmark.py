"""Engine speed figures for ``sfumato bench``: what block denoising buys on this machine.

Quality and speed are measured on the same held-out single-line infill tasks (``model.training.evaluate``,
its ``test`` part) in the same run: once at the shipped sampler settings and once accepting one
token per pass with no early stop (the sequential baseline: every token costs a pass, as in
autoregressive decoding), so the speed-up is never reported without the exact
match it costs. Times are medians over repeats, on a warm model.
"""

from __future__ import annotations

import copy
import statistics
import threading
import time

import torch

from model.api import InfillRequest
from model.quantization import backend_grad_free
from model.training.evaluate import ENTROPY_BOUNDS, ONE_PER_PASS, heldout_documents, make_tasks, pass_time_ms, run, set_sampler
from model.worker import InferenceWorker


def median_ms(measure, repeats: int) -> float:
    """Median of ``measure()`` seconds over ``repeats`` runs after one warm-up, in milliseconds."""
    measure()
    return 1000 * statistics.median(measure() for _ in range(repeats))


@backend_grad_free
def prefill_ms(backend, context_tokens: int, repeats: int = 3) -> float:
    """Encoder prefill of ``context_tokens`` prompt tokens, batch 1."""
    model = backend.model
    prompt = torch.randint(10, model.config.text_config.vocab_size, (1, context_tokens), device=backend.device)

    def measure() -> float:
        began = time.perf_counter()
        model.model.encoder(input_ids=prompt)
        return time.perf_counter() - began

    return median_ms(measure, repeats)


def first_draft_ms(backend, repeats: int = 5) -> dict[str, float]:
    """Request submitted to the worker -> first draft delivered to the caller, model loaded.

    ``cold``: each request a different held-out document, its prompt filling the model's context
    budget, so nothing of it is cached. ``repeat``: the same request again (Ctrl+K pressed again at
    the same place), its prompt's encoding taken from the prompt cache.
    """
    tasks = make_tasks(heldout_documents("test"), "single", repeats + 1, seed=1)
    requests = [InfillRequest(prefix=t.prefix, suffix=t.suffix, max_new_tokens=32, seed=0) for t in tasks]
    worker = InferenceWorker(lambda: backend)
    worker.start()
    worker.loaded.wait()

    def first_draft(request: InfillRequest) -> float:
        first, done = threading.Event(), threading.Event()
        arrived: list[float] = []

        def on_draft(_drafts) -> None:
            if not arrived:
                arrived.append(time.perf_counter())
                first.set()

        began = time.perf_counter()
        job = worker.submit([request], on_draft, lambda _: done.set(), lambda _: done.set(), done.set)
        first.wait(60)
        job.cancel()
        done.wait(60)
        return arrived[0] - began

    try:
        backend.prompt_cache.clear()
        first_draft(requests[-1])  # warm-up
        cold = [first_draft(request) for request in requests[:-1]]
        first_draft(requests[-1])  # its prompt is now the cached one
        repeat = [first_draft(requests[-1]) for _ in range(repeats)]
        return {"cold": round(1000 * statistics.median(cold), 1), "repeat": round(1000 * statistics.median(repeat), 1)}
    finally:
        worker.stop()


def quality_and_speed(backend, n_tasks: int, sweep: bool = True, batch: int = 1, seed: int = 0) -> dict:
    """Exact match, tokens per forward and wall time at the shipped bound, sequentially, and swept."""
    config = backend.model.generation_config
    saved = copy.deepcopy(config)
    shipped = (config.sampler_config.entropy_bound, (config.t_min, config.t_max))
    stop = (config.stability_threshold, config.confidence_threshold)
    tasks = make_tasks(heldout_documents("test"), "single", n_tasks, seed)
    curve = []
    try:
        for bound in sorted({*(ENTROPY_BOUNDS if sweep else (ONE_PER_PASS,)), shipped[0]}):
            set_sampler(backend, bound, shipped[1], stop)
            result = run(backend, tasks, batch, seed)
            curve.append(
                {
                    "entropy_bound": bound,
                    "exact_match": result["exact_match"],
                    "char_similarity": result["char_similarity"],
                    "tokens_per_forward": result["tokens_per_pass"],
                    "seconds": result["seconds"],
                }
            )
    finally:
        backend.model.generation_config = saved
    at_shipped = next(point for point in curve if point["entropy_bound"] == shipped[0])
    sequential = next(point for point in curve if point["entropy_bound"] == ONE_PER_PASS)
    return {
        "tasks": n_tasks,
        "shipped_entropy_bound": shipped[0],
        "sequential_entropy_bound": ONE_PER_PASS,
        "tokens_per_forward": at_shipped["tokens_per_forward"],
        "exact_match": at_shipped["exact_match"],
        "exact_match_sequential": sequential["exact_match"],
        "speedup_vs_sequential": sequential["seconds"] / at_shipped["seconds"],
        "curve": curve,
    }


def engine_figures(backend, quick: bool = False) -> dict:
    contexts = (256, 1024) if quick else (256, 1024, 4096)
    return {
        "prefill_ms": {str(n): round(prefill_ms(backend, n), 1) for n in contexts},
        "pass_ms": round(pass_time_ms(backend, prompt_tokens=1024, repeats=5 if quick else 20), 1),
        "first_draft_ms": first_draft_ms(backend, repeats=3 if quick else 7),
        **quality_and_speed(backend, n_tasks=8 if quick else 100, sweep=not quick),
    }
