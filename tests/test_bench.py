"""The benchmark's engine figures and report on a tiny random causal LM with SmolLM2's tokenizer
(figures checked for shape and consistency, never for speed)."""

import pytest

from sfumato.app.bench import GOALS, load_average, plot, table
from sfumato.model.api import ModelInfo
from sfumato.model.training.corpus import Document
from sfumato.model.training.edit_tasks import EditTask, line_tasks
from sfumato.model.training.benchmark import (
    REWRITE_LINES,
    REWRITE_STRENGTH,
    first_pass_ms,
    long_context,
    quality_and_speed,
    rested_line_ms,
    rewrite_ms,
    rewrite_requests,
)

CODE = "".join(f"def scale_{i}(values):\n    return [value * {i} for value in values]\n\n" for i in range(120))


@pytest.fixture
def backend(tiny_lm, smol_tokenizer):
    from sfumato.model.lm_engine import LmDenoiserBackend

    return LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))


@pytest.fixture
def tasks():
    return line_tasks([Document("stdlib", "held-out:scale.py", CODE)], 4, seed=0)


def test_quality_and_speed_sets_the_shipped_bar_beside_one_token_per_pass(backend, tasks, tmp_path):
    figures = quality_and_speed(backend, tasks[:2])
    assert figures["line_tasks"] == 2
    bar = figures["one_per_pass_accept_probability"]
    sequential = next(p for p in figures["curve"] if p["accept_probability"] == bar)
    assert 0 < sequential["tokens_per_pass"] <= 1.0  # the baseline pays a pass for every token
    assert figures["tokens_per_pass_one_per_pass"] == sequential["tokens_per_pass"]
    loss = 100 * (figures["exact_match_one_per_pass"] - figures["exact_match"])
    assert figures["exact_loss_points"] == round(loss, 1)
    assert figures["speedup_vs_one_per_pass"] > 0 and figures["single_line_ms"] > 0
    plot(figures, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")
    report = table({**figures, "load_average": {"start": load_average(), "end": load_average()}})
    assert GOALS["tokens_per_pass"] in report and "load_average" in report and "curve" not in report


def test_the_first_pass_goes_through_the_worker_cold_and_then_from_the_prompt_cache(backend, tasks):
    long = long_context(backend, tasks)
    assert long and long_context(backend, [EditTask("line", "short", "x = ", "1", "\n")]) == []
    figures = first_pass_ms(backend, long[:2], repeats=1)
    assert figures["first_pass_cold_ms"] > 0 and figures["first_pass_warm_ms"] > 0
    assert backend.prompt_cache.reused_tokens > 0  # the repeated request's prompt came from the cache


def test_a_rested_line_finds_its_prompt_read(backend, tasks):
    before = backend.prompt_cache.reused_tokens
    assert rested_line_ms(backend, tasks[:2]) > 0
    assert backend.prompt_cache.reused_tokens > before  # each request found its prompt in the cache


def test_a_rewrite_selects_five_lines_in_place_at_half_strength(backend, tasks):
    requests = rewrite_requests(tasks)
    assert len(requests) == len(tasks)
    for task, request in zip(tasks, requests):
        assert request.prefix + request.init_text + request.suffix == task.prefix + task.middle + task.suffix
        assert request.init_text.count("\n") == REWRITE_LINES - 1 and request.strength == REWRITE_STRENGTH
    assert rewrite_ms(backend, tasks[:1]) > 0


def test_a_probe_reports_its_own_peak_memory_not_its_parents():
    """``ru_maxrss`` survives fork and exec: a probe started by a bench that has grown would report
    the bench's peak. ``peak_resident_mb`` reads the child's own high-water mark."""
    import subprocess
    import sys

    from sfumato.model.soak import peak_resident_mb

    ballast = bytearray(600 * 2**20)
    ballast[:: 4096] = b"\x01" * len(ballast[:: 4096])  # touch every page: the parent's peak grows by 600 MiB
    parent_peak = peak_resident_mb()
    child = subprocess.run(
        [sys.executable, "-c", "from sfumato.model.soak import peak_resident_mb; print(peak_resident_mb())"],
        capture_output=True, text=True, check=True,
    )
    del ballast
    assert float(child.stdout) < parent_peak - 500
