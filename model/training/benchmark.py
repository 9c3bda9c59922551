"""Engine figures for ``sfumato bench`` (issue 22, item 5): the embedded block-denoising LM on this machine.

Every task is held-out code (``evaluate_lm.held_out_documents``: whole packages never trained on),
shaped as the editor sends it (``edit_tasks.line_tasks``: Ctrl+K's one-line infill at the cursor).

* first pass: the request submitted to an ``InferenceWorker`` -> its first draft (one pass)
  delivered. ``cold``: the prompt cache cleared, at least ``COLD_CONTEXT_TOKENS`` of context (the
  engine reads the last ``prefix_tokens`` and first ``SUFFIX_TOKENS`` of it); ``warm``: the same
  request again, its prompt cached as the speculative prefill leaves it.
* a whole single line, and a ``REWRITE_LINES``-line rewrite at ``REWRITE_STRENGTH``: request -> final draft;
  the line also ``rested``: its prompt read first, as the editor reads it while the cursor rests.
* quality against speed: the same line tasks as shipped (guesses checked) and accepting one token per
  pass (``sampler_bound=ONE_PER_PASS``, the sequential baseline), so tokens per pass and the
  speed-up are never reported without the exact match they cost.

Times are medians in milliseconds, on a loaded model.
"""

from __future__ import annotations

import math
import statistics
import threading
import time

from sfumato.model.api import InfillRequest
from sfumato.model.training.edit_tasks import EditTask, line_tasks
from sfumato.model.training.evaluate_lm import held_out_documents, request_for, run_engine, score
from sfumato.model.worker import InferenceWorker

ONE_PER_PASS = 1e-4  # accept probability exp(-1e-4): one token a pass
SWEPT_PROBABILITIES = (0.7, 0.5)  # a full run's curve also tries these accept probabilities
COLD_CONTEXT_TOKENS = 512
REWRITE_LINES, REWRITE_STRENGTH = 5, 0.5


def long_context(backend, tasks: list[EditTask], tokens: int = COLD_CONTEXT_TOKENS) -> list[EditTask]:
    """The tasks with at least ``tokens`` tokens of context before and after the cursor together."""
    def count(text: str) -> int:
        return len(backend.tokenizer(text, add_special_tokens=False).input_ids)

    return [task for task in tasks if count(task.prefix) + count(task.suffix) >= tokens]


def first_pass_ms(backend, tasks: list[EditTask], repeats: int) -> dict[str, float]:
    """Ctrl+K -> first pass delivered through the worker, cold (``repeats`` different tasks after
    one warm-up) and warm (the last of them ``repeats`` times more)."""
    requests = [request_for(task, "line", seed=0) for task in tasks[: repeats + 1]]
    if len(requests) < 2:
        raise RuntimeError(f"too few held-out tasks with {COLD_CONTEXT_TOKENS} tokens of context")
    worker = InferenceWorker(lambda: backend)
    worker.start()
    worker.loaded.wait()

    def first_pass(request: InfillRequest) -> float:
        first, done = threading.Event(), threading.Event()
        arrived: list[float] = []
        errors: list[BaseException] = []

        def on_draft(_drafts) -> None:
            if not arrived:
                arrived.append(time.perf_counter())
            first.set()

        def on_done(drafts) -> None:  # a result in one pass arrives as the final draft only
            on_draft(drafts)
            done.set()

        def on_error(error: BaseException) -> None:
            errors.append(error)
            first.set()
            done.set()

        began = time.perf_counter()
        job = worker.submit([request], on_draft, on_done, on_error, done.set)
        first.wait(600)
        job.cancel()
        done.wait(600)
        if errors or not arrived:
            raise RuntimeError(f"no first pass: {errors[0] if errors else 'timed out'}")
        return arrived[0] - began

    try:
        first_pass(requests[0])  # warm-up
        cold = []
        for request in requests[1:]:
            backend.prompt_cache.clear()
            cold.append(first_pass(request))
        warm = [first_pass(requests[-1]) for _ in range(repeats)]
    finally:
        worker.stop()
    return {"first_pass_cold_ms": round(1000 * statistics.median(cold), 1),
            "first_pass_warm_ms": round(1000 * statistics.median(warm), 1)}


