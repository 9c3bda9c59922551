"""--quantize int8 on CPU: tiny random DiffusionGemma and masked-diffusion models load, infill, and
come near float32; a precision or device that cannot be had is one line; the embedded model refuses
the option.

Agreement is the mean character similarity (difflib's ratio) between the int8 and the float32
result of the same request with the same seed. Random weights make many near-ties, so its bound is
loose.
"""

from __future__ import annotations

import difflib
import statistics
from pathlib import Path

import pytest

from sfumato.model.api import InfillRequest
from sfumato.model.loading import load_backend

REPO = Path(__file__).resolve().parent.parent


def _final_texts(backend, requests) -> list[str]:
    final = None
    for final in backend.stream(requests):
        pass
    return [draft.text for draft in final]


def _similarity(a: list[str], b: list[str]) -> float:
    return statistics.mean(difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() for x, y in zip(a, b))


@pytest.fixture(scope="module")
def tiny_int8(tiny_model_dir):
    return load_backend(str(tiny_model_dir), device="cpu", quantize="int8")


def test_tiny_model_loads_in_int8_with_less_memory_and_says_so(tiny_int8, tiny_backend):
    assert tiny_int8.info.precision == "int8 (float32)" and tiny_backend.info.precision == "float32"
    assert tiny_int8.info.device == "cpu"
    assert 0 < tiny_int8.info.memory_bytes < tiny_backend.info.memory_bytes  # its embedding (most of it) stays float32
    assert tiny_int8.info.parameters == tiny_backend.info.parameters


def test_auto_precision_keeps_a_checkpoint_at_full_precision(tiny_model_dir):
    """``--quantize auto`` (the default) means int8 only for the embedded model on the CPU."""
    assert load_backend(str(tiny_model_dir), device="cpu", quantize="auto").info.precision == "float32"


def test_tiny_model_infills_in_int8_like_float32(tiny_int8, tiny_backend):
    requests = [InfillRequest(prefix=f"x = {i}\n", suffix="\nprint(x)\n", max_new_tokens=12, seed=i) for i in range(6)]
    int8, full = _final_texts(tiny_int8, requests), _final_texts(tiny_backend, requests)
    assert all(isinstance(text, str) for text in int8)
    assert _similarity(int8, full) > 0.5  # random weights: many near-ties, so the bound is loose


