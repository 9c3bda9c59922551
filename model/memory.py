"""How much memory a model's weights take: estimated from its config before loading, measured after.

The estimate builds the model on PyTorch's ``meta`` device (shapes, no storage: a 26B model takes
well under a second and no memory), then prices every parameter at the precision it will have:
the dtype's bytes, or for a quantized weight its packed bits plus its scales. Shared (tied)
weights are counted once, as they are stored once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from sfumato.model.quantization import INT4_GROUP, NF4_BLOCK, quantizes

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
GB = 1e9


@dataclass(frozen=True)
class WeightsEstimate:
    parameters: int
    quantized_parameters: int
    bytes: int
    precision: str  # "bfloat16", or "int8" / "int4" / "nf4" (the rest in the compute dtype)

    def describe(self) -> str:
        return f"{self.bytes / GB:.1f} GB of weights in {self.precision}"


def quantized_bytes(shape: tuple[int, ...], quantize: str) -> int:
    """Bytes of one quantized weight: its packed values and its scales (as each library stores them)."""
    numel = 1
    for size in shape:
        numel *= size
    rows = numel // shape[-1]
    if quantize == "int8":
        return numel + rows * 4  # int8 values, one float32 scale per output row
    if quantize == "int4":
        return numel // 2 + (numel // INT4_GROUP) * 4  # 4-bit values, a bf16 scale and zero per group
    if quantize == "nf4":
        return numel // 2 + (numel // NF4_BLOCK) * 4  # 4-bit values, a float32 absmax per block
    raise ValueError(quantize)


def estimate_weights(build: Callable[[], object], quantize: str, dtype: str) -> WeightsEstimate:
    """Price the weights of the model ``build()`` makes from a config, at ``dtype`` under ``quantize``."""
    import torch

    with torch.device("meta"):
        model = build()
    modules = dict(model.named_modules())
    total = quantized = size = 0
    for name, param in model.named_parameters():
        total += param.numel()
        module = modules.get(name.rpartition(".")[0])
        if quantizes(name, module, quantize) and param.shape[-1] % _group(quantize) == 0:
            quantized += param.numel()
            size += quantized_bytes(tuple(param.shape), quantize)
        else:
            size += param.numel() * DTYPE_BYTES[dtype]
    for _, buffer in model.named_buffers():
        size += buffer.numel() * buffer.element_size()
    return WeightsEstimate(total, quantized, size, dtype if quantize == "none" else quantize)


def _group(quantize: str) -> int:
    """Weights whose rows do not divide into groups stay unquantized (torchao skips them)."""
    return INT4_GROUP if quantize == "int4" else 1


def measured_bytes(model) -> int:
    """Bytes the loaded model's weights and buffers really hold, quantized tensors included."""
    seen: set[int] = set()
    size = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        size += _tensor_bytes(tensor)
    for module in model.modules():  # torch's dynamically quantized linears hold their weights packed, behind methods
        weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
        if hasattr(module, "bytes_held"):  # one that knows (``lm_cpu.Float16Linear``)
            size += module.bytes_held
        elif callable(weight) and callable(bias):
            size += sum(t.numel() * t.element_size() for t in (weight(), bias()) if t is not None)
    return size


def parameter_count(model) -> int:
    """The model's weights, counted once each, those packed in torch's dynamic linears below the
    output layer included (a packed output layer is a copy of the embedding it is tied to)."""
    count = sum(p.numel() for p in model.parameters())
    for module in getattr(model, "model", model).modules():
        weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
        if hasattr(module, "parameters_held"):
            count += module.parameters_held
        elif callable(weight) and callable(bias):
            count += sum(t.numel() for t in (weight(), bias()) if t is not None)
    return count


def _tensor_bytes(tensor) -> int:
    data = getattr(tensor, "data", tensor)
    if hasattr(data, "__tensor_flatten__"):  # a torchao tensor: its inner int and scale tensors
        names, _ = data.__tensor_flatten__()
        return sum(_tensor_bytes(getattr(data, name)) for name in names)
    size = data.numel() * data.element_size()
    state = getattr(tensor, "quant_state", None)  # bitsandbytes 4-bit: the packed values and absmax
    absmax = getattr(state, "absmax", None)
    if absmax is not None:
        size += absmax.numel() * absmax.element_size()
    return size



@lru_cache(maxsize=1)
def _libc():
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def release_freed_heap() -> None:
    """Hand the C heap's freed pages back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    Reading Gemma 3's tokenizer (514,906 merges, 33 MB of JSON) frees ~270 MB that glibc otherwise
    keeps resident for later allocations (measured here, 395 -> 123 MB), and each pass of Gemma's
    frees [positions, 262k] logits of a size the next pass does not reuse (the peak of 20 infills,
    1,335 -> 1,254 MB with a trim after each pass; a trim takes about a millisecond)."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)

