"""The embedded model's layers in bfloat16 on a CPU that multiplies it natively.

On a CPU with bfloat16 instructions (AVX512-BF16, AMX) oneDNN multiplies bfloat16 at about twice
float32's rate (measured here, one thread: [32, 576] x [576, 1536] 0.33 ms against 0.65; 300 rows
2.5 against 5.6), with half the bytes a pass reads. Without them torch's fallback is many times
slower than float32, so the choice is measured on the machine, once a process. Only the linear
layers below the output layer change: activations, norms and attention stay float32 between them,
and the output layer, whose order of tokens decides what settles, stays float32 too.

A copy of the weights in the user's cache is read a layer at a time (``lm_cpu.read``), each layer
widened from the file's float32 and packed before the next is read, so a start never holds the
whole float32 model: its memory map would keep all 538 MB resident once the conversion read them.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import torch

from sfumato.model import lm_cpu

MEASURED_SHAPE = (32, 576, 1536)  # rows, width, inner: a pass's product in SmolLM2's MLP


class Bfloat16Linear(torch.nn.Module):
    """A linear layer whose product runs in bfloat16: its weight stored so, its input rounded to it,
    the product (summed in float32 by oneDNN) widened back to float32 for the rest of the model."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.weight = torch.nn.Parameter(weight.detach().bfloat16(), requires_grad=False)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().float().clone(), requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        out = torch.nn.functional.linear(hidden.to(torch.bfloat16), self.weight).float()
        return out if self.bias is None else out + self.bias


@functools.cache
def bfloat16_pays() -> bool:
    """Whether ``MEASURED_SHAPE``'s product runs faster in bfloat16 than in float32 on this CPU
    (best of a few each, on one thread, whose timing a busy machine disturbs least; milliseconds)."""
    return measured_faster(*MEASURED_SHAPE)


def measured_faster(rows: int, width: int, inner: int, repeats: int = 5) -> bool:
    def best(dtype) -> float:
        hidden, weight = torch.full((rows, width), 0.5, dtype=dtype), torch.full((inner, width), 0.25, dtype=dtype)  # (torch's random state untouched)
        times = []
        for _ in range(repeats + 1):  # the first call sets the kernel up
            began = time.perf_counter()
            torch.nn.functional.linear(hidden, weight)
            times.append(time.perf_counter() - began)
        return min(times[1:])

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            return best(torch.bfloat16) < best(torch.float32)
    finally:
        torch.set_num_threads(threads)


def with_bfloat16_linears(model):
    """``model`` (float32) with its linear layers below the output layer as ``Bfloat16Linear``, in place."""
    return lm_cpu.with_body_linears(model, Bfloat16Linear)


def read_bfloat16(folder: Path, file: str = "model.safetensors"):
    """A cached float32 copy (``save_pretrained``'s ``file`` in ``folder``) read a layer at a time
    with its body linear layers as ``Bfloat16Linear``."""
    return lm_cpu.read(folder, file, Bfloat16Linear)


def runs_bfloat16(model) -> bool:
    return any(isinstance(module, Bfloat16Linear) for module in model.modules())