@pytest.mark.parametrize(
    ("options", "message"),
    [(["--quantize", "nf4", "--device", "cpu"], "--quantize nf4 needs a CUDA GPU"),
     (["--quantize", "int4"], "--quantize int4 needs a CUDA GPU"),
     (["--device", "tpu"], "--device must be auto, cpu, cuda, cuda:N or mps"),
     (["--quantize", "fp8"], "invalid choice: 'fp8'")],
)
def test_an_impossible_precision_or_device_is_one_clean_line(tmp_path, tiny_model_dir, options, message):
    import subprocess
    import sys

    requests = tmp_path / "requests.jsonl"
    requests.write_text('{"id": 1, "prefix": "x = ", "suffix": "\\n"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "sfumato.app.cli", "infill", "--jsonl", str(requests), "--model", str(tiny_model_dir), *options],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode in (1, 2) and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_the_embedded_model_refuses_int4_and_a_bad_device_in_one_line():
    from sfumato.model.api import EngineError
    from sfumato.model.loading import load_embedded

    with pytest.raises(EngineError, match="runs in bfloat16, float16 weights or float32"):
        load_embedded(quantize="int4")
    with pytest.raises(EngineError, match="--device must be"):
        load_embedded(device="tpu")


def test_infill_jsonl_runs_in_int8(tiny_model_dir, monkeypatch, capsys):
    import io
    import json
    import sys

    from sfumato.app.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(('{"id": "a", "prefix": "x = ", "suffix": "\\n", "max_new_tokens": 8}\n').encode())))
    options = ["--model", str(tiny_model_dir), "--quantize", "int8", "--device", "cpu", "--seed", "0", "--steps", "2"]
    assert main(["infill", "--jsonl", *options]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["id"] == "a" and "text" in json.loads(line)


def test_a_masked_diffusion_model_takes_the_same_option(tmp_path, project_tokenizer):
    from test_masked_diffusion import build_bert

    from sfumato.model.masked_diffusion import MaskedDiffusionBackend

    folder = build_bert(tmp_path / "bert", project_tokenizer)
    full = load_backend(str(folder), device="cpu")
    int8 = load_backend(str(folder), device="cpu", quantize="int8")
    assert isinstance(int8, MaskedDiffusionBackend) and int8.info.precision == "int8 (float32)"
    assert 0 < int8.info.memory_bytes < full.info.memory_bytes
    assert sum(type(p.data).__name__ == "Int8Tensor" for p in int8.model.parameters()) >= 8  # 2 layers x 4+ linears
    requests = [InfillRequest(prefix="x = ", suffix="\n", max_new_tokens=4, seed=0)]
    assert len(_final_texts(int8, requests)) == 1


def test_int8_linears_are_counted_in_the_memory_the_model_holds():
    torch = pytest.importorskip("torch")
    from sfumato.model.lm_base import with_int8_linears
    from sfumato.model.memory import measured_bytes

    model = torch.nn.Sequential(torch.nn.Embedding(100, 64), torch.nn.Linear(64, 256), torch.nn.Linear(256, 64))
    float32 = measured_bytes(model)
    quantized = with_int8_linears(model)
    linear_weights = 64 * 256 * 2
    assert measured_bytes(quantized) == pytest.approx(float32 - 3 * linear_weights, rel=0.05)  # 4 bytes a weight -> 1
    x = torch.randint(0, 100, (1, 5))
    assert quantized(x).shape == (1, 5, 64)


def test_float16_weights_packed_for_the_cpu_count_what_fbgemm_holds_and_compute_as_float32_would():
    """fbgemm hands its float16 weights back widened to float32: the memory figure counts what it
    holds (two bytes a weight, its inputs padded to whole blocks), the parameters as many as the
    layer had, and the product is float32's but for the rounding."""
    torch = pytest.importorskip("torch")
    from sfumato.model.lm_cpu import Float16Linear
    from sfumato.model.memory import measured_bytes, parameter_count

    linear = torch.nn.Linear(64, 256)
    packed = torch.nn.Sequential(Float16Linear(linear.weight.detach(), linear.bias.detach()))
    assert measured_bytes(packed) == 512 * 256 * 2 + 256 * 4 and parameter_count(packed) == 64 * 256 + 256
    assert (packed[0].in_features, packed[0].out_features) == (64, 256)
    x = torch.randn(3, 64)
    with torch.inference_mode():
        assert torch.allclose(packed(x), linear(x), atol=1e-3)


@pytest.mark.parametrize("pays", [True, False])
def test_the_embedded_models_layers_run_in_bfloat16_where_that_pays_else_with_float16_weights(tiny_lm, monkeypatch, pays):
    """Below the output layer every linear layer runs in bfloat16 where this CPU multiplies faster
    so (measured at load), else with float16 weights and float32 sums, the output layer too; the
    readings stay close to float32's, and ``--quantize none`` keeps float32."""
    import copy

    torch = pytest.importorskip("torch")
    from sfumato.model import lm_bfloat16
    from sfumato.model.lm_cpu import runs_float16
    from sfumato.model.loading import as_run_on_cpu
    from sfumato.model.memory import measured_bytes

    monkeypatch.setattr(lm_bfloat16, "bfloat16_pays", lambda: pays)
    model = copy.deepcopy(tiny_lm)
    ids = torch.randint(0, 1000, (1, 12))
    with torch.inference_mode():
        float32 = model(ids).logits
        run = as_run_on_cpu(model)
        logits = run(ids).logits
    assert lm_bfloat16.runs_bfloat16(run) == pays and runs_float16(run) != pays
    assert not any(isinstance(module, torch.nn.Linear) for name, module in run.model.named_modules() if "proj" in name)
    assert logits.dtype == torch.float32 and torch.equal(logits.argmax(-1), float32.argmax(-1))
    if pays:
        assert isinstance(run.lm_head, torch.nn.Linear) and run.lm_head.weight.dtype == torch.float32
        assert torch.allclose(logits, float32, atol=0.05) and measured_bytes(run) < measured_bytes(tiny_lm)
    else:
        assert not isinstance(run.lm_head, torch.nn.Linear) and run.get_input_embeddings().weight.dtype == torch.float32
        assert torch.allclose(logits, float32, atol=1e-3)  # float16 weights' rounding only
    unchanged = as_run_on_cpu(copy.deepcopy(tiny_lm), reduced=False)  # --quantize none
    assert not lm_bfloat16.runs_bfloat16(unchanged) and not runs_float16(unchanged)
    assert isinstance(unchanged.lm_head, torch.nn.Linear)


@pytest.mark.parametrize("slow", ["bfloat16", "float32"])
def test_whether_bfloat16_pays_is_measured(monkeypatch, slow):
    """The choice follows the timing: the slower kind of product loses (here made slow on purpose)."""
    import time

    torch = pytest.importorskip("torch")
    from sfumato.model.lm_bfloat16 import measured_faster

    linear = torch.nn.functional.linear

    def timed(hidden, weight, *rest):
        if str(hidden.dtype) == f"torch.{slow}":
            time.sleep(0.005)
        return linear(hidden, weight, *rest)

    monkeypatch.setattr(torch.nn.functional, "linear", timed)
    assert measured_faster(4, 64, 128, repeats=3) == (slow == "float32")


@pytest.mark.parametrize("pays", [True, False])
def test_a_cached_copy_is_read_a_layer_at_a_time_into_the_form_converted_in_memory(tiny_lm, smol_tokenizer, tmp_path,
                                                                                  monkeypatch, pays):
    """Reading the cache's float32 file layer by layer gives the model converting it in memory
    gives (bfloat16 where it pays, else the CPU form), tied output layer included; a damaged file
    is removed, to be made again."""
    import copy

    torch = pytest.importorskip("torch")
    from sfumato.model import lm_bfloat16, lm_cpu
    from sfumato.model.lm_base import _read_cached
    from sfumato.model.loading import as_run_on_cpu

    monkeypatch.setattr(lm_bfloat16, "bfloat16_pays", lambda: pays)
    tiny_lm.save_pretrained(tmp_path / "copy")
    read = lm_bfloat16.read_bfloat16(tmp_path / "copy") if pays else lm_cpu.read_float32_copy(tmp_path / "copy")
    converted = as_run_on_cpu(copy.deepcopy(tiny_lm))
    assert lm_bfloat16.runs_bfloat16(read) == pays and lm_cpu.runs_float16(read) != pays
    if pays:
        assert read.lm_head.weight is read.get_input_embeddings().weight
    ids = torch.randint(0, 1000, (1, 9))
    with torch.inference_mode():
        assert torch.equal(read(ids).logits, converted(ids).logits)
    smol_tokenizer.save_pretrained(tmp_path / "copy")
    model, _ = _read_cached(tmp_path / "copy", reduced=True)
    assert lm_bfloat16.runs_bfloat16(model) == pays and lm_cpu.runs_float16(model) != pays
    model, _ = _read_cached(tmp_path / "copy")  # --quantize none, and training's base
    assert not lm_bfloat16.runs_bfloat16(model) and not lm_cpu.runs_float16(model)
    weights = tmp_path / "copy" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert _read_cached(tmp_path / "copy", reduced=True) is None and not (tmp_path / "copy").exists()


def test_a_float32_copy_packs_each_matrix_once_in_a_thread_beside_the_model_being_built(tiny_lm, tmp_path, monkeypatch):
    """The copy's matrices are packed in a thread of their own while the empty model is built (its
    transformers modules imported), and the model read takes those layers, its tied output layer
    included: none is packed a second time."""
    import threading

    pytest.importorskip("torch")
    from sfumato.model import lm_cpu

    tiny_lm.save_pretrained(tmp_path / "copy")
    threads, build = [], lm_cpu.Float16Linear.__init__

    def counted(self, weight, bias):
        threads.append(threading.current_thread())
        build(self, weight, bias)

    monkeypatch.setattr(lm_cpu.Float16Linear, "__init__", counted)
    read = lm_cpu.read_float32_copy(tmp_path / "copy")
    layers = [module for module in read.modules() if isinstance(module, lm_cpu.Float16Linear)]
    assert len(layers) == len(threads) == len(lm_cpu.body_linears(tiny_lm)) + 1
    assert isinstance(read.lm_head, lm_cpu.Float16Linear)
    assert threading.current_thread() not in threads
