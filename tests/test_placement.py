"""Device parsing, the memory estimate and the answer before loading (no GPU: the machine is faked)."""

from __future__ import annotations

import pytest

from sfumato.model import devices, placement
from sfumato.model.api import EngineError
from sfumato.model.devices import SPREAD, parse_device
from sfumato.model.memory import GB, WeightsEstimate


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, "auto"), ("", "auto"), ("AUTO", "auto"), ("cpu", "cpu"), ("cuda", "cuda:0"), ("cuda:3", "cuda:3"),
     (" mps ", "mps")],
)
def test_device_choices_are_normalised(text, expected):
    assert parse_device(text) == expected


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:x", "cuda:0:1", "tpu", "cpu0"])
def test_unknown_devices_are_refused_with_the_choices(text):
    with pytest.raises(EngineError, match="auto, cpu, cuda, cuda:N or mps"):
        parse_device(text)


def test_cuda_or_mps_asked_for_on_a_cpu_machine_is_refused_before_loading():
    with pytest.raises(EngineError, match="CUDA is not available"):
        placement.plan("cuda:1", "none", {}, "m", lambda dtype: None, needs_bfloat16=True)
    if not devices.mps_available():
        with pytest.raises(EngineError, match="MPS"):
            placement.plan("mps", "none", {}, "m", lambda dtype: None, needs_bfloat16=True)


def test_auto_on_a_cpu_machine_is_the_cpu_in_float32():
    chosen, _ = placement.plan("auto", "none", {}, "m", lambda dtype: None, needs_bfloat16=True)
    assert (chosen.device, chosen.dtype, chosen.device_map, chosen.kind) == ("cpu", "float32", None, "cpu")


def _estimate(gigabytes: float, precision: str = "bfloat16") -> WeightsEstimate:
    return WeightsEstimate(parameters=1, quantized_parameters=0, bytes=int(gigabytes * GB), precision=precision)


@pytest.fixture
def machine(monkeypatch):
    """A fake machine: ``free`` maps a device to its free gigabytes; CUDA when a cuda device is listed."""
    free: dict[str, float] = {}
    monkeypatch.setattr(devices, "free_bytes", lambda device: int(free[device] * GB))
    monkeypatch.setattr(devices, "cuda_count", lambda: sum(name.startswith("cuda") for name in free))
    monkeypatch.setattr(devices, "check_available", lambda device: None)
    monkeypatch.setattr(devices, "dtype_for", lambda device, needs: "float32" if device == "cpu" else "bfloat16")
    return free


def test_weights_that_fit_the_first_gpu_go_there_in_bfloat16(machine):
    machine.update({"cuda:0": 24, "cuda:1": 24, "cpu": 64})
    chosen, weights = placement.plan("auto", "none", {}, "m", lambda dtype: _estimate(20), needs_bfloat16=True)
    assert (chosen.device, chosen.dtype, chosen.device_map) == ("cuda:0", "bfloat16", None)
    assert weights.bytes == 20 * GB


def test_auto_spreads_what_one_gpu_cannot_hold_over_gpus_and_cpu_memory(machine, monkeypatch):
    required = []
    monkeypatch.setattr(placement, "require", lambda library, purpose: required.append(library))
    machine.update({"cuda:0": 24, "cuda:1": 24, "cpu": 64})
    chosen, _ = placement.plan("auto", "none", {}, "m", lambda dtype: _estimate(52), needs_bfloat16=True)
    assert (chosen.device, chosen.device_map, chosen.kind) == (SPREAD, "auto", "cuda")
    assert required == ["accelerate"]


def test_a_named_gpu_too_small_is_refused_in_one_line_naming_the_ways_out(machine):
    machine.update({"cuda:0": 24, "cpu": 64})
    with pytest.raises(EngineError) as refused:
        placement.plan("cuda:0", "none", {}, "big-model", lambda dtype: _estimate(52), needs_bfloat16=True)
    message = str(refused.value)
    assert "\n" not in message and "big-model" in message and "52.0 GB of weights in bfloat16" in message
    assert "24.0 GB free" in message
    assert all(way in message for way in ("--quantize int4", "--device auto", "a server"))


def test_a_model_too_big_for_every_gpu_and_the_cpu_together_is_refused(machine, monkeypatch):
    monkeypatch.setattr(placement, "require", lambda library, purpose: None)
    machine.update({"cuda:0": 24, "cpu": 16})
    with pytest.raises(EngineError, match="--quantize int4.* or a server"):
        placement.plan("auto", "none", {}, "m", lambda dtype: _estimate(52), needs_bfloat16=True)


def test_the_cpu_refusal_suggests_int8_and_the_estimate_uses_the_cpu_dtype(machine):
    machine.update({"cpu": 8})
    asked = []

    def estimate(dtype):
        asked.append(dtype)
        return _estimate(12, dtype)

    with pytest.raises(EngineError, match="12.0 GB of weights in float32.*--quantize int8.*a machine with a GPU"):
        placement.plan("cpu", "none", {}, "m", estimate, needs_bfloat16=True)
    assert asked == ["float32"]


def test_an_unknown_size_is_not_refused(machine):
    machine.update({"cpu": 0.001})
    chosen, weights = placement.plan("cpu", "none", {}, "m", lambda dtype: None, needs_bfloat16=True)
    assert chosen.device == "cpu" and weights is None


def test_quantization_is_checked_against_the_device_chosen_by_auto():
    with pytest.raises(EngineError, match="--quantize nf4 needs a CUDA GPU"):
        placement.plan("auto", "nf4", {}, "m", lambda dtype: None, needs_bfloat16=True)


def test_float16_is_refused_for_gemma_on_a_gpu_without_bfloat16(monkeypatch):
    monkeypatch.setattr(devices, "supports_bfloat16", lambda device: False)
    with pytest.raises(EngineError, match="macOS 14.*--device cpu"):
        devices.dtype_for("mps", needs_bfloat16=True)
    assert devices.dtype_for("mps", needs_bfloat16=False) == "float16"
    assert devices.dtype_for("cpu", needs_bfloat16=True) == "float32"