def rested_line_ms(backend, tasks: list[EditTask]) -> float:
    """Median time of the line tasks' whole line, request -> final draft, each prompt read first as
    the editor reads it while the cursor rests (``warm``): what Ctrl+K costs after a pause."""
    times = []
    for task in tasks:
        request = request_for(task, "line", seed=0)
        backend.prompt_cache.clear()
        backend.warm(request)
        began = time.perf_counter()
        for _ in backend.stream([request]):
            pass
        times.append(time.perf_counter() - began)
    return round(1000 * statistics.median(times), 1)


def rewrite_requests(tasks: list[EditTask]) -> list[InfillRequest]:
    """Each task's line and the lines after it, ``REWRITE_LINES`` in all, selected and rewritten."""
    requests = []
    for task in tasks:
        lines = (task.middle + task.suffix).split("\n")
        if len(lines) > REWRITE_LINES:
            requests.append(InfillRequest(prefix=task.prefix, suffix="\n" + "\n".join(lines[REWRITE_LINES:]),
                                          init_text="\n".join(lines[:REWRITE_LINES]), strength=REWRITE_STRENGTH,
                                          seed=0))
    return requests


def rewrite_ms(backend, tasks: list[EditTask]) -> float:
    """Median time of a ``REWRITE_LINES``-line rewrite, request -> final draft."""
    results = run_engine(backend, rewrite_requests(tasks))
    return round(1000 * statistics.median(r["seconds"] for r in results), 1)


def decode(backend, tasks: list[EditTask], sampler_bound: float | None) -> dict:
    """One point of the curve: the line tasks decoded at one accept bar."""
    results = run_engine(backend, [request_for(t, "line", seed=0, sampler_bound=sampler_bound) for t in tasks])
    quality = score("line", tasks, [r["text"] for r in results])
    return {
        # None: the shipped rule, no bar (prompt lookup's guesses checked by the causal reading, sfumato.model.lm_settle)
        "accept_probability": None if sampler_bound is None else round(math.exp(-sampler_bound), 4),
        "setting": "guesses checked" if sampler_bound is None else f"p >= {math.exp(-sampler_bound):.4g}",
        "exact_match": quality["exact"],
        "char_similarity": quality["similarity"],
        "tokens_per_pass": round(sum(r["tokens"] for r in results) / max(1, sum(r["passes"] for r in results)), 3),
        "seconds": round(sum(r["seconds"] for r in results), 3),
        "median_ms": round(1000 * statistics.median(r["seconds"] for r in results), 1),
    }


def quality_and_speed(backend, tasks: list[EditTask], sweep: bool = False) -> dict:
    """Tokens per pass, exact match and time at the shipped bar beside one token per pass (and, swept, other bars)."""
    shipped, sequential = decode(backend, tasks, None), decode(backend, tasks, ONE_PER_PASS)
    swept = [decode(backend, tasks, -math.log(p)) for p in SWEPT_PROBABILITIES] if sweep else []
    return {
        "line_tasks": len(tasks),
        "single_line_ms": shipped["median_ms"],
        "tokens_per_pass": shipped["tokens_per_pass"],
        "tokens_per_pass_one_per_pass": sequential["tokens_per_pass"],
        "exact_match": shipped["exact_match"],
        "exact_match_one_per_pass": sequential["exact_match"],
        "exact_loss_points": round(100 * (sequential["exact_match"] - shipped["exact_match"]), 1),
        "speedup_vs_one_per_pass": round(sequential["seconds"] / shipped["seconds"], 2),
        "shipped_accept_probability": shipped["accept_probability"],
        "one_per_pass_accept_probability": sequential["accept_probability"],
        "curve": [shipped, sequential, *swept],
    }


def engine_figures(backend, quick: bool = False) -> dict:
    """Every engine figure; ``quick``: 12 line tasks, 3 rewrites, 2 repeats of the first pass, no
    sweep (a set of 6 lines and one rewrite moved its medians by a quarter between runs)."""
    repeats = 2 if quick else 7
    documents = held_out_documents()
    tasks = line_tasks(documents, 12 if quick else 100, seed=0)
    return {
        **first_pass_ms(backend, long_context(backend, line_tasks(documents, 3 * repeats, seed=1)), repeats),
        "rewrite_5_lines_ms": rewrite_ms(backend, tasks[: 3 if quick else 10]),
        "single_line_rested_ms": rested_line_ms(backend, tasks),
        **quality_and_speed(backend, tasks, sweep=not quick),
    }
