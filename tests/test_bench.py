"""The benchmark's engine figures and report on the tiny model (figures checked for shape, not speed)."""

from app.bench import plot, table
from model.training.benchmark import first_draft_ms, prefill_ms, quality_and_speed


def test_quality_and_speed_compares_shipped_with_one_token_per_pass(tiny_backend, tmp_path):
    before = tiny_backend.model.generation_config.to_dict()
    figures = quality_and_speed(tiny_backend, n_tasks=2, sweep=False)
    assert tiny_backend.model.generation_config.to_dict() == before  # the shipped settings are back
    assert {"tokens_per_forward", "exact_match", "exact_match_sequential", "speedup_vs_sequential"} <= set(figures)
    bounds = [point["entropy_bound"] for point in figures["curve"]]
    assert figures["sequential_entropy_bound"] in bounds and figures["shipped_entropy_bound"] in bounds
    assert figures["speedup_vs_sequential"] > 0
    sequential = next(p for p in figures["curve"] if p["entropy_bound"] == figures["sequential_entropy_bound"])
    assert 0 < sequential["tokens_per_forward"] <= 1.0  # the baseline pays a pass for every token
    plot(figures, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")
    report = table({**figures, "prefill_ms": {"256": 1.0}})
    assert "tokens_per_forward" in report and ">= 6" in report and "curve" not in report


def test_latency_probes_return_times(tiny_backend):
    assert prefill_ms(tiny_backend, 64, repeats=1) > 0
    first_draft = first_draft_ms(tiny_backend, repeats=1)
    assert first_draft["cold"] > 0 and first_draft["repeat"] > 0
    assert tiny_backend.prompt_cache.reused_tokens > 0  # the repeated request's prompt came from the cache


def test_tuning_takes_the_fastest_sampler_within_two_points_of_the_best_exact_match():
    from model.training.evaluate import choose_sampler

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


def test_a_probe_reports_its_own_peak_memory_not_its_parents():
    """``ru_maxrss`` survives fork and exec: a probe started by a bench that has grown would report
    the bench's peak. ``peak_resident_mb`` reads the child's own high-water mark."""
    import subprocess
    import sys

    from model.soak import peak_resident_mb

    ballast = bytearray(600 * 2**20)
    ballast[:: 4096] = b"\x01" * len(ballast[:: 4096])  # touch every page: the parent's peak grows by 600 MiB
    parent_peak = peak_resident_mb()
    child = subprocess.run(
        [sys.executable, "-c", "from model.soak import peak_resident_mb; print(peak_resident_mb())"],
        capture_output=True, text=True, check=True,
    )
    del ballast
    assert float(child.stdout) < parent_peak - 500
